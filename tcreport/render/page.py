"""What every HTML page tcreport writes shares: the template environment, its assets and the CSP.

Safety is structural and lives here once: Jinja2 autoescape on, control characters shown as
symbols (one ``finalize`` for every template), undefined names are errors, the one
script and the one stylesheet are inlined and pinned by sha256 in a Content-Security-Policy that
forbids every fetch. ``report.js`` and ``report.css`` are read as plain files, never parsed as
templates, so nothing in them is ever interpreted. Templates are found through the package's
``templates`` folder: the wheel stores the files there, and a source or editable checkout reaches the
top-level ``templates/`` through the ``tcreport/templates`` symlink.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path

import jinja2

from tcreport.render import escape


def template_dir() -> Path:
    return Path(str(resources.files("tcreport").joinpath("templates")))


@cache
def asset(name: str) -> str:
    """A static file shipped beside the templates (``report.js``, ``report.css``), verbatim."""
    return (template_dir() / name).read_text(encoding="utf-8")


@cache
def environment(filters: tuple[tuple[str, Callable[..., str]], ...] = ()) -> jinja2.Environment:
    """The Jinja2 environment of every HTML renderer: autoescape on, strict undefined, and control
    characters of every printed string shown visibly (:func:`tcreport.render.escape.html`)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        autoescape=True,
        finalize=escape.html_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(dict(filters))
    return env


def sha256(text: str) -> str:
    """A CSP source expression pinning one inline script or stylesheet."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def csp(style: str, script: str | None = None) -> str:
    """The page's policy: nothing fetched, only the given inline stylesheet (and script) run.

    ``frame-ancestors`` is ignored (and logged as an error) in a ``<meta>`` CSP, so it is left out.
    """
    script_src = f"'{sha256(script)}'" if script is not None else "'none'"
    return (
        f"default-src 'none'; script-src {script_src}; style-src '{sha256(style)}'; "
        "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
        "object-src 'none'; frame-src 'none'; worker-src 'none'; form-action 'none'; "
        "base-uri 'none'"
    )
