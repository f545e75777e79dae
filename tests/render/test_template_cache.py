"""The compiled-template cache (tcreport/render/page.py): a page rendered from it is the page
compiled afresh, and a cache that cannot be read or written is no cache, never an error."""

from __future__ import annotations

import io
import marshal
import pickle
import types
from pathlib import Path

import pytest
from jinja2.bccache import bc_magic
from synthetic import HOSTILE, hostile_run

from tcreport import api
from tcreport.render import html, page


def _render_with(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The hostile run's HTML page, rendered by the renderer's own environment with its cache
    folder moved to ``cache_dir``."""
    env = html.environment()
    cache = page._bytecode_cache(env)
    assert isinstance(cache, page._TemplateCache)
    cache.directory = str(cache_dir)
    moved = env.overlay(bytecode_cache=cache)  # a fresh environment: nothing compiled yet
    monkeypatch.setattr(html, "environment", lambda: moved)
    view = api.analyze(hostile_run(), source_path=f"traces/{HOSTILE}.sqlite")
    return api.render_html(view)


def test_a_page_from_the_cache_is_the_page_compiled_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _render_with(tmp_path, monkeypatch)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written and all(n.startswith("__tcreport-") for n in written)
    assert not [n for n in written if n.endswith(".tmp")]  # written whole, then renamed
    warm = _render_with(tmp_path, monkeypatch)
    assert warm == cold
    assert sorted(p.name for p in tmp_path.iterdir()) == written  # read back, not rewritten


def test_a_damaged_cache_file_is_compiled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _render_with(tmp_path, monkeypatch)
    for p in tmp_path.iterdir():
        p.write_bytes(p.read_bytes()[:40] + b"\x00not marshal data")
    again = _render_with(tmp_path, monkeypatch)
    assert again == cold


@pytest.mark.parametrize(
    "payload",
    [
        5,  # not code at all (hostile4: an AttributeError traceback and no report)
        compile("x = 1", "<other>", "exec"),  # code, but not a template's: no ``root``
        compile("raise RuntimeError('boom')", "<other>", "exec"),  # code that raises when run
    ],
    ids=["not-code", "other-code", "raising-code"],
)
def test_a_valid_header_over_code_that_does_not_load_is_compiled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: int | types.CodeType
) -> None:
    cold = _render_with(tmp_path, monkeypatch)
    for p in tmp_path.iterdir():
        fh = io.BytesIO(p.read_bytes())
        assert fh.read(len(bc_magic)) == bc_magic
        pickle.load(fh)  # the source checksum: kept, so the entry is up to date
        p.write_bytes(p.read_bytes()[: fh.tell()] + marshal.dumps(payload))
    assert _render_with(tmp_path, monkeypatch) == cold
    for p in tmp_path.iterdir():  # replaced by the freshly compiled code
        fh = io.BytesIO(p.read_bytes())
        fh.read(len(bc_magic))
        pickle.load(fh)
        code = marshal.load(fh)
        assert isinstance(code, types.CodeType) and "root" in code.co_names
    assert _render_with(tmp_path, monkeypatch) == cold


def test_a_cache_folder_that_cannot_be_written_renders_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _render_with(tmp_path / "cache", monkeypatch)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert _render_with(blocker / "cache", monkeypatch) == reference  # every write fails
    assert blocker.read_text() == "not a folder"


def test_the_cache_is_named_for_the_options_the_code_was_compiled_under() -> None:
    """Code compiled with other whitespace or escaping options must not be reused."""
    env = html.environment()
    other = env.overlay(trim_blocks=False)
    mine, theirs = page._bytecode_cache(env), page._bytecode_cache(other)
    assert isinstance(mine, page._TemplateCache) and isinstance(theirs, page._TemplateCache)
    assert mine.pattern != theirs.pattern
    assert mine.pattern == page._bytecode_cache(html.environment()).pattern  # type: ignore[union-attr]
