"""Pure functions over the canonical Arrow tables: Tensor Core verdicts, eligibility, shares.

Nothing here reads files (except the rule packs shipped inside the package) or prints: the same
functions serve the CLI, the HTML report and the batch dataset, and must stay importable without
typer, rich or jinja2.
"""
