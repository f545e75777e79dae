"""Kernel names in the forms the profilers write them.

Nsight Compute reports a kernel by its demangled signature, Nsight Systems and CUPTI keep a short
name; the ncu reader and the counter merge both need one from the other, so it is defined here,
outside both the readers and the analysis. The same goes for the two demanglers' spellings
(:func:`loose_key`) and for names a profiler left mangled (:func:`demangle`).
"""

from __future__ import annotations

import ctypes
import functools
import re
from typing import Any

from tcreport import _mangled


def short_name(full: str) -> str:
    """``void at::native::k<4, float>(int, float*)`` -> ``k``, the short form Nsight Systems keeps.

    Template arguments and the parameter list are dropped (they nest, hence the depth count), then
    namespaces; ``(anonymous namespace)`` is a namespace, not a parameter list.
    """
    s = full.strip().removeprefix("void ").replace("(anonymous namespace)", "anonymous_namespace")
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip().split("::")[-1].strip()
    return base or full.strip()


# --------------------------------------------------------------------------- demangling

#: Longer mangled names are left as they are: real kernel names are under 2,000 characters, and
#: the demangler recurses per nesting level (a hostile trace must not exhaust the stack).
MAX_MANGLED = 8192
#: Names whose demangled form could be longer are left as they are too: substitutions make the
#: output exponential in the input (a 322-character name demangles to 7 GB), and the demangler
#: cannot be stopped once called. Real kernel names estimate under 50,000 characters.
MAX_DEMANGLED = 1 << 20
#: Where ``__cxa_demangle`` lives: the process itself when a C++ library is loaded already,
#: libstdc++ (Linux), libc++abi (macOS, some Linux). Tried in order, once per process.
_DEMANGLER_LIBS = (None, "libstdc++.so.6", "libc++abi.dylib", "libc++abi.so.1", "libc++.so.1")


@functools.cache
def _demangler() -> tuple[Any, Any] | None:
    """``__cxa_demangle`` and ``free`` through ctypes, or None where neither library has them."""
    try:
        libc = ctypes.CDLL(None)
        free = libc.free
    except (OSError, AttributeError):
        return None
    free.argtypes, free.restype = [ctypes.c_void_p], None
    for lib in _DEMANGLER_LIBS:
        try:
            fn = getattr(ctypes.CDLL(lib), "__cxa_demangle", None)
        except OSError:
            continue
        if fn is not None:
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            fn.restype = ctypes.c_void_p
            return fn, free
    return None


def demangle(name: str) -> str:
    """An Itanium-mangled name (``_Z...``) as ``__cxa_demangle`` writes it, which is the form the
    PyTorch profiler and Nsight Systems show; any other name, one the demangler rejects, or one
    too long or whose demangled form could be too long comes back unchanged. Call it per distinct
    name, never per row."""
    if not name.startswith("_Z") or len(name) > MAX_MANGLED or not _bounded(name):
        return name
    found = _demangler()
    if found is None:
        return name
    fn, free = found
    status = ctypes.c_int(-1)
    try:
        raw = name.encode("ascii")
    except UnicodeEncodeError:
        return name
    ptr = fn(raw, None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        text = ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)
    return text if status.value == 0 and text else name


def _bounded(name: str) -> bool:
    """Whether ``name``'s demangled form is at most :data:`MAX_DEMANGLED` characters (an estimate
    from the mangled grammar, :mod:`tcreport._mangled`), or, where the estimate cannot parse it,
    whether it has no reference that could reprint an earlier component."""
    size = _mangled.demangled_size(name)
    return size <= MAX_DEMANGLED if size is not None else not _mangled.has_references(name)


# --------------------------------------------------------------------------- one key, two spellings

_CAST = re.compile(r"\((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*\)(?=-?\d)")
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_NCU_LAMBDA = re.compile(r"\[lambda(\([^()]*\)) \(instance (\d+)\)\]")
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~{])")
_VOID = re.compile(r"\bvoid\s+(?=[A-Za-z_(])")
_BOOL = {"true": "1", "false": "0"}
_BOOL_WORD = re.compile(r"\b(true|false)\b")


def _drop_parens(s: str) -> str:
    """Empty every parenthesised list (parameter lists, lambda signatures): ncu writes them with
    template placeholders (``const T1 *``) where the demangler writes the types."""
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "(":
            if depth == 0:
                out.append("(")
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(")")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def loose_key(signature: str) -> str:
    """One key for a kernel however ncu's demangler or ``__cxa_demangle`` spelled it.

    What differs between the two (seen on real pairs in ``sample_traces/h200-torch-cnn-ncu``):
    ``<unnamed>`` / ``(anonymous namespace)``, namespaces ncu drops (``at::`` for
    ``at::native::``), placeholders in parameter lists, ``0``/``1`` for ``false``/``true``, ``1`` for
    ``1ul``, ``[lambda(int) (instance 1)]`` for ``{lambda(int)#1}``, ``char *`` for ``char*``,
    ``0`` for ``(cudnnKernelDataType_t)0``. So: casts and integer suffixes go, booleans become
    digits, lambdas one form, every qualifier and parenthesised list goes, and all whitespace.
    Two kernels that differ only in namespaces or parameter types get one key; the merge leaves
    such a key unknown when their counters disagree.
    """
    s = signature.replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    s = _NCU_LAMBDA.sub(lambda m: "{lambda" + m.group(1) + "#" + m.group(2) + "}", s)
    s = _CAST.sub("", s)
    s = _INT_SUFFIX.sub(r"\1", s)
    s = _BOOL_WORD.sub(lambda m: _BOOL[m.group(1)], s)
    s = _VOID.sub("", s)
    s = _drop_parens(s)
    s = _QUALIFIED.sub("", s.replace(" ::", "::").replace(":: ", "::"))
    return "".join(s.split())


_SOURCE_NAME = re.compile(r"(\d+)")
_SUBSTITUTION = re.compile(r"S([0-9A-Z]*)_")


def _nested(s: str, i: int, subs: list[str]) -> tuple[list[str], int]:
    """The qualified name of an Itanium ``N...`` (or unscoped) name at ``s[i]``: its source names
    and ``S_``/``S<n>_`` substitutions of earlier prefixes, up to its template arguments."""
    parts: list[str] = []
    while i < len(s):
        m = _SOURCE_NAME.match(s, i)
        if m:
            n, start = int(m.group(1)), m.end()
            if n <= 0 or start + n > len(s):
                break
            parts.append(s[start : start + n])
            subs.append("::".join(parts))
            i = start + n
        elif (m := _SUBSTITUTION.match(s, i)) and not parts:
            idx = int(m.group(1), 36) + 1 if m.group(1) else 0
            if idx >= len(subs):
                break
            parts = [subs[idx]]
            i = m.end()
        else:
            break
    return parts, i


def readable(name: str) -> str:
    """A kernel name as people read it: demangled, or, where the demangler rejects an Itanium
    name (libstdc++ does on cuDNN's CUTLASS kernels, as the PyTorch profiler did), its leading
    qualified name and first template argument with the rest elided (``ns::Kernel<ns::conv::
    kernel::ImplicitGemmConvolution<…>>``). Any other name comes back unchanged."""
    out = demangle(name)
    if out != name or not name.startswith("_Z") or len(name) > MAX_MANGLED:
        return out
    s, subs = name[2:], list[str]()
    i = 1 if s.startswith("N") else 0
    head, i = _nested(s, i, subs)
    if not head:
        return name
    text = "::".join(head)
    if s.startswith("I", i):
        j = i + 1 + (s.startswith("N", i + 1))
        arg, _ = _nested(s, j, subs)
        text += "<" + ("::".join(arg) + "<…>" if arg else "…") + ">"
    return text
