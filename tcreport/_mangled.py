"""How long an Itanium-mangled name's demangled form can be, found without demangling it.

Why: a substitution (``S_``, ``S0_``) or template parameter (``T_``) reprints a whole earlier
component, and a component can hold two references to the previous one, so the demangled text
doubles with every few mangled characters: a 212-character name demangles to 6.8 MB, 322
characters to 7 GB (55 s, and as much memory, inside ``__cxa_demangle``, which neither a size
limit nor a buffer of ours can stop: it reallocates). A kernel name in a trace is data, so
:func:`tcreport.kernel_names.demangle` asks here first and keeps such a name mangled.

The estimate parses the mangled grammar the way ``cp-demangle.c`` does only as far as it shapes
the substitution table (which components are candidates, in which order) and sizes every
component as the characters it prints, generously: each reference costs the size of what it
names, never the text. Linear in the mangled length. A construct it does not parse (expressions,
``decltype``, special names) gives None, and the caller then demangles only a name with no
reference at all, whose output is linear in its length.
"""

from __future__ import annotations

import re

#: Printed characters per component beyond its names (``::``, ``<``, ``, ``, ``*``, `` const``,
#: ``(anonymous namespace)``, ``unsigned long``, ``{lambda(...)#1}``): a generous upper bound.
_PUNCT = 24
#: ``std::string`` and its kin print the full template (``std::basic_string<char, ...>``).
_STD = 80
_BUILTIN = set("vwbcahstijlmxynofdegz")
_D_BUILTIN = set("dfehisuacn")
_NUMBER = re.compile(r"n?\d+")
_SEQ = re.compile(r"[0-9A-Z]*_")


class _Unknown(Exception):
    """A construct the estimate does not parse."""


class _Size:
    """One pass over a mangled name (without ``_Z``), keeping the substitution table's sizes."""

    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0
        self.subs: list[int] = []
        self.widest_arg = -1  # what a template parameter can stand for: the widest argument seen

    def peek(self, k: int = 0) -> str:
        return self.s[self.i + k] if self.i + k < len(self.s) else ""

    def eat(self, c: str) -> None:
        if self.peek() != c:
            raise _Unknown
        self.i += 1

    def encoding(self) -> int:
        size = self.name()
        while self.peek() not in ("", "E", "."):  # the parameter list of a function
            size += self.type() + _PUNCT
        if self.peek() == ".":  # a clone suffix: `` [clone .isra.0]``
            size += 2 * (len(self.s) - self.i) + _PUNCT
            self.i = len(self.s)
        return size

    def name(self) -> int:
        c = self.peek()
        if c == "N":
            return self.nested()
        if c == "Z":
            self.i += 1
            size = self.encoding()
            self.eat("E")
            if self.peek() == "s":
                self.i += 1
            else:
                size += self.name()
            return size + self.discriminator() + _PUNCT
        if c == "S" and self.peek(1) != "t":
            size = self.substitution()
            return size + self.template_args() if self.peek() == "I" else size
        if c == "S":
            self.i += 2
        size = self.unqualified()
        if self.peek() == "I":
            self.subs.append(size)
            size += self.template_args()
        return size

    def discriminator(self) -> int:
        start = self.i
        if self.s.startswith("__", self.i):
            end = self.s.find("_", self.i + 2)
            self.i = len(self.s) if end < 0 else end + 1
        elif self.peek() == "_":
            self.i += 1
            while self.peek().isdigit():
                self.i += 1
        return 2 * (self.i - start)

    def nested(self) -> int:
        self.i += 1
        while self.peek() in ("r", "V", "K", "R", "O"):
            self.i += 1
        size = 0
        while True:
            c = self.peek()
            if c == "E":
                self.i += 1
                return size + _PUNCT
            if c == "I":
                if not size:
                    raise _Unknown
                size += self.template_args()
            elif c == "S":
                size += self.substitution() + 2
            elif c == "T":
                size += self.template_param() + 2
            elif c == "M":
                self.i += 1
                continue
            else:
                size += self.unqualified() + 2
            if c != "S" and self.peek() != "E":
                self.subs.append(size)

    def unqualified(self) -> int:
        c = self.peek()
        if c.isdigit():
            size = self.source_name()
        elif c == "L":
            self.i += 1
            size = self.source_name() + self.discriminator()
        elif c == "C" or (c == "D" and self.peek(1) in "012345"):
            self.i += 2 + (self.peek(1) == "I")
            size = _STD + (self.type() if self.s[self.i - 2] == "I" else 0)
        elif c == "U" and self.peek(1) == "t":
            self.i += 2
            self.seq()
            size = _PUNCT
        elif c == "U" and self.peek(1) == "l":
            self.i += 2
            size = _PUNCT
            while self.peek() != "E":
                size += self.type() + 2
            self.i += 1
            self.seq()
        elif c.islower() and self.peek(1).islower():
            self.i += 2
            size = _PUNCT + (self.type() if self.s[self.i - 2 : self.i] == "cv" else 0)
        else:
            raise _Unknown
        while self.peek() == "B":  # ABI tags: ``[abi:cxx11]``
            self.i += 1
            size += self.source_name() + _PUNCT
        return size

    def source_name(self) -> int:
        m = _NUMBER.match(self.s, self.i)
        if m is None or m.group().startswith("n"):
            raise _Unknown
        n = int(m.group())
        if n <= 0 or m.end() + n > len(self.s):
            raise _Unknown
        self.i = m.end() + n
        return n + _PUNCT

    def seq(self) -> str:
        m = _SEQ.match(self.s, self.i)
        if m is None:
            raise _Unknown
        self.i = m.end()
        return m.group()[:-1]

    def substitution(self) -> int:
        self.i += 1
        if self.peek().islower():  # ``St``, ``Sa``, ``Ss``...: the standard abbreviations
            self.i += 1
            return _STD
        seq = self.seq()
        idx = int(seq, 36) + 1 if seq else 0
        if idx >= len(self.subs):
            raise _Unknown
        return self.subs[idx]

    def template_param(self) -> int:
        self.i += 1
        self.seq()
        if self.widest_arg < 0:
            raise _Unknown
        return self.widest_arg

    def template_args(self) -> int:
        self.eat("I")
        size = _PUNCT
        while self.peek() != "E":
            arg = self.template_arg()
            self.widest_arg = max(self.widest_arg, arg)
            size += arg + 2
        self.i += 1
        return size

    def template_arg(self) -> int:
        c = self.peek()
        if c == "L":
            self.i += 1
            if self.s.startswith("_Z", self.i):
                self.i += 2
                size = self.encoding()
            else:
                size = self.type()
                m = re.compile(r"[0-9a-fn]*").match(self.s, self.i)
                assert m is not None  # the pattern matches the empty string
                size += 2 * len(m.group()) + _PUNCT
                self.i = m.end()
            self.eat("E")
            return size
        if c == "J":
            self.i += 1
            size = _PUNCT
            while self.peek() != "E":
                size += self.template_arg() + 2
            self.i += 1
            return size
        return self.type()

    def type(self) -> int:
        c = self.peek()
        if c in _BUILTIN:
            self.i += 1
            return _PUNCT
        if c == "D" and (self.peek(1) in _D_BUILTIN or self.peek(1) == "F"):
            self.i += 2
            if c + self.s[self.i - 1] == "DF":
                while self.peek().isdigit():
                    self.i += 1
                self.i += 1  # ``_``, ``x`` or ``b`` (``DF16b``: bfloat16)
            return _PUNCT
        if c in "rVK":
            while self.peek() in ("r", "V", "K"):
                self.i += 1
            size = self.type() + _PUNCT
        elif c in "PROCG" or (c == "D" and self.peek(1) == "p"):
            self.i += 1 + (c == "D")
            size = self.type() + _PUNCT
        elif c == "F":
            size = self.function_type()
        elif c == "A" and self.peek(1) in "0123456789_":
            self.i += 1
            while self.peek().isdigit():
                self.i += 1
            self.eat("_")
            size = self.type() + _PUNCT
        elif c == "M":
            self.i += 1
            size = self.type() + self.type() + _PUNCT
        elif c == "T":
            size = self.template_param()
            if self.peek() == "I":
                self.subs.append(size)
                size += self.template_args()
        elif c == "S" and self.peek(1) != "t":
            size = self.substitution()
            if self.peek() != "I":
                return size  # a reference, or ``std::string`` and kin: no new candidate
            size += self.template_args()
        elif c.isdigit() or c in "NZS" or c == "u":
            self.i += c == "u"
            size = self.name()
        else:
            raise _Unknown
        self.subs.append(size)
        return size

    def function_type(self) -> int:
        self.i += 1
        if self.peek() == "Y":
            self.i += 1
        size = _PUNCT
        while self.peek() != "E":
            if self.peek() in ("R", "O") and self.peek(1) == "E":
                self.i += 1
                continue
            size += self.type() + 2
        self.i += 1
        return size


def demangled_size(mangled: str) -> int | None:
    """An upper bound of the length ``__cxa_demangle`` prints for ``mangled`` (``_Z...``), or None
    where the name holds a construct this estimate does not parse."""
    if not mangled.startswith("_Z"):
        return None
    sizer = _Size(mangled[2:])
    try:
        size = sizer.encoding()
    except (_Unknown, RecursionError, ValueError):
        return None
    return size if sizer.i == len(sizer.s) else None


def has_references(mangled: str) -> bool:
    """Whether a name reprints earlier components (``S_``, ``S0_``, ``T_``): without any, its
    demangled form is at most a constant times its length."""
    return re.search(r"[ST][0-9A-Z]*_", mangled) is not None
