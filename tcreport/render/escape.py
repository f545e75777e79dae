"""Escaping for every text output, one function per output kind; every renderer calls these.

Trace strings (op, kernel and GPU names, notes, file names) come from files other people made. In a
PR comment they must stay inert text in one table cell; on a terminal they must never reach it as
control sequences. In HTML, Jinja2's autoescape makes them inert; :func:`html` makes their control
characters visible too (an ESC, BEL or CR kept raw is invisible on the page, yet a reader who
copies the name into a terminal gets the sequence back), and :func:`html_finalize` applies it to
every value a template prints.
"""

from __future__ import annotations

import re

from tcreport import fmt

#: A zero-width space, as an entity so the Markdown source shows it: GitHub links ``@name``,
#: ``#123`` and ``GH-123`` in rendered text (after Markdown escapes are gone), and cmark-gfm
#: autolinks ``https://`` and ``www.``; a zero-width space right after ``@``, ``#``, ``GH``, the
#: scheme's ``:`` and ``www`` breaks each pattern and reads the same (as Renovate's PR bodies do).
_ZWSP = "&#8203;"

_MD_PUNCT = frozenset("\\|`*_[]~")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
#: Line endings in CommonMark are LF, CR and CRLF; every other control character (and the Unicode
#: line/paragraph separators) is invisible or odd in a comment: all become one space.
_CONTROL = "\x00-\x1f\x7f-\x9f\u2028\u2029"
#: Invisible characters that reorder or hide what a reviewer reads ("Trojan Source"): the bidi
#: embeddings, overrides and isolates, the directional marks, and the zero-width characters.
_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_MD = re.compile(rf"[\\|`*_\[\]~<>&@#]|://|(?i:www)\.|(?i:\bgh)-(?=\d)|[{_CONTROL}]|[{_INVISIBLE}]")


_INVISIBLE_ONE = re.compile(f"[{_INVISIBLE}]")


def _md_one(m: re.Match[str]) -> str:
    s = m.group(0)
    if s in _MD_PUNCT:
        return "\\" + s
    if s in _MD_ENTITIES:
        return _MD_ENTITIES[s]
    if s in ("@", "#"):
        return s + _ZWSP
    if s == "://":
        return ":" + _ZWSP + "//"
    if len(s) == 4:  # www.
        return s[:3] + _ZWSP + "."
    if len(s) == 3:  # GH-123, GitHub's other issue reference
        return s[:2] + _ZWSP + "-"
    if _INVISIBLE_ONE.fullmatch(s):
        return f"\\\\u{ord(s):04x}"  # shown as \u202e: an escaped backslash, then the code
    return " "


def markdown(text: str) -> str:
    """``text`` as inert GitHub-flavoured Markdown inline text, safe inside a table cell.

    One line (CR, LF and other controls become spaces); bidi overrides and zero-width characters
    are shown as ``\\u202e``; ``|`` cannot split the cell; no code span,
    emphasis, link, image or HTML can start; no ``@mention``, ``#123`` reference or autolinked URL.
    """
    return _MD.sub(_md_one, text)


def terminal(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN`` (``\\uNNNN``), never sent raw.

    An op named ``\\x1b]0;pwned\\x07`` would retitle the window, ``\\x1b[2J`` clear the screen and
    ``\\r`` overwrite the line; shown escaped, the name is still recognisable.
    """
    return fmt.visible(text)


#: C0 controls but tab and line feed (white space HTML shows as such), DEL, the C1 controls, and
#: the bidirectional marks, embeddings, overrides and isolates with the line and paragraph
#: separators: a U+202E in an op name would mirror the rest of its cell ("sm 4.11 _lamron::neta").
_HTML_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)


def _picture(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # Unicode's Control Pictures: ␛ ␇ ␍
    return "\u2421" if code == 0x7F else f"\\u{code:04x}"  # ␡; C1 has no picture: \u009b


def html(text: str) -> str:
    """``text`` with each C0 control character (tab and line feed excepted) and DEL shown as its
    Unicode control picture (ESC as ␛, BEL as ␇, CR as ␍), each C1 control as ``\\u009b`` and
    each bidirectional control or line separator as ``\\u202e``.
    Both forms stay valid inside a JSON string (an attribute holding JSON), an attribute or a URL
    fragment; HTML escaping is left to autoescape."""
    return _HTML_CONTROL.sub(_picture, text)


def html_finalize(value: object) -> object:
    """The template environment's ``finalize``: every plain string a template prints goes
    through :func:`html` before autoescape (text and attributes alike). Markup (the inlined
    script, stylesheet and script-safe JSON, marked ``| safe``) is tcreport's own and left as is."""
    if isinstance(value, str) and not hasattr(value, "__html__"):  # Markup has __html__
        return html(value)
    return value
