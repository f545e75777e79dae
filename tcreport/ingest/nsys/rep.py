"""``.nsys-rep`` reports: exported to SQLite by the user's own ``nsys``, then read as an export.

The report format is NVIDIA's, undocumented and versioned with the tool: only ``nsys`` reads it.
Users have a ``.nsys-rep`` far more often than an SQLite export, so when ``nsys`` is on PATH
tcreport runs ``nsys export --type sqlite`` into a temporary folder (saying so on stderr, since it
can take a while) and reads the result; otherwise the error gives the command to run.

Detection: no public description of the file's header could be found (the SQLite, JSON, CSV and
protobuf readers all sniff content), so a report is recognised by its suffix, ``.nsys-rep`` or
the older ``.qdrep``, and only after every content sniffer has said no.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tcreport import fmt
from tcreport.errors import InputError

SUFFIXES = (".nsys-rep", ".qdrep")
_log = logging.getLogger(__name__)


def is_report(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(SUFFIXES)


def _how_to(report: Path) -> str:
    """The command a user types (the same export tcreport runs, in its everyday spelling)."""
    sqlite = report.with_name(report.name.rsplit(".", 1)[0] + ".sqlite")
    return f"nsys export --type sqlite --output {sqlite} {report}"


@contextmanager
def exported(report: Path) -> Iterator[Path]:
    """The report as an SQLite export in a temporary folder, removed afterwards."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise InputError(
            "an Nsight Systems report; tcreport reads its SQLite export and nsys is not on PATH "
            f"to make one: run `{_how_to(report)}` and give tcreport the .sqlite file",
            report,
        )
    with tempfile.TemporaryDirectory(prefix="tcreport-nsys-") as tmp:
        sqlite = Path(tmp) / (report.name.rsplit(".", 1)[0] + ".sqlite")
        # The same argv as `tcreport profile --backend nsys` (capture/commands.py) uses.
        argv = [nsys, "export", "--type=sqlite", "--force-overwrite=true", f"--output={sqlite}"]
        argv.append(str(report))
        print(
            f"tcreport: exporting {fmt.visible(f'{report}')} to SQLite with {nsys}", file=sys.stderr
        )
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise InputError(f"cannot run {nsys}: {exc.strerror or exc}", report) from exc
        if proc.returncode != 0 or not sqlite.is_file():
            last = (proc.stderr or proc.stdout).strip().splitlines()
            why = f": {last[-1]}" if last else ""
            raise InputError(f"nsys export failed with exit code {proc.returncode}{why}", report)
        _log.info("%s: exported to %s", report, sqlite)
        yield sqlite
