"""What every HTML page tcreport writes shares: the template environment, its assets and the CSP.

Safety is structural and lives here once: Jinja2 autoescape on, control characters shown as
symbols (one ``finalize`` for every template), undefined names are errors, the one
script and the one stylesheet are inlined and pinned by sha256 in a Content-Security-Policy that
forbids every fetch. ``report.js`` and ``report.css`` are read as plain files, never parsed as
templates, so nothing in them is ever interpreted. Templates are found through the package's
``templates`` folder: the wheel stores the files there, and a source or editable checkout reaches the
top-level ``templates/`` through the ``tcreport/templates`` symlink.

Compiling the templates costs about 0.1 s, a sixth of a small report's run, and the same every
time: the compiled code is kept in Jinja2's own per-user cache folder (its
``FileSystemBytecodeCache`` default: the temp folder's ``_jinja2-cache-<uid>``, mode 0700, refused
if anyone else owns it), keyed by each template's path and checked against its source, so an edited
template is compiled afresh. The cache is best effort: a folder that cannot be made or written
leaves every page rendered as before, only compiled again, and a cache file that cannot be read or
whose compiled code does not load (damaged: truncated, another payload under a valid header) is
compiled afresh and replaced (:class:`_Loader`), never a traceback.

What the cache cannot guard against, by Jinja2's design: a cache file altered into *valid*
compiled code is run as the template, so it can change every report silently (or run anything as
the user). The folder is the user's own (0700, refused if anyone else owns it), so only someone
who can already write the user's files can do that; a shared or untrusted temp folder is not
defended against beyond that ownership check.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import pickle
import types
from collections.abc import Callable, MutableMapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from tcreport import __version__
from tcreport.render import escape


def template_dir() -> Path:
    return Path(str(resources.files("tcreport").joinpath("templates")))


@cache
def asset(name: str) -> str:
    """A static file shipped beside the templates (``report.js``, ``report.css``), verbatim."""
    return (template_dir() / name).read_text(encoding="utf-8")


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja2's file cache, except that a cache it cannot read or write is no cache (never an
    error: the report does not depend on it)."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError):  # damaged
            bucket.reset()
        if bucket.code is not None and not isinstance(bucket.code, types.CodeType):
            bucket.reset()  # a valid header over another payload: no code at all

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):  # a read-only or full temp folder: compile next time
            super().dump_bytecode(bucket)


class _Loader(jinja2.FileSystemLoader):
    """The templates folder's loader, except that compiled code from the cache that does not load
    (it raises while the template is made from it) is no cache: the template is compiled from its
    source, as without a cache, and the cache file is replaced."""

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        try:
            return super().load(environment, name, globals)
        except jinja2.TemplateError:
            raise  # not found, a syntax error: the template's own, cache or not
        except Exception:  # code from the cache that does not load: whatever it raises
            bcc = environment.bytecode_cache
            if bcc is None:
                raise
        source, filename, uptodate = self.get_source(environment, name)
        code = environment.compile(source, name, filename)
        bucket = jinja2.bccache.Bucket(
            environment, bcc.get_cache_key(name, filename), bcc.get_source_checksum(source)
        )
        bucket.code = code
        bcc.set_bucket(bucket)
        return environment.template_class.from_code(environment, code, globals or {}, uptodate)


def _bytecode_cache(env: jinja2.Environment) -> jinja2.BytecodeCache | None:
    """The compiled-template cache, or None where Jinja2 finds no safe folder for it. Its files are
    named for what the compiled code depends on besides the template's source (which Jinja2
    checks itself): tcreport's and Jinja2's versions and ``env``'s compile options."""
    options = (
        env.autoescape,
        env.trim_blocks,
        env.lstrip_blocks,
        env.keep_trailing_newline,
        env.newline_sequence,
        env.optimized,
        getattr(env.finalize, "__qualname__", None),
        sorted(env.extensions),
    )
    digest = hashlib.sha256(repr(options).encode("utf-8")).hexdigest()[:16]
    pattern = f"__tcreport-{__version__}-jinja2-{jinja2.__version__}-{digest}-%s.cache"
    try:
        return _TemplateCache(pattern=pattern)
    except (OSError, RuntimeError):  # no temp folder, or one another user owns
        return None


@cache
def environment(filters: tuple[tuple[str, Callable[..., str]], ...] = ()) -> jinja2.Environment:
    """The Jinja2 environment of every HTML renderer: autoescape on, strict undefined, and control
    characters of every printed string shown visibly (:func:`tcreport.render.escape.html`)."""
    env = jinja2.Environment(
        loader=_Loader(str(template_dir())),
        autoescape=True,
        finalize=escape.html_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.bytecode_cache = _bytecode_cache(env)
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
