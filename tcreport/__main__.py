"""``python -m tcreport`` = the ``tcreport`` command."""

from tcreport.cli import command

command()
