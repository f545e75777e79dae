"""The fuzz family of ``tcreport ingest`` folders: the manifest and the Parquet tables mutated.

An ingest folder is JSON and Parquet anyone can edit, and everything after ``ingest.load`` trusts
it (issue 28: a ``framework`` of ``3`` reached the rules' ``.lower()``, a ``gpu_ns`` of
``2**63 - 1`` wrapped the sums). The sources are ingest folders of real traces, made once per run
in the scratch folder; each case changes one or more of: a manifest value (any field, any JSON
type), an integer column's values (signs, int64 extremes, totals near the sum bound), a column's
type or name, a table file's bytes, a listed table's file.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: Integers a hand-edited or damaged folder may hold: signs, int64's ends, the plausibility and
#: sum bounds of ``tcreport.ingest.common.plausible`` and their neighbours.
INTS = (0, -1, 1, -(2**63), 2**63 - 1, 2**62, 2**55 - 1, 2**55, 2**50, -(2**60), 10**12, 7)
#: JSON values for the manifest, of every type the meta fields do not declare as well as those
#: they do.
META_VALUES: tuple[object, ...] = (
    None,
    True,
    -1,
    0,
    7,
    2**63,
    -1.5,
    1e308,
    "",
    "x",
    "\x1b]0;pwned\x07</script>",
    "2024-05-01T12:00:00Z",
    "kineto-json",
    "launch",
    [],
    [1],
    ["a", "b"],
    {},
    {"device_id": 0, "name": "A100"},
    {"a": 1},
)


def sources(scratch: Path, traces: list[Path]) -> tuple[Path, ...]:
    """Ingest folders of ``traces`` (made once, under ``scratch``)."""
    from tcreport import api

    out = []
    for trace in traces:
        if not trace.exists():
            continue
        folder = scratch / f"ingest-{trace.name.split('.')[0]}"
        if not folder.exists():
            api.ingest(api.load(trace), folder)
        out.append(folder)
    return tuple(out)


def mutate_ingest(rng: random.Random, src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst)
    for _ in range(rng.randint(1, 2)):
        op = rng.choice(["meta", "meta", "ints", "ints", "ints", "ints", "column", "bytes", "file"])
        if op == "meta":
            _mutate_manifest(rng, dst / "tcreport-run.json")
            continue
        tables = sorted(dst.glob("*.parquet"))
        if not tables:
            continue
        table = rng.choice(tables)
        if op in ("ints", "column"):
            try:
                t = pq.read_table(table)
            except (OSError, pa.ArrowException):  # damaged by an earlier step of this case
                continue
            mutated = _mutate_ints(rng, t) if op == "ints" else _mutate_column(rng, t)
            if mutated is not None:
                pq.write_table(mutated, table)
        elif op == "bytes":
            data = bytearray(table.read_bytes())
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            table.write_bytes(bytes(data))
        else:
            table.unlink()
    return dst


def _mutate_manifest(rng: random.Random, path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    node: Any = doc["meta"] if rng.random() < 0.85 else doc
    parent: Any = None
    key: Any = None
    for _ in range(rng.randint(1, 3)):  # walk down into meta's objects and lists
        if isinstance(node, dict) and node:
            parent, key = node, rng.choice(sorted(node))
        elif isinstance(node, list) and node:
            parent, key = node, rng.randrange(len(node))
        else:
            break
        node = parent[key]
        if rng.random() < 0.4:
            break
    value = copy.deepcopy(rng.choice(META_VALUES))
    if isinstance(parent, dict) and rng.random() < 0.1:
        del parent[key]
    elif isinstance(parent, dict | list):
        parent[key] = value
    path.write_text(json.dumps(doc), encoding="utf-8")


def _int_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if pa.types.is_integer(f.type)]


def _mutate_ints(rng: random.Random, t: pa.Table) -> pa.Table | None:
    cols = _int_columns(t)
    if not cols or t.num_rows == 0:
        return None
    name = rng.choice(cols)
    i = t.schema.get_field_index(name)
    values = t.column(name).to_pylist()
    if rng.random() < 0.2:
        values = [rng.choice(INTS)] * len(values)  # every row (sums past int64)
    else:
        for _ in range(rng.randint(1, 5)):
            values[rng.randrange(len(values))] = rng.choice((*INTS, None))
    typ = t.schema.field(i).type
    try:
        col = pa.array(values, pa.int64()).cast(typ, safe=False)
    except (pa.ArrowInvalid, OverflowError):
        return None
    return t.set_column(i, pa.field(name, typ), col)


def _mutate_column(rng: random.Random, t: pa.Table) -> pa.Table | None:
    if t.num_columns == 0:
        return None
    i = rng.randrange(t.num_columns)
    name = t.column_names[i]
    op = rng.randrange(3)
    if op == 0:
        t = t.remove_column(i)
    elif op == 1:
        t = t.rename_columns([n if n != name else f"{n}_fuzz" for n in t.column_names])
    else:  # the same values as another type (text, floats)
        target = rng.choice([pa.string(), pa.float64(), pa.int8()])
        try:
            col = pc.cast(t.column(i), target, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        t = t.set_column(i, pa.field(name, target), col)
    return t
