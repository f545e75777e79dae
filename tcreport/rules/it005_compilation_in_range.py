"""IT005: XLA or torch.compile compilation runs inside the aggregated range.

Compilation is one-off host work that can take seconds; inside the measured range it inflates the
step time and every share (IT002 sees only its effect, a slow first iteration; this rule sees the
cause, the framework's own compile ranges: ``_XlaCompile``, Dynamo's ``compile_inner`` /
``TorchDynamo``, Inductor's ``compile_fx``). No time saving is claimed: the fix is where to measure
(or a recompilation to avoid), and steady-state steps do not pay it.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT005"


def check(analysis: Analysis) -> list[Finding]:
    names = analysis.signals.compile_names
    if not names:
        return []
    ns, wall = analysis.signals.compile_ns, analysis.time.wall_ns
    if wall is None and analysis.time.timeline is not None:  # no wall time: the kernels' span
        wall = analysis.time.timeline.span_ns
    sh = c.share(ns, wall)
    if sh is not None and sh < thresholds.COMPILE_SHARE:
        return []
    xla = any("xla" in n.lower() for n in names)
    nxt = (analysis.iterations.info.start or 0) + 1
    if xla:
        fix = (
            f"Measure after compilation: --iter-start {nxt} (TF profiler: start the trace after "
            "the first steps); keep shapes fixed (drop_remainder=True in tf.data, padded batches) "
            "so XLA does not recompile, and tf.function(reduce_retracing=True)."
        )
    else:
        fix = (
            f"Measure after compilation: --iter-start {nxt}, or torch.profiler.schedule(wait=1, "
            "warmup=2, active=N) so the compiled steps are profiled; if it recompiles every step, "
            "mark varying dims with torch._dynamo.mark_dynamic or compile with dynamic=True "
            "(TORCH_LOGS=recompiles shows why)."
        )
    what = "XLA" if xla else "torch.compile"
    covered = f"{fmt.ns(ns)} ({fmt.pct_text(sh)} of the aggregated wall time)" if ns else "time"
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if sh is not None and sh >= 0.25 else Severity.MEDIUM,
            title=f"{what} compilation is inside the aggregated range",
            detail=f"Compilation ranges ({', '.join(fmt.tail(n, 50) for n in names[:4])}) cover "
            f"{covered}: the figures describe the compiler as much as the model.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="measurement finding: compilation is one-off, not a per-step saving",
            evidence=tuple(Evidence(EvidenceKind.OP, n) for n in names[:10]),
        )
    ]
