"""IT001: the iteration range could not be found, so warm-up may be averaged in."""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules.base import Finding, Severity


def check(analysis: Analysis) -> list[Finding]:
    sel = analysis.selection
    if sel.key_node_found and sel.info.method != "whole run":
        return []
    if sel.info.method in ("dlprof", None) and sel.key_node_found:
        return []
    cands = ", ".join(sel.candidates) if sel.candidates else "none found"
    if not sel.key_node_found:
        title = f"Key node {sel.info.key_node!r} never occurs; the whole run was aggregated"
    else:
        title = "No iteration marker found; the whole run was aggregated"
    return [
        Finding(
            id="IT001",
            severity=Severity.LOW,
            title=title,
            detail="Warm-up, autotuning and compilation are averaged into the figures. "
            f"Frequent op and range names that could mark iterations: {cands}.",
            fix="Pass --key-node NAME (an op or NVTX range that runs once per iteration) and "
            "--iter-start to skip warm-up; in PyTorch, torch.profiler's schedule marks ProfilerStep#N.",
        )
    ]
