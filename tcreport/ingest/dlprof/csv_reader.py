"""DLProf CSV reports (``dlprof --reports=... --formats=csv``): a folder of them or one file.

Each file is a title line, a header line and rows; ``dlprof_summary.csv`` is several such blocks
(key/value or small tables) separated by blank lines. Files are recognised by their title, never
their name, because ``--profile_name`` replaces the ``dlprof`` prefix. Parsing is strict (a quote
left open at the end of the file, a row shorter than its header) so that a truncated report is an
:class:`InputError`, not silently fewer kernels; the mapping itself lives in
:mod:`tcreport.ingest.dlprof.reports`, shared with the JSON reader.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tcreport.errors import InputError
from tcreport.ingest.common import started
from tcreport.ingest.common.text import read_text, report_files, sniff_reports
from tcreport.ingest.dlprof.reports import (
    SUMMARY_KV,
    SUMMARY_TABLES,
    Section,
    build_run,
    is_title,
    norm,
)
from tcreport.model import Run, SourceFormat

_HEAD_BYTES = 4096


def _title_of(head: bytes) -> str | None:
    """The first line of a file as a title, or None when it cannot be one."""
    line = head.split(b"\n", 1)[0].rstrip(b"\r").removeprefix(b"\xef\xbb\xbf")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.lstrip().startswith(("{", "[")):
        return None  # a JSON document (a DLProf JSON report, however broken) is never a CSV report
    return text.strip().strip('"').rstrip(",").strip()


def _sniff_file(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return False
    title = _title_of(head)
    return bool(title) and is_title(title or "")


def _report_files(path: Path) -> list[Path]:
    return report_files(path, _sniff_file)


def sniff(path: Path) -> bool:
    """True for a DLProf CSV report, or a directory holding at least one."""
    return sniff_reports(path, _sniff_file)


def _rows(path: Path) -> list[tuple[list[str], int]]:
    """All CSV records with the line each ends on; any decoding or quoting fault is InputError."""
    text = read_text(path, "a DLProf CSV report")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    out: list[tuple[list[str], int]] = []
    try:
        out.extend((row, reader.line_num) for row in reader)
    except csv.Error as exc:
        raise InputError(f"line {reader.line_num}: {exc} (truncated file?)", path) from exc
    return out


def parse_file(path: Path) -> list[Section]:
    """Blocks of a report file, each a title then (except summary key/value blocks) a header."""
    blocks: list[list[tuple[list[str], int]]] = [[]]
    for row, line in _rows(path):
        if any(f.strip() for f in row):
            blocks[-1].append((row, line))
        elif blocks[-1]:
            blocks.append([])
    sections = []
    for block in (b for b in blocks if b):
        (title_row, tline), rest = block[0], block[1:]
        title = title_row[0].strip()
        if not is_title(title) or any(f.strip() for f in title_row[1:]):
            what = ",".join(title_row)[:60]
            raise InputError(
                f"line {tline}: {what!r} is not a DLProf report title; is this a DLProf CSV report?",
                path,
            )
        where = [f"line {ln}" for _, ln in rest]
        if norm(title) in SUMMARY_KV:
            sections.append(
                Section(title, None, [tuple(r) for r, _ in rest], where, f"line {tline}", path)
            )
            continue
        if not rest:
            raise InputError(
                f"line {tline}: no header line after the title {title!r}; truncated file?", path
            )
        (header, hline), body = rest[0], rest[1:]
        if norm(title) not in SUMMARY_TABLES and not header[0].strip():
            raise InputError(
                f"line {hline}: empty first column name in the header of {title!r}", path
            )
        for row, line in body:
            if len(row) != len(header):
                raise InputError(
                    f"line {line}: {len(row)} fields where the {title!r} header has {len(header)}; "
                    "truncated or damaged file?",
                    path,
                )
        sections.append(
            Section(
                title, tuple(header), [tuple(r) for r, _ in body], where[1:], f"line {hline}", path
            )
        )
    return sections


def read(path: Path) -> Run:
    files = _report_files(path) if path.is_dir() else [path]
    if not files:
        raise InputError(
            "no DLProf CSV reports in this directory (files whose first line is a report title)",
            path,
        )
    run = build_run({f: parse_file(f) for f in files}, SourceFormat.DLPROF_CSV, path)
    return started.dated_by_export_beside(run, path if path.is_dir() else path.parent)
