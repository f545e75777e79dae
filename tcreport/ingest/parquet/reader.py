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
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import _fs, schema
from tcreport.errors import InputError, OutputError, SchemaError
from tcreport.ingest.common import plausible
from tcreport.ingest.parquet.manifest import MANIFEST
from tcreport.ingest.parquet.manifest import parse_meta as manifest_meta
from tcreport.model import Run

_TABLES = (
    schema.TableKind.KERNELS,
    schema.TableKind.MEMORY,
    schema.TableKind.OPS,
    schema.TableKind.ITERATIONS,
    schema.TableKind.RANGES,
    schema.TableKind.COLLECTIVES,
)
_OWN_NAMES = (MANIFEST, *(f"{k.value}.parquet" for k in _TABLES))


def sniff(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def check_target(out_dir: Path, *, force: bool) -> list[str]:
    """The entries an existing ``out_dir`` holds, once it is known that it may be replaced.

    A folder tcreport did not write is refused whatever ``force`` says (so the message never
    suggests ``--force`` for it); one it did write needs ``force``.
    """
    if not os.path.lexists(out_dir):
        return []
    entries = _fs.check_replaceable(out_dir, _OWN_NAMES, legacy=MANIFEST)
    if not force:
        raise OutputError("already exists; pass --force to replace it", out_dir)
    return entries


def write(
    run: Run,
    out_dir: Path,
    *,
    force: bool = False,
    on_kept: Callable[[Path], None] | None = None,
) -> Path:
    """Write the folder under a temporary name, then swap it in, under a lock beside it.

    An existing ``out_dir`` is replaced only with ``force`` and only when tcreport made it (see
    ``tcreport._fs.check_replaceable``); it never resolves onto the trace it was read from. Two
    ingests into one folder take turns (the second sees the first's folder). Files a user added
    to the old folder while it was replaced stay in a visible folder passed to ``on_kept``.
    """
    target = Path(os.path.abspath(out_dir))
    parent = target.parent
    if not parent.is_dir():
        raise OutputError("parent directory does not exist", out_dir)
    with _fs.locked(target):
        kept = _write_locked(run, out_dir, target, force)
    if kept is not None and on_kept is not None:
        on_kept(kept)
    return target


def _write_locked(run: Run, out_dir: Path, target: Path, force: bool) -> Path | None:
    import pyarrow.parquet as pq  # here, not at the top: detecting a trace's format must not pay

    old_entries = check_target(out_dir, force=force)
    _fs.refuse_inputs(out_dir, [Path(run.meta.path)] if run.meta.path else [])
    parent = target.parent
    present = [k for k in _TABLES if getattr(run, k.value) is not None]
    manifest = {
        "schema_version": schema.SCHEMA_VERSION,
        "tables": [k.value for k in present],
        "meta": json.loads(run.meta.to_json()),
    }
    try:
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=".tcr-", suffix=".tmp"))
    except OSError as exc:
        raise OutputError(f"cannot create: {exc.strerror}", out_dir) from exc
    try:
        for kind in present:
            table: pa.Table = getattr(run, kind.value)
            pq.write_table(_stored(table), tmp / f"{kind.value}.parquet", compression="zstd")
        (tmp / MANIFEST).write_text(
            json.dumps(manifest, sort_keys=True, indent=2) + "\n", encoding="utf-8"
        )
        _fs.write_marker(tmp, "ingest")
        os.chmod(
            tmp, 0o777 & ~_fs.current_umask()
        )  # mkdtemp makes 0700; the folder is an artefact to share
        return _fs.replace_folder(tmp, target, old_entries)
    except OSError as exc:
        _remove_own(tmp)
        raise OutputError(f"cannot write: {exc.strerror or exc}", out_dir) from exc
    except BaseException:
        _remove_own(tmp)
        raise


def _remove_own(tmp: Path) -> None:
    """Remove the temporary folder this process made (its own files only; never follows links)."""
    if os.path.isdir(tmp) and not os.path.islink(tmp):
        shutil.rmtree(tmp, ignore_errors=True)


def read(path: Path) -> Run:
    import pyarrow.parquet as pq

    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        version = manifest["schema_version"]
        names = manifest["tables"]
        raw_meta = manifest["meta"]
    except KeyError as exc:
        raise InputError(f"{MANIFEST}: unreadable tcreport manifest (no {exc})", path) from exc
    except RecursionError:  # lists nested past the parser's depth: no manifest tcreport writes
        raise InputError(
            f"{MANIFEST}: unreadable tcreport manifest (nested too deep)", path
        ) from None
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"{MANIFEST}: unreadable tcreport manifest ({exc})", path) from exc
    known = ", ".join(sorted(k.value for k in schema.TableKind))
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(
            f"{MANIFEST}: 'tables' is not a list of table names ('tables' must list some of "
            f"{known})",
            path,
        )
    if version != schema.SCHEMA_VERSION:
        version = str(version)[:20] if isinstance(version, str | int) else "?"
        raise InputError(
            f"written with canonical schema v{version}; this tcreport reads v{schema.SCHEMA_VERSION} "
            "(re-run 'tcreport ingest' on the original trace)",
            path,
        )
    meta = manifest_meta(raw_meta, path)
    tables: dict[str, pa.Table] = {}
    for name in dict.fromkeys(names):  # a table listed twice is read once
        try:
            schema.TableKind(name)  # a known table name, or the error below
        except ValueError:
            raise InputError(
                f"{MANIFEST}: unknown table {name[:80]!r} ('tables' must list some of {known})",
                path,
            ) from None
        file = path / f"{name}.parquet"
        if not file.is_file():
            raise InputError(f"{name}.parquet: missing (the manifest lists it)", path)
        try:
            table = pq.read_table(file)
            table.column_names  # noqa: B018  names decode lazily: a damaged one raises here
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"{name}.parquet: {exc}", path) from exc
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}.parquet: a column name is not UTF-8 ({exc})", path) from exc
        tables[name] = table
    tables = _shared_op_ids(tables)
    for name, table in tables.items():
        try:
            schema.validate(table, schema.TableKind(name))
        except SchemaError as exc:  # a damaged or hand-edited folder: the schema exit code, 3
            raise SchemaError(f"{name}.parquet: {exc}", path) from exc
    # rows no reader writes (a hand-edited INT64 sentinel, a negative time) are dropped and noted
    return plausible.checked(Run(meta=meta, **tables), lambda k: f"{k.value}.parquet", path)


#: Stored as plain strings, dictionary-encoded again on reading: an op id is nearly unique per
#: row, and Parquet's reader rebuilds a dictionary of millions of values per row group slowly
#: (11.6 s for the x1000 export's 5.3 M op ids, against 0.3 s plain plus ~1 s to encode).
_PLAIN = "op_id"


def _stored(table: pa.Table) -> pa.Table:
    """The table as written: dictionaries compacted, op ids as plain strings."""
    table = schema.compact(table)
    if _PLAIN in table.column_names:
        i = table.schema.get_field_index(_PLAIN)
        field = table.schema.field(i).with_type(pa.string())  # nullability and metadata kept
        table = table.set_column(i, field, table.column(i).cast(pa.string()))
    return table


def _shared_op_ids(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Plain op ids encoded once, with one dictionary for every table, as the trace readers
    give them (the analysis then joins kernels and memory to ops on the indices alone). Folders
    written before op ids were stored plain keep their own dictionaries."""
    plain = [
        n for n, t in tables.items()
        if _PLAIN in t.column_names and pa.types.is_string(t.schema.field(_PLAIN).type)
    ]  # fmt: skip
    if not plain:
        return tables
    cols = [tables[n].column(_PLAIN) for n in plain]
    encoded = pc.dictionary_encode(
        pa.chunked_array([c for col in cols for c in col.chunks], pa.string())
    )
    out, at = dict(tables), 0
    for n, col in zip(plain, cols, strict=True):
        part = encoded.slice(at, len(col))  # zero-copy, the one dictionary kept
        at += len(col)
        t = tables[n]
        i = t.schema.get_field_index(_PLAIN)
        field = t.schema.field(i).with_type(schema.NAME)
        out[n] = t.set_column(i, field, pa.chunked_array(part.chunks, schema.NAME))
    return out
