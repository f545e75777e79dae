"""Reader for Nsight Compute CSV output (``ncu --csv``, ``--page details`` or ``--page raw``).

Why a kernel profiler's CSV is an input at all: every other input judges Tensor Core use from
kernel *names*, and a name is a guess (a Triton or in-house kernel says nothing; an ``hmma`` in a
name can be a fallback path). Nsight Compute counts the instructions the tensor pipe executed, so
``counter_uses_tc`` is a measurement, and :mod:`tcreport.analysis.counters` lists where it
contradicts the name rules.

Layout facts the reader relies on (both pages start with the same launch identity columns,
``"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",
"Grid Size","Device","CC"``):

* ``raw``: one row per profiled launch, one column per metric, and a second row of units under the
  header (empty for the identity columns).
* ``details`` (the default page): one row per launch *and metric*, with ``"Section Name","Metric
  Name","Metric Unit","Metric Value"``; newer versions append rule columns, which are ignored.
  Metrics asked for with ``--metrics`` appear under their raw names; section bodies use labels
  (``Duration``), and ``--print-metric-name label-name`` gives ``Label (raw__name)``.
* Values are printed for people: thousands separators (``1,205.00``), ``n/a`` for a metric the GPU
  cannot collect, units scaled per value (``usecond``, ``msecond``) unless ``--print-units base``.
* ``ncu`` writes its own messages as ``==PROF==``/``==WARNING==``/``==ERROR==`` lines, and without
  ``--log-file`` the profiled program's output shares the stream: everything before the header
  and every ``==...==`` line is skipped.

Privacy: process and host names are never kept. Durations are Nsight Compute's own (kernels
replayed, clocks locked, caches flushed by default), not comparable with a timeline trace's, which
is why merging counters into another run never copies them.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest.common import counters
from tcreport.ingest.common.counters import DURATION, is_tensor_count, is_tensor_metric
from tcreport.ingest.common.counters import TENSOR_METRIC as TENSOR_METRIC  # re-exported
from tcreport.ingest.common.text import read_text
from tcreport.kernel_names import short_name
from tcreport.model import Gpu, Granularity, Run, RunMeta, SourceFormat
from tcreport.schema import TableKind, conform

PROFILER = "Nsight Compute"
_HEAD_BYTES = 64 * 1024
_IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")
_LONG = ("Metric Name", "Metric Unit", "Metric Value")
_NCU_LINE = re.compile(r"^==[A-Z]+==")
_LABELS = {"Duration": DURATION}  # details-page section labels that stand for raw metrics
_LABEL_NAME = re.compile(r"\(([a-z0-9]+__[A-Za-z0-9_.]+)\)\s*$")
_NS_PER = {"nsecond": 1, "ns": 1, "usecond": 10**3, "us": 10**3, "msecond": 10**6, "ms": 10**6}
_NS_PER |= {"second": 10**9, "s": 10**9}
_DIMS = re.compile(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?$")
_PLAIN_NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"  # what Arrow casts as float() would
_NO_VALUE = ("", "")
_GPU_NAME = "device__attribute_display_name"
_SM_COUNT = "device__attribute_multiprocessor_count"


def sniff(path: Path) -> bool:
    """``==PROF==`` lines or the launch identity header in the first 64 KiB."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return False
    text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
    if text.lstrip().startswith("==PROF==") or "\n==PROF== " in text:
        return True  # ncu's own messages, even after the profiled program's output
    return '"ID","Process ID","Process Name"' in text


@dataclass
class _Launch:
    """One profiled kernel launch while its rows are being collected."""

    ident: dict[str, str]
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (unit, value)
    evidence: counters.TensorEvidence | None = None  # found for the whole table (``raw`` page)


def read(path: Path) -> Run:
    header, rows = _table(path)
    launches = (
        _long(header, rows, path) if all(c in header for c in _LONG) else _wide(header, rows, path)
    )
    if not launches:
        raise InputError("no profiled kernels in the CSV (header only)", path)
    return _build(path, launches)


# --------------------------------------------------------------------------- text to rows


def _text(path: Path) -> str:
    return read_text(path, "Nsight Compute CSV output")


def _table(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and data records (with their line numbers) of the CSV part of the file."""
    lines = _text(path).splitlines(keepends=True)
    start = next(
        (i for i, ln in enumerate(lines) if ln.lstrip().startswith('"ID"') and "Kernel Name" in ln),
        None,
    )
    if start is None:
        what = "only ncu messages, no CSV table" if _NCU_LINE.match(lines[0]) else "no CSV header"
        raise InputError(
            f"{what} with 'ID' and 'Kernel Name' columns; is this `ncu --csv` output "
            "(did ncu profile any kernel)?",
            path,
        )
    kept = [(i + 1, ln) for i, ln in enumerate(lines[start:], start) if not _NCU_LINE.match(ln)]
    numbers = [n for n, _ in kept]
    reader = csv.reader(io.StringIO("".join(ln for _, ln in kept), newline=""), strict=True)
    records: list[tuple[int, list[str]]] = []
    try:
        records.extend((numbers[min(reader.line_num, len(numbers)) - 1], row) for row in reader)
    except csv.Error as exc:
        line = numbers[min(reader.line_num, len(numbers)) - 1]
        raise InputError(f"line {line}: {exc} (truncated file?)", path) from exc
    header = [h.strip() for h in records[0][1]]
    missing = [c for c in ("ID", "Kernel Name") if c not in header]
    if missing:  # pragma: no cover - the header line was found by these names
        raise InputError(f"no {missing[0]!r} column", path)
    twice = next((h for h, k in Counter(header).items() if k > 1), None)
    if twice is not None:  # which of the two values would be the metric's?
        raise InputError(f"column {twice[:80]!r} appears twice in the CSV header", path)
    body = []
    for n, r in records[1:]:
        if not any(f.strip() for f in r):
            continue
        if r[0].strip() == "ID" and "Kernel Name" in (f.strip() for f in r):
            if [f.strip() for f in r] != header:  # `cat a.csv b.csv` of different metrics
                raise InputError(
                    f"line {n}: a second CSV header with other columns; two `ncu --csv` "
                    "outputs joined? Read them one at a time",
                    path,
                )
            continue  # `cat a.csv b.csv` of one kind: the same table goes on
        body.append((n, r))
    for n, r in body:
        if len(r) < len(header):
            raise InputError(
                f"line {n}: {len(r)} fields where the header has {len(header)}; "
                "truncated or damaged file?",
                path,
            )
    return header, body


def _long(header: list[str], rows: list[tuple[int, list[str]]], path: Path) -> list[_Launch]:
    """``details`` page: rows of one launch share ID and process; keep first-seen order."""
    col = {h: i for i, h in enumerate(header)}
    name_i, unit_i, value_i = (col[c] for c in _LONG)
    ident_cols = header[: col.get("Section Name", name_i)]
    launches: dict[tuple[str, str], _Launch] = {}
    for n, r in rows:
        key = (r[col["ID"]].strip(), r[col["Process ID"]].strip() if "Process ID" in col else "")
        if not key[0]:
            raise InputError(f"line {n}: empty 'ID'; damaged file?", path)
        launch = launches.get(key)
        if launch is None:
            launch = launches[key] = _Launch({h: r[col[h]].strip() for h in ident_cols})
        metric = _metric_name(r[name_i].strip())
        if metric and metric not in launch.metrics:
            launch.metrics[metric] = (r[unit_i].strip(), r[value_i].strip())
    return list(launches.values())


def _metric_name(label: str) -> str:
    m = _LABEL_NAME.search(label)
    return m.group(1) if m else _LABELS.get(label, label)


def _wide(header: list[str], rows: list[tuple[int, list[str]]], path: Path) -> list[_Launch]:
    """``raw`` page: the first record after the header may be the units row (empty ID); the same
    row again (a second file's, after ``cat``) is skipped, different units are refused."""
    id_i = header.index("ID")
    units = [""] * len(header)
    if rows and not rows[0][1][id_i].strip():
        units = [u.strip() for u in rows[0][1]]
        rows = rows[1:]
    first_metric = next(
        (i for i, h in enumerate(header) if "__" in h), len(header)
    )  # identity columns come before the first ``unit__counter`` name

    def units_row(r: list[str]) -> bool:
        return not r[id_i].strip() and (
            (any(units) and _is_units(r, units)) or _unit_words(r, first_metric)
        )

    again = [units_row(r) for _, r in rows]  # judged once per record
    for (n, r), is_units in zip(rows, again, strict=True):
        if is_units and [u.strip() for u in r] != units:
            raise InputError(
                f"line {n}: a second units row with other units; two `ncu --csv` outputs "
                "joined? Read them one at a time",
                path,
            )
    if any(again):
        rows = [x for x, is_units in zip(rows, again, strict=True) if not is_units]
    counts = {h: i for i, h in enumerate(header) if i >= first_metric and is_tensor_count(h)}
    evidence = counters.evidence_columns(
        ((h, _numbers([r[i] for _, r in rows])) for h, i in counts.items()), len(rows)
    )
    out = []
    for (_, r), e in zip(rows, evidence, strict=True):
        ident = {h: r[i].strip() for i, h in enumerate(header[:first_metric])}
        metrics = {
            h: (units[i] if i < len(units) else "", r[i].strip())
            for i, h in enumerate(header)
            if i >= first_metric
        }
        out.append(_Launch(ident, metrics, e))
    return out


def _unit_words(r: list[str], first_metric: int) -> bool:
    """A record shaped like a units row whatever the first one was: no identity cell, and some
    metric cell that holds a word (a unit), none a number. Such a row after a repeated header is
    a units row, never a launch without ID or name."""
    if any(c.strip() for c in r[:first_metric]):
        return False
    cells = [c.strip() for c in r[first_metric:] if c.strip()]
    return bool(cells) and all(number(c) is None and c.lower() != "n/a" for c in cells)


def _is_units(r: list[str], units: list[str]) -> bool:
    """A record that is a units row: every cell empty where the first units row's is, no kernel
    name, and a unit where the first has one (``usecond`` for ``msecond`` is still one)."""
    return all(bool(f.strip()) == bool(u) for f, u in zip(r, units, strict=False))


# --------------------------------------------------------------------------- values


def number(text: str) -> float | None:
    """``1,205.00`` -> 1205.0; ``n/a``, empty and words -> None."""
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def _int(text: str | None, lo: int = 0, hi: int = 2**63 - 1) -> int | None:
    v = number(text or "")
    if v is None or not v.is_integer() or not lo <= v <= hi:
        return None
    i = int(v)
    return i if i <= hi else None  # a float just below 2**63 can round up to it


def duration_ns(unit: str, value: str) -> int | None:
    v = number(value)
    scale = _NS_PER.get(unit.strip().lower())
    if v is None or scale is None or v < 0 or not math.isfinite(v * scale):
        return None
    ns = round(v * scale)
    return ns if ns < 2**63 else None  # past int64: not a duration, a damaged value


def tensor_evidence(metrics: dict[str, tuple[str, str]]) -> counters.TensorEvidence:
    """What one launch's tensor counters say (``counters.tensor_evidence``: matrix instructions,
    none, or a tensor-pipe count that cannot tell them from HFMA2.MMA moves)."""
    return counters.tensor_evidence(
        (k, number(v)) for k, (_, v) in metrics.items() if is_tensor_metric(k)
    )


def tensor_verdict(metrics: dict[str, tuple[str, str]]) -> bool | None:
    """True for matrix instructions on the Tensor Cores, False for none, None when the collected
    counters cannot tell."""
    return counters.verdicts([tensor_evidence(metrics)])[0]


def _dims(text: str | None) -> tuple[int | None, int | None, int | None]:
    m = _DIMS.match((text or "").strip())
    if not m:
        return None, None, None
    xs = [int(g) for g in m.groups()]
    return tuple(x if x < 2**31 else None for x in xs)  # type: ignore[return-value]


# --------------------------------------------------------------------------- tables


def _columns(launches: list[_Launch]) -> Iterator[tuple[str, list[object]]]:
    ident = [x.ident for x in launches]
    full = [i.get("Kernel Name", "") or "(unnamed)" for i in ident]
    short = {f: short_name(f) for f in set(full)}
    yield "name", [short[f] for f in full]
    yield "long_name", list(full)
    yield "device_id", [_int(i.get("Device"), 0, 2**31 - 1) for i in ident]
    yield "process_id", [_int(i.get("Process ID")) for i in ident]
    yield "stream_id", [_int(i.get("Stream")) for i in ident]
    yield (
        "duration_ns",
        [duration_ns(*x.metrics[DURATION]) if DURATION in x.metrics else None for x in launches],
    )
    yield "calls", [1] * len(launches)
    for key, column in (("grid", "Grid Size"), ("block", "Block Size")):
        dims = [_dims(i.get(column)) for i in ident]
        for k, axis in enumerate("xyz"):
            yield f"{key}_{axis}", [d[k] for d in dims]
    evidence = _evidence(launches)
    yield "counter_uses_tc", list[object](counters.verdicts(evidence))
    yield "_evidence", list[object](evidence)


def _evidence(launches: list[_Launch]) -> list[counters.TensorEvidence]:
    """Every launch's evidence: the ``raw`` page's, found column by column as it was read, or, for
    the ``details`` page, a column per tensor count name (each name classified once)."""
    found = [x.evidence for x in launches]
    if None not in found:
        return found  # type: ignore[return-value]  # None was just ruled out
    names = set().union(*(x.metrics.keys() for x in launches))
    tensor = sorted(n for n in names if is_tensor_count(n))  # ncu's column order is irrelevant
    return counters.evidence_columns(
        ((n, _numbers([x.metrics.get(n, _NO_VALUE)[1] for x in launches])) for n in tensor),
        len(launches),
    )


def _numbers(texts: list[str]) -> np.ndarray:
    """:func:`number` of every text at once: decimals (thousands separators dropped, as there)
    through Arrow's cast, the rest (``n/a``, empty) through :func:`number`, once per distinct
    text."""
    arr = pc.replace_substring(pc.utf8_trim_whitespace(pa.array(texts, pa.string())), ",", "")
    out: np.ndarray | None = None
    try:  # the common case: every value is a plain decimal
        if not pc.any(pc.match_substring_regex(arr, r"^$|[^0-9.eE+-]")).as_py():
            out = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False).copy()
    except pa.ArrowInvalid:
        pass
    if out is None:
        plain = pc.match_substring_regex(arr, _PLAIN_NUMBER)
        cast = pc.cast(pc.if_else(plain, arr, None), pa.float64())
        out = cast.to_numpy(zero_copy_only=False).copy()
        other = np.flatnonzero(~plain.to_numpy(zero_copy_only=False))
        if len(other):
            rest = pc.take(arr, pa.array(other)).to_pylist()
            parsed = {t: number(t) for t in set(rest)}
            out[other] = [np.nan if parsed[t] is None else parsed[t] for t in rest]
    out[~np.isfinite(out)] = np.nan  # ``1e999``: no number, as for :func:`number`
    return out


def _order(launches: list[_Launch]) -> list[_Launch]:
    """Launch order is the ``ID`` ncu numbered results with; rows without one keep file order."""
    ids = [_int(x.ident.get("ID")) for x in launches]
    order = sorted(range(len(launches)), key=lambda i: (ids[i] is None, ids[i] or 0, i))
    return [launches[i] for i in order]


def _build(path: Path, launches: list[_Launch]) -> Run:
    launches = _order(launches)
    cols = dict(_columns(launches))
    durations = cols["duration_ns"]
    notes = []
    no_time = sum(d is None for d in durations)
    if no_time:
        notes.append(
            f"{no_time} of {len(durations)} launches have no {DURATION}; their time counts as 0"
        )
        cols["duration_ns"] = [0 if d is None else d for d in durations]
    evidence = cols.pop("_evidence")
    undecided = evidence.count(counters.TensorEvidence.UNDECIDED)
    if undecided:
        notes.append(counters.undecided_note(undecided, len(evidence)))
    elif all(e is counters.TensorEvidence.UNMEASURED for e in evidence):
        notes.append(
            "no tensor-pipe counters in this CSV, so Tensor Core use is judged from kernel names; "
            "collect --metrics " + ",".join(counters.DECIDING_METRICS)
        )
    notes.append(
        "durations are Nsight Compute's (replayed launches, locked clocks), not a timeline's"
    )
    kernels = conform(
        {k: pa.array(v, pa.bool_() if k == "counter_uses_tc" else None) for k, v in cols.items()},
        TableKind.KERNELS,
    )
    return Run(
        meta=RunMeta(
            format=SourceFormat.NCU_CSV,
            path=str(path),
            profiler=PROFILER,
            gpus=_gpus(launches),
            kernel_granularity=Granularity.LAUNCH,
            op_granularity=Granularity.NONE,
            files=(path.name,),
            notes=tuple(notes),
        ),
        kernels=kernels,
    )


def _gpus(launches: list[_Launch]) -> tuple[Gpu, ...]:
    """Device index and compute capability from the identity columns, name and SM count from
    ``device__attribute_*`` metrics when they were collected (``--page raw`` has them)."""
    seen: dict[int, Gpu] = {}
    for x in launches:
        dev = _int(x.ident.get("Device"), 0, 2**31 - 1)
        if dev is None or dev in seen:
            continue
        cc = x.ident.get("CC", "").strip()
        name = x.metrics.get(_GPU_NAME, ("", ""))[1].strip()
        sms = _int(x.metrics.get(_SM_COUNT, ("", ""))[1], 1, 100_000)
        seen[dev] = Gpu(
            device_id=dev,
            name=name[:80] or None,
            compute_capability=cc if re.fullmatch(r"\d{1,2}\.\d{1,2}", cc) else None,
            sm_count=sms,
        )
    return tuple(seen[d] for d in sorted(seen))
