"""Kernel names in the forms the profilers write them.

Nsight Compute reports a kernel by its demangled signature, Nsight Systems and CUPTI keep a short
name; the ncu reader and the counter merge both need one from the other, so it is defined here,
outside both the readers and the analysis.
"""

from __future__ import annotations


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
