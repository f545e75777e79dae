"""Seeded mutations of the real traces, one mutator per reader family, and one verdict per case.

Shared by ``tests/hostile/test_fuzz_readers.py`` (a few hundred cases, fixed seeds) and
``benchmarks/fuzz.py`` (the long run). Every case copies a real file from ``../shared/realtraces``
or ``sample_traces/`` (or the DLProf JSON converted from the real DLProf CSVs), changes it the way
a damaged or hostile file would differ (values, types, NULLs, dropped tables and columns, bytes),
then runs load -> analyze -> summary JSON. The verdict: ``ok``, ``rejected`` (a TcreportError, the
only acceptable failure), ``traceback`` (anything else: a bug), and, for cases that produced a
summary, whether a time or share in it is negative.

Bugs another issue owns (issue 13: the NVTX ``_op_row`` IndexError, NULL kernel names in rule
CV002, negative totals from inverted intervals) are classified as ``known`` so a run can count them
separately.

``INVARIANT_CHECKS`` is the hook for the analysis-model invariant checker (TC time <= kernel time,
parts sum to the span, nothing negative, ...): each check gets the analysed report and its summary
JSON and returns the invariants it found broken; any makes the case an ``invariant`` verdict, which
tests and ``benchmarks/fuzz.py`` count apart from tracebacks.
"""

from __future__ import annotations

import copy
import csv
import gzip
import importlib.util
import io
import json
import random
import shutil
import sqlite3
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fuzzing_ingest
from trace_paths import REALTRACES, ROOT, SAMPLES

if TYPE_CHECKING:
    from tcreport.report import Report

HOSTILE_VALUES: tuple[object, ...] = (
    None,
    -1,
    0,
    1,
    -(2**63),
    2**63 - 1,
    2**53 + 1,
    -1.5,
    1e300,
    "",
    "x",
    "\x1b]0;pwned\x07</script>",
    b"\xff\xfe\x00",
    3.5,
)
JSON_VALUES: tuple[object, ...] = (
    None,
    True,
    False,
    -1,
    0,
    2**64,
    -(2**63),
    1e308,
    -1.5,
    "",
    "x",
    [],
    {},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    "\x1b[2J",
)
CSV_VALUES = ("", "-1", "nan", "inf", "-inf", "1e400", "abc", "1,000", "9" * 400, '"', "0", "-0.5")


@dataclass(frozen=True)
class Family:
    name: str
    sources: tuple[Path, ...]
    mutate: Callable[[random.Random, Path, Path], Path]  # (rng, source, scratch dir) -> input


@dataclass(frozen=True)
class Verdict:
    kind: str  # "ok" | "rejected" | "traceback" | "known" | "invariant"
    signature: str = ""  # the exception and the innermost tcreport frame, for a traceback
    negative: tuple[str, ...] = ()  # summary JSON paths holding a negative time or share
    broken: tuple[str, ...] = ()  # invariants INVARIANT_CHECKS found broken


#: Run on every case that produced a report: ``check(report, summary_json) -> broken invariants``
#: (empty: all hold). The analysis-model issue's invariant checker is added here, one line.
InvariantCheck = Callable[["Report", dict[str, Any]], list[str]]
INVARIANT_CHECKS: list[InvariantCheck] = []


# ---------------------------------------------------------------------------------- mutators


def _flip_bytes(rng: random.Random, data: bytearray, keep_head: int = 0) -> bytearray:
    for _ in range(rng.randint(1, 8)):
        if len(data) <= keep_head:
            break
        i = rng.randrange(keep_head, len(data))
        op = rng.randrange(4)
        if op == 0:
            data[i] = rng.randrange(256)
        elif op == 1:
            del data[i : i + rng.randint(1, 64)]
        elif op == 2:
            data[i:i] = rng.randbytes(rng.randint(1, 16))
        else:
            del data[i:]
    return data


def _sql_value(rng: random.Random) -> object:
    return rng.choice(HOSTILE_VALUES)


def mutate_sqlite(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copyfile(src, dst)
    if rng.random() < 0.1:
        dst.write_bytes(bytes(_flip_bytes(rng, bytearray(dst.read_bytes()), keep_head=100)))
        return dst
    con = sqlite3.connect(dst)
    try:
        tables = sorted(
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if not r[0].startswith("sqlite_")
        )
        for _ in range(rng.randint(1, 3)):
            _mutate_table(rng, con, rng.choice(tables))
        con.commit()
    except sqlite3.Error:
        pass  # a mutation SQLite refuses (a constraint) leaves the copy as it was
    finally:
        con.close()
    return dst


def _mutate_table(rng: random.Random, con: sqlite3.Connection, table: str) -> None:
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    (n,) = con.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
    col = rng.choice(cols) if cols else None
    op = rng.choice(["value", "value", "value", "column", "drop", "dropcol", "rename", "delete"])
    if op == "drop":
        con.execute(f'DROP TABLE "{table}"')
    elif col is None:
        return
    elif op == "dropcol":
        con.execute(f'ALTER TABLE "{table}" DROP COLUMN "{col}"')
    elif op == "rename":
        con.execute(f'ALTER TABLE "{table}" RENAME COLUMN "{col}" TO "{col}_fuzz"')
    elif op == "delete" and n:
        con.execute(
            f'DELETE FROM "{table}" WHERE rowid % ? = ?', (rng.randint(2, 5), rng.randrange(2))
        )
    elif op == "column":
        con.execute(f'UPDATE "{table}" SET "{col}" = ?', (_sql_value(rng),))
    elif n:
        for _ in range(rng.randint(1, 5)):
            row = con.execute(f'SELECT rowid FROM "{table}" LIMIT 1 OFFSET ?', (rng.randrange(n),))
            rid = row.fetchone()
            if rid is not None:
                con.execute(
                    f'UPDATE "{table}" SET "{col}" = ? WHERE rowid = ?', (_sql_value(rng), rid[0])
                )


def _read_json_bytes(src: Path) -> bytes:
    raw = src.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _mutate_tree(rng: random.Random, doc: Any) -> Any:
    """Change one value somewhere in the tree: replace, delete, or duplicate."""
    node, key, depth = doc, None, 0
    parent: Any = None
    while isinstance(node, (dict, list)) and node and depth < 6:
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, rng.choice(keys)
        node = node[key]
        depth += 1
        if rng.random() < 0.25:
            break
    if parent is None:
        return copy.deepcopy(rng.choice(JSON_VALUES))
    op = rng.randrange(4)
    if op == 0 and isinstance(parent, dict):
        del parent[key]
    elif op == 1 and isinstance(parent, list) and isinstance(key, int):  # a list's key is its index
        parent.insert(key, json.loads(json.dumps(node)))
    else:
        parent[key] = copy.deepcopy(rng.choice(JSON_VALUES))
    return doc


def mutate_json(rng: random.Random, src: Path, tmp: Path) -> Path:
    raw = _read_json_bytes(src)
    name = src.name.removesuffix(".gz")
    dst = tmp / name
    if rng.random() < 0.2:
        dst.write_bytes(bytes(_flip_bytes(rng, bytearray(raw))))
        return dst
    try:
        doc = json.loads(raw)
    except ValueError:  # already damaged by an earlier mutation of this case: damage it more
        dst.write_bytes(bytes(_flip_bytes(rng, bytearray(raw))))
        return dst
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    for _ in range(rng.randint(1, 4)):
        if isinstance(events, list) and events and rng.random() < 0.8:
            i = rng.randrange(len(events))
            wrapped = _mutate_tree(rng, {"e": events[i]})
            events[i] = wrapped.get("e", {}) if isinstance(wrapped, dict) else wrapped
        else:
            doc = _mutate_tree(rng, doc)
    dst.write_text(json.dumps(doc), encoding="utf-8")
    return dst


def _mutate_rows(rng: random.Random, rows: list[list[str]]) -> list[list[str]]:
    if not rows:
        return rows
    op = rng.choice(["cell", "cell", "cell", "dropcol", "droprow", "header", "swap"])
    width = max(len(r) for r in rows) or 1
    c = rng.randrange(width)
    if op == "cell":
        for _ in range(rng.randint(1, 5)):
            r = rows[rng.randrange(len(rows))]
            if r:
                r[rng.randrange(len(r))] = rng.choice(CSV_VALUES)
    elif op == "dropcol":
        rows = [r[:c] + r[c + 1 :] for r in rows]
    elif op == "droprow":
        del rows[rng.randrange(len(rows))]
    elif op == "header" and rows[0]:
        rows[0][c % len(rows[0])] = rng.choice(["", "Kernel Name", "x", rows[0][0]])
    elif op == "swap":
        d = rng.randrange(width)
        rows = [_swap(r, c, d) for r in rows]
    return rows


def _swap(r: list[str], c: int, d: int) -> list[str]:
    r = list(r)
    if c < len(r) and d < len(r):
        r[c], r[d] = r[d], r[c]
    return r


def _mutate_csv_file(rng: random.Random, path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    if rng.random() < 0.2:
        path.write_bytes(bytes(_flip_bytes(rng, bytearray(text.encode()))))
        return
    rows = list(csv.reader(io.StringIO(text)))
    for _ in range(rng.randint(1, 3)):
        rows = _mutate_rows(rng, rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def mutate_csv_dir(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    dst.mkdir()
    for f in sorted(src.glob("*.csv")):
        shutil.copyfile(f, dst / f.name)
    files = sorted(dst.glob("*.csv"))
    for _ in range(rng.randint(1, 3)):
        _mutate_csv_file(rng, rng.choice(files))
    return dst


def mutate_csv_file(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copyfile(src, dst)
    _mutate_csv_file(rng, dst)
    return dst


def mutate_json_dir(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst)
    files = sorted(dst.glob("*.json"))
    for _ in range(rng.randint(1, 2)):
        f = rng.choice(files)
        mutated = mutate_json(rng, f, tmp)
        shutil.move(mutated, f)
    return dst


def mutate_bytes(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    dst.write_bytes(bytes(_flip_bytes(rng, bytearray(src.read_bytes()))))
    return dst


_INTS = (0, -1, 1, -(2**63), 2**63 - 1, 2**40, -(2**40))


def mutate_xplane(rng: random.Random, src: Path, tmp: Path) -> Path:
    """Byte damage one time in four; else structural: events' times and metadata ids, stats, names,
    whole lines and planes, through the reader's own protobuf declarations."""
    if rng.random() < 0.25:
        return mutate_bytes(rng, src, tmp)
    from tcreport.ingest.xplane.proto import parse_xspace

    space = parse_xspace(src.read_bytes())
    for _ in range(rng.randint(1, 4)):
        plane = rng.choice(space.planes)
        lines = [ln for ln in plane.lines if ln.events]
        op = rng.randrange(6)
        if op == 0 and lines:
            ev = rng.choice(rng.choice(lines).events)
            setattr(ev, rng.choice(["offset_ps", "duration_ps", "metadata_id"]), rng.choice(_INTS))
        elif op == 1 and lines:
            line = rng.choice(lines)
            setattr(line, rng.choice(["timestamp_ns", "duration_ps", "id"]), rng.choice(_INTS))
        elif op == 2 and plane.lines:
            del plane.lines[rng.randrange(len(plane.lines))]
        elif op == 3 and lines:
            ev = rng.choice(rng.choice(lines).events)
            if ev.stats:
                st = rng.choice(ev.stats)
                field = rng.choice(["metadata_id", "int64_value", "uint64_value", "str_value"])
                value: int | str = rng.choice(_INTS) if field != "str_value" else "\x1b]0;x\x07"
                if isinstance(value, int) and field == "uint64_value":
                    value = abs(value) % (2**64)
                setattr(st, field, value)
        elif op == 4:
            plane.name = rng.choice(["", "/device:GPU:0", "/host:CPU", "x" * 300])
        elif op == 5 and len(space.planes) > 1:
            del space.planes[rng.randrange(len(space.planes))]
    dst = tmp / src.name
    dst.write_bytes(space.SerializeToString())
    return dst


# ---------------------------------------------------------------------------------- families


def dlprof_json_dir(scratch: Path) -> Path | None:
    """The real DLProf CSVs converted to DLProf's JSON report format (there is no real one)."""
    src = REALTRACES / "dlprof" / "v1.8-pytorch-cnn"
    conv = (
        ROOT / "tests" / "fixtures" / "dlprof_v1.8_json_synthetic_from_real_csv" / "csv_to_json.py"
    )
    if not src.exists():
        return None
    out = scratch / "dlprof_json_synthetic_from_real_csv"
    if not out.exists():
        spec = importlib.util.spec_from_file_location("dlprof_csv_to_json_synthetic", conv)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out.mkdir(parents=True)
        mod.convert_dir(src, out)
    return out


def families(scratch: Path) -> dict[str, Family]:
    """Every reader family with the real files it mutates (families without files are left out)."""
    r = REALTRACES
    scratch.mkdir(parents=True, exist_ok=True)  # without ../shared nothing else would make it
    dlprof = r / "dlprof" / "v1.8-pytorch-cnn"
    fams = [
        Family(
            "nsys",
            (
                r / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite",
                SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite",
                dlprof / "nsys_profile.sqlite",
            ),
            mutate_sqlite,
        ),
        Family("kineto", tuple(sorted(r.glob("kineto/*/*.json.gz"))), mutate_json),
        Family("dlprof-csv", (dlprof,), mutate_csv_dir),
        Family("dlprof-sqlite", (dlprof / "dlprof_dldb_7.sqlite",), mutate_sqlite),
        Family(
            "ncu",
            tuple(sorted((ROOT / "tests" / "fixtures" / "ncu_synthetic").glob("*.csv"))),
            mutate_csv_file,
        ),
        Family("xplane", tuple(sorted(r.glob("tf_profiler/*/*.xplane.pb"))), mutate_xplane),
    ]
    json_dir = dlprof_json_dir(scratch)
    if json_dir is not None:
        fams.append(Family("dlprof-json", (json_dir,), mutate_json_dir))
    ingested = fuzzing_ingest.sources(
        scratch,  # launch rows (Kineto, nsys) and aggregated ones (DLProf's reports)
        [
            SAMPLES / "kineto-a100-tf32-alexnet" / _ALEXNET,
            r / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite",
            dlprof,
        ],
    )
    fams.append(Family("ingest", ingested, fuzzing_ingest.mutate_ingest))
    return {f.name: f for f in fams if f.sources and all(s.exists() for s in f.sources)}


_ALEXNET = "benchmark_result_2869224_1695835535_trace.json.gz"


def pick_source(rng: random.Random, fam: Family) -> Path:
    """Sources weighted against their size: the big ones are slow to parse, so seen less often."""
    weights = [1.0 / max(1.0, _size(s) / 200_000) for s in fam.sources]
    return rng.choices(fam.sources, weights)[0]


def _size(p: Path) -> int:
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.iterdir())


# ---------------------------------------------------------------------------------- verdicts

KNOWN_ISSUE_13 = (
    ("IndexError", "nsys/nvtx.py", "_op_row"),
    ("", "rules/cv002", ""),
    ("ArrowInvalid", "kineto/columns.py", "not in range: -9007199254740992"),  # ints past 2**53
)


def _signature(exc: BaseException) -> str:
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "/tcreport/" in f.filename.replace("\\", "/")
    ]
    where = frames[-1] if frames else None
    loc = f"{where.filename.split('/tcreport/', 1)[-1]}:{where.name}" if where else "?"
    return f"{type(exc).__name__} at {loc}: {str(exc)[:120]}"


def _is_known(exc: BaseException, sig: str) -> bool:
    return any(
        (not t or type(exc).__name__ == t) and f in sig and fn in sig for t, f, fn in KNOWN_ISSUE_13
    )


#: Positions on the trace's clock, not amounts: a trace may start before its clock's zero (a
#: mutated export, a Kineto trace with a relative base), so these may be negative.
POSITIONS = frozenset({"start_ns", "end_ns"})


def negatives(doc: Any, path: str = "") -> list[str]:
    """Paths of negative numbers in a summary JSON: times (``*_ns``, not positions) and shares."""
    out: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}"
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                amount = k.endswith(("_ns", "_ms")) and k not in POSITIONS
                if v < 0 and (amount or "share" in k):
                    out.append(p)
            else:
                out.extend(negatives(v, p))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(negatives(v, f"{path}[{i}]"))
    return out


def verdict(path: Path) -> Verdict:
    from tcreport import api
    from tcreport.analysis.invariants import InvariantError
    from tcreport.errors import TcreportError

    try:
        view = api.analyze(api.load(path))
        summary = json.loads(api.render_json(view))
        broken = tuple(b for check in INVARIANT_CHECKS for b in check(view, summary))
    except TcreportError:
        return Verdict("rejected")
    except InvariantError as exc:  # an accepted input whose figures do not add up: a bug
        return Verdict("invariant", "; ".join(str(v) for v in exc.violations)[:300])
    except Exception as exc:  # the harness's job: classify whatever escaped
        sig = _signature(exc)
        return Verdict("known" if _is_known(exc, sig) else "traceback", sig)
    neg = tuple(negatives(summary))
    if broken:
        return Verdict("invariant", "; ".join(broken)[:200], neg, broken)
    return Verdict("ok", negative=neg)
