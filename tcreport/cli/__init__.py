"""Command-line entry point. Heavy imports (pyarrow, jinja2) happen inside commands only."""

from __future__ import annotations

from tcreport.cli.app import OWN_PROCESS, app

__all__ = ["app", "main"]  # `app` is public: tests and embedders invoke the Typer app


def main() -> None:
    # The allocators are tuned in the app's callback (tcreport.cli.app.tune_allocators), once the
    # command is known: never for `profile`, whose user script runs in this process.
    app(obj=OWN_PROCESS)
