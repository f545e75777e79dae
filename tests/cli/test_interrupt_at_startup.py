"""A Ctrl-C while the command line loads (Typer, Click and the command modules, ~60 ms before the
app's own handling is in place) ends the run as one inside a command does: "tcreport:
interrupted", exit 130, no traceback (a hostile tester's find). The interrupt is made
deterministic here: a finder raises KeyboardInterrupt when typer is imported, as SIGINT would."""

from __future__ import annotations

import subprocess
import sys

from trace_paths import ROOT

_INTERRUPT_AT_TYPER = """
import sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["tcreport", "--help"]
from tcreport.cli import command
command()
"""


def test_ctrl_c_while_the_cli_loads_is_one_line_and_exit_130() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_AT_TYPER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130
    assert done.stderr == "tcreport: interrupted\n"
    assert "Traceback" not in done.stderr
