"""``tcreport ingest`` folders: the canonical tables as Parquet plus the run metadata as JSON.

Parsing a 2 GB export takes seconds; re-rendering from Parquet takes milliseconds, and the folder is
a stable artefact to archive next to old DLProf results (like pyinstrument's saved sessions). The
folder is written under a temporary name and renamed, so an interrupted ingest leaves nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tcreport import schema
from tcreport._fs import current_umask
from tcreport.errors import InputError, OutputError, SchemaError
from tcreport.model import Run, RunMeta

MANIFEST = "tcreport-run.json"
_TABLES = (
    schema.TableKind.KERNELS,
    schema.TableKind.MEMORY,
    schema.TableKind.OPS,
    schema.TableKind.ITERATIONS,
    schema.TableKind.RANGES,
)


def sniff(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def write(run: Run, out_dir: Path) -> Path:
    target = out_dir.resolve()
    parent = target.parent
    if not parent.is_dir():
        raise OutputError("parent directory does not exist", out_dir)
    present = [k for k in _TABLES if getattr(run, k.value) is not None]
    manifest = {
        "schema_version": schema.SCHEMA_VERSION,
        "tables": [k.value for k in present],
        "meta": json.loads(run.meta.to_json()),
    }
    try:
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp"))
    except OSError as exc:
        raise OutputError(f"cannot create: {exc.strerror}", out_dir) from exc
    try:
        for kind in present:
            table: pa.Table = getattr(run, kind.value)
            pq.write_table(schema.compact(table), tmp / f"{kind.value}.parquet", compression="zstd")
        (tmp / MANIFEST).write_text(
            json.dumps(manifest, sort_keys=True, indent=2) + "\n", encoding="utf-8"
        )
        os.chmod(
            tmp, 0o777 & ~current_umask()
        )  # mkdtemp makes 0700; the folder is an artefact to share
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write: {exc.strerror or exc}", out_dir) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def read(path: Path) -> Run:
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        version = manifest["schema_version"]
        names = manifest["tables"]
        meta = RunMeta.from_json(json.dumps(manifest["meta"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{MANIFEST}: unreadable tcreport manifest ({exc})", path) from exc
    if version != schema.SCHEMA_VERSION:
        raise InputError(
            f"written with canonical schema v{version}; this tcreport reads v{schema.SCHEMA_VERSION} "
            "(re-run 'tcreport ingest' on the original trace)",
            path,
        )
    known = {k.value for k in schema.TableKind}
    if not isinstance(names, list) or not all(isinstance(n, str) and n in known for n in names):
        raise InputError(
            f"{MANIFEST}: 'tables' must list some of {', '.join(sorted(known))}, not {names!r:.200}",
            path,
        )
    tables: dict[str, pa.Table] = {}
    for name in dict.fromkeys(names):
        kind = schema.TableKind(name)
        file = path / f"{name}.parquet"
        try:
            table = pq.read_table(file)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"{name}.parquet: {exc}", path) from exc
        try:
            schema.validate(table, kind)
        except SchemaError as exc:
            raise InputError(f"{name}.parquet: {exc}", path) from exc
        tables[name] = table
    return Run(meta=meta, **tables)
