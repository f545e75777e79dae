"""Command-line entry point. Heavy imports (pyarrow, jinja2) happen inside commands only."""

from __future__ import annotations

from tcreport.cli.app import app


def main() -> None:
    app()
