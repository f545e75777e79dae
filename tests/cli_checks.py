"""The one-line refusal every safety test expects: an exit code, a single ``tcreport: error:``
line on stderr naming the reason, no traceback."""

from __future__ import annotations

from typer.testing import CliRunner

from tcreport.cli import app

runner = CliRunner()


def fails_cleanly(args: list[str], code: int, needle: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: "), result.stderr
    assert needle in lines[0], lines[0]
    return lines[0]
