"""IT001: the iteration range could not be found, so warm-up may be averaged in."""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.model import IterationMethod
from tcreport.rules import _common as c
from tcreport.rules.base import Finding, Severity


def check(analysis: Analysis) -> list[Finding]:
    sel = analysis.iterations
    if sel.key_node_found and not sel.whole_run:
        return []
    if sel.info.method in (IterationMethod.DLPROF, None) and sel.key_node_found:
        return []
    if not sel.key_node_found:
        title = f"Key node {sel.info.key_node!r} never occurs; the whole run was aggregated"
    else:
        title = "No iteration marker found; the whole run was aggregated"
    detail = "Warm-up, autotuning and compilation are averaged into the figures. "
    if analysis.iterations.suggestions:
        best = analysis.iterations.suggestions[0]
        detail += (
            "Names that repeat with a steady period over most of the run: "
            + "; ".join(s.describe() for s in analysis.iterations.suggestions)
            + "."
        )
        fix = f"Pass --key-node {best.name!r} and --iter-start 1 (or later) to skip warm-up" + (
            " (only two occurrences: check that it runs once per step)."
            if best.confidence == "low"
            else "."
        )
    else:
        detail += (
            "No op or range name repeats with a steady period over most of the run, so none is "
            "suggested (per-layer ops such as aten::linear would cut every layer into an "
            "'iteration')."
        )
        torch = (
            "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) "
            "with prof.step() each step (ProfilerStep#N), or wrap the step in "
            "torch.profiler.record_function('train_step') / torch.cuda.nvtx.range('train_step')"
        )
        tf = "wrap each step in tf.profiler.experimental.Trace('train_step', step_num=step)"
        how = {c.Flavour.TORCH: torch, c.Flavour.TF: tf}.get(
            c.flavour(analysis), f"PyTorch: {torch}; TensorFlow: {tf}"
        )
        if c.is_jax(analysis):  # JAX's own step marker, not TensorFlow's
            how = "wrap each step in jax.profiler.StepTraceAnnotation('train_step', step_num=step)"
        fix = f"Mark the training step: {how}; then --key-node train_step --iter-start 1."
    return [
        Finding(
            id="IT001",
            severity=Severity.LOW,
            title=title,
            detail=detail,
            fix=fix,
        )
    ]
