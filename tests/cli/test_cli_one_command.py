"""The ``tcreport`` process builds only the command it runs (tcreport.cli.app.app_for).

Typer turns every registered function into a Click command on each run; the command line builds
the one it was asked for. These check that nothing a user sees depends on which was built: each
command's help, a group option before the command, and everything that needs the whole app
(group help, a misspelt command's suggestion, completion) still gets it.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tcreport.cli.app import _name, app, app_for

runner = CliRunner()
COMMANDS = [str(_name(c)) for c in app.registered_commands]


def test_every_registered_command_is_found_by_its_name() -> None:
    assert len(COMMANDS) >= 9  # report, summary, ingest, profile, diff, check, batch, query, export
    for name in COMMANDS:
        one = app_for([name, "--help"])
        assert one is not app
        assert [c.callback for c in one.registered_commands] == [
            c.callback for c in app.registered_commands if _name(c) == name
        ]
    assert len(app.registered_commands) == len(COMMANDS)  # the shared app is left whole


@pytest.mark.parametrize("name", COMMANDS)
def test_a_commands_help_is_the_same_from_the_one_command_app(name: str) -> None:
    whole = runner.invoke(app, [name, "--help"], prog_name="tcreport")
    one = runner.invoke(app_for([name, "--help"]), [name, "--help"], prog_name="tcreport")
    assert whole.exit_code == one.exit_code == 0
    assert one.output == whole.output
    assert f"Usage: tcreport {name}" in one.output


@pytest.mark.parametrize("args", [["-v", "summary"], ["-vv", "summary"], ["--verbose", "summary"]])
def test_the_verbose_option_before_a_command_still_finds_it(args: list[str]) -> None:
    assert app_for(args) is not app


@pytest.mark.parametrize(
    "args",
    [
        [],  # plain `tcreport`: the group's help
        ["--help"],
        ["-h"],
        ["--version"],
        ["--show-completion"],
        ["sumary", "x.sqlite"],  # misspelt: Click suggests from every command's name
        ["-x", "summary"],  # an unknown group option: Click's error, with the whole app
    ],
)
def test_anything_but_a_command_gets_the_whole_app(args: list[str]) -> None:
    assert app_for(args) is app


def test_a_misspelt_command_is_still_suggested() -> None:
    done = runner.invoke(app_for(["sumary"]), ["sumary", "x.sqlite"], prog_name="tcreport")
    assert done.exit_code == 2
    assert "Did you mean 'summary'?" in done.output


def test_shell_completion_gets_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_TCREPORT_COMPLETE", "bash_complete")
    assert app_for(["summary"]) is app
