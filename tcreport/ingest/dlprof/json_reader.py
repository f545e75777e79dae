"""DLProf JSON reports (``dlprof --formats=json``): a folder of them or one file.

Assumed layout (no real DLProf JSON file was available to check it): each file is one object
keyed by report title. A table report's value is a list of header -> value records; a summary
key/value block (``System Config``, ``Summary Report``, ``Iterations``) is an object of key ->
value, a value possibly a list (several GPU names). Values may be strings, numbers, booleans or
null. Records are flattened into the same :class:`Section` s the CSV reader builds, so both
formats share one mapping (:mod:`tcreport.ingest.dlprof.reports`) and give identical tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tcreport.errors import InputError
from tcreport.ingest.common import started
from tcreport.ingest.common.text import read_text, report_files, sniff_reports
from tcreport.ingest.dlprof.reports import Section, build_run, is_title
from tcreport.model import Run, SourceFormat

_HEAD_BYTES = 4096
_FIRST_KEY = re.compile(rb'^\s*\{\s*"((?:[^"\\]|\\.){1,80})"\s*:')


def _sniff_file(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES).removeprefix(b"\xef\xbb\xbf")
    except OSError:
        return False
    m = _FIRST_KEY.match(head)
    if not m:
        return False
    try:
        return is_title(m.group(1).decode("utf-8"))
    except UnicodeDecodeError:
        return False


def _report_files(path: Path) -> list[Path]:
    return report_files(path, _sniff_file)


def sniff(path: Path) -> bool:
    """True for a DLProf JSON report, or a directory holding at least one."""
    return sniff_reports(path, _sniff_file)


def _text(value: object, where: str, path: Path) -> str:
    """A JSON scalar as the CSV would have written it (``yes``/``no`` for booleans)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(x, str | int | float) for x in value):
        return ", ".join(str(x) for x in value)
    raise InputError(f"{where}: a nested {type(value).__name__} where a value was expected", path)


def _load(path: Path) -> dict[str, object]:
    text = read_text(path, "a DLProf JSON report")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"line {exc.lineno}: invalid JSON ({exc.msg}); truncated file?", path
        ) from exc
    except RecursionError as exc:
        raise InputError("JSON nested too deeply; is this a DLProf JSON report?", path) from exc
    except ValueError as exc:  # Python's limit on integer digits
        raise InputError(f"invalid JSON: {str(exc).splitlines()[0]}", path) from exc
    if not isinstance(obj, dict):
        raise InputError(
            "not a JSON object keyed by report title; is this a DLProf JSON report?", path
        )
    return obj


def parse_file(path: Path) -> list[Section]:
    """One :class:`Section` per report title in the file; keys that are not titles are ignored."""
    sections: list[Section] = []
    for title, value in _load(path).items():
        if not is_title(title):
            continue
        at = f"{title!r}"
        if isinstance(value, dict):  # a summary key/value block
            rows = [
                (k, *(_text(x, f"{at} {k!r}", path) for x in (v if isinstance(v, list) else [v])))
                for k, v in value.items()
            ]
            sections.append(
                Section(title, None, rows, [f"{at} key {k!r}" for k, *_ in rows], at, path)
            )
        elif isinstance(value, list):
            header: dict[str, None] = {}
            for n, rec in enumerate(value, start=1):
                if not isinstance(rec, dict):
                    raise InputError(f"{at} record {n}: not an object of header -> value", path)
                header.update(dict.fromkeys(rec))
            rows = [
                tuple(_text(rec.get(h), f"{at} record {n}", path) for h in header)
                for n, rec in enumerate(value, start=1)
            ]
            where = [f"{at} record {n}" for n in range(1, len(rows) + 1)]
            sections.append(Section(title, tuple(header), rows, where, at, path))
        else:
            raise InputError(f"{at}: a {type(value).__name__}, expected a list of records", path)
    if not sections:
        raise InputError(
            "no DLProf report title among the top-level keys; is this a DLProf JSON report?", path
        )
    return sections


def read(path: Path) -> Run:
    files = _report_files(path) if path.is_dir() else [path]
    if not files:
        raise InputError("no DLProf JSON reports in this directory", path)
    run = build_run({f: parse_file(f) for f in files}, SourceFormat.DLPROF_JSON, path)
    return started.dated_by_export_beside(run, path if path.is_dir() else path.parent)
