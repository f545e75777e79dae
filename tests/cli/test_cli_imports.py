"""What a command imports: a small report must not pay for what it does not use.

``check`` in CI and ``batch`` over many small traces start a process per trace, so imports are
most of their cost. pandas is the notebook's (``tcreport.open``), not the command line's: pyarrow
would import it on its first conversion, so the command refuses it (``tcreport/_no_pandas.py``);
ADBC's DB-API module would import ``pyarrow.dataset`` and pandas, so the nsys reader uses the
driver manager's low-level API. ``-X importtime`` lists every module a run imported, which is what
these tests read (no timing is asserted: speed lives in benchmarks/).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trace_paths import ROOT, SAMPLES

NSYS_SAMPLE = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


def _imported(*args: str) -> tuple[set[str], str]:
    """The modules ``python -X importtime -m tcreport ARGS`` imported, and what it printed.

    A refused import is listed too (one line for the name alone), so a package counts as imported
    only through its submodules, which a real import of pandas always brings in."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tcreport", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, done.stdout


def test_a_summary_of_a_small_nsys_export_imports_no_pandas() -> None:
    names, out = _imported("summary", str(NSYS_SAMPLE))
    assert "Tensor Core share of kernel time" in out  # the run did the work, not an early exit
    assert sorted(n for n in names if n.startswith("pandas.")) == []
    assert "adbc_driver_manager.dbapi" not in names
    assert "adbc_driver_manager" in names  # ADBC read it, not the sqlite3 fallback


def test_a_json_summary_imports_no_template_engine_parquet_or_query_engine() -> None:
    """What CI reads pays only for reading and analysing: Jinja2 is the HTML pages',
    ``pyarrow.parquet`` the ingest folders', DuckDB ``query``'s and msgspec the PyTorch reader's."""
    names, out = _imported("summary", str(NSYS_SAMPLE), "--json")
    assert '"schema": "tcreport.job/1"' in out  # the run did the work
    heavy = ("jinja2", "pyarrow.parquet", "duckdb", "msgspec", "tensorflow")
    assert sorted(n for n in names if n.split(".")[0] in heavy or n in heavy) == []
    assert sorted(n for n in names if n.startswith("pandas.")) == []  # "pandas": refused
    assert "adbc_driver_manager.dbapi" not in names


def test_a_summary_imports_neither_pydantic_nor_pyarrow_dataset() -> None:
    """Typer would convert every option through pydantic (~70 ms of a small run's CPU): plain
    values are converted without it (tcreport/cli/_plain_params.py). pyarrow's group-by would
    import ``pyarrow.dataset`` and its Parquet and cloud filesystem modules (~16 ms):
    tcreport/_group_by.py builds the same plan without them."""
    names, out = _imported(
        "summary", str(NSYS_SAMPLE), "--json", "--iter-start", "0", "-o", "-", "--allow-empty"
    )
    assert '"schema": "tcreport.job/1"' in out
    assert sorted(n for n in names if n.split(".")[0] in ("pydantic", "pydantic_core")) == []
    unused = ("pyarrow.dataset", "pyarrow._dataset", "pyarrow._parquet", "pyarrow._s3fs")
    assert sorted(n for n in names if n.startswith(unused)) == []


def test_a_command_that_runs_a_users_script_keeps_pandas_importable() -> None:
    """``profile`` runs the script in this interpreter (the TF backend): the script may use
    pandas, so the refusal is not installed there (its ``--help`` goes through the same group
    callback as a run)."""
    code = (
        "import sys\n"
        "from tcreport.cli import main\n"
        "sys.argv = ['tcreport', 'profile', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import pandas\n"
        "print('pandas', pandas.__name__, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "pandas pandas" in done.stderr


def test_a_summary_written_to_a_file_imports_no_rich(tmp_path: Path) -> None:
    """Its one line on stderr ("wrote X") is written as it is: rich's console (~20 ms) is for the
    spinner and progress bars, which a run without a terminal never shows."""
    out = tmp_path / "summary.json"
    names, _ = _imported("summary", str(NSYS_SAMPLE), "--json", "-o", str(out))
    assert out.read_text().lstrip().startswith("{")
    assert sorted(n for n in names if n.split(".")[0] == "rich") == []
