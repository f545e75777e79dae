"""TC001: Tensor Core eligible ops run in float32/float64, so mixed precision (or TF32) is off.

The commonest reason a model misses the Tensor Cores, and DLProf's ``amp_detector``. Ops are taken
from the why-not rows whose reason is the data type itself (fp64, fp32 without TF32), not ops that
run in fp32 inside an otherwise mixed-precision run: those are TC004's "outside autocast". Without
op rows (a DLProf summary only) the profiler's own eligible-not-using counts are all there is, and
they are reported with the same fix. The id is the one this finding has always had.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis import tf32_words, why_not
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "TC001"
REASONS = frozenset({"fp64", "fp32-no-tf32", "fp32-tf32-off"})


def _assumption(analysis: Analysis) -> str:
    w = analysis.verdict.words
    nvidia = " (the low end of NVIDIA's 2-8x for GEMM/convolution-bound layers)"
    return (
        f"these ops' GPU time shrinks {thresholds.TC_SPEEDUP:g}x on {w.unit}"
        + (nvidia if c.is_nvidia(analysis) else "")
        + "; GPU time saved becomes wall time only where the GPU is the bottleneck"
    )


def _severity(share: float | None) -> Severity:
    return c.tc_severity(share, unknown=Severity.HIGH)  # no share: the profiler's counts alone


def _from_counts(analysis: Analysis) -> list[Finding]:
    """No op rows: the profiler's counts, without op evidence or a dtype."""
    count = analysis.verdict.eligible_not_using_op_count or 0
    if not count:
        return []
    gpu = analysis.verdict.eligible_not_using_gpu_ns
    sh = c.share(gpu, analysis.time.gpu_kernel_ns)
    w = analysis.verdict.words
    detail = (
        f"The profiler counts {fmt.plural(count, f'{w.unit_one} eligible op')} not using {w.unit}"
    )
    detail += f" ({fmt.pct_text(sh)} of GPU kernel time)." if sh is not None else "."
    return [
        Finding(
            id=ID,
            severity=_severity(sh),
            title=f"{fmt.plural(count, f'{w.unit_one} eligible op')} did not use {w.unit}",
            detail=detail + " The input has no per-op rows, so their data types are unknown.",
            fix=c.amp_fix(analysis),
            estimated_saving_ns=c.tc_saving(gpu),
            assumptions=_assumption(analysis),
        )
    ]


def check(analysis: Analysis) -> list[Finding]:
    if not analysis.breakdown.ops and not analysis.verdict.why_not:
        return _from_counts(analysis)
    rows = [(o, w) for o, w in c.why_not_by_op(analysis) if w.reason in REASONS]
    if not rows:
        return []
    ops = [o for o, _ in rows]
    gpu = c.missed_ns(ops)
    sh = c.share(gpu, analysis.time.gpu_kernel_ns)
    dtypes = sorted({o.dtype for o in ops if o.dtype})
    w = analysis.verdict.words
    pads = [f"{fmt.tail(o.name, 40)}: {w.padding}" for o, w in rows if w.padding][:5]
    detail = (
        f"{fmt.plural(len(ops), f'{w.unit_one} eligible op')} ran in "
        f"{', '.join(dtypes) or 'float32'} and did not use {w.unit}{c.partly(ops)}; {c.whose_time(ops)} take {fmt.ns(gpu)}"
        + (f" ({fmt.pct_text(sh)} of GPU kernel time)" if sh is not None else "")
        + "."
    )
    if pads:
        detail += " After the switch, these dimensions also need padding: " + "; ".join(pads) + "."
    tf32_off = all(w.reason == "fp32-tf32-off" for _, w in rows)
    if tf32_off:  # float32 on a GPU with TF32: the one switch that fixes it is TF32's
        # one sentence per distinct message: two convolutions of one type say the same thing
        messages = list(dict.fromkeys(w.message for _, w in rows))[:3]
        detail += "".join(f" {_sentence_start(m)}." for m in messages)
        # the switches of the families that missed, without the per-op padding (the detail
        # lists it for every op): cuDNN's switch is on by default, so a matmul-only miss does
        # not name it
        families = frozenset(why_not.family({"type": o.type, "name": o.name}) for o in ops)
        kinds = {"gemm": "GEMMs", "conv": "convolutions"}
        what = "/".join(kinds[f] for f in ("gemm", "conv") if f in families)
        # PyTorch's two switches: name the one that is off, as TC004 may say the other is on
        switch = (
            tf32_words.tf32_switch(c.words_flavour(analysis), next(iter(families)))
            if len(families) == 1
            else "TF32"
        )
        title = (
            f"{switch[:1].upper()}{switch[1:]} is off: {fmt.plural(len(ops), 'eligible op')} "
            f"{'runs' if len(ops) == 1 else 'run'} float32 {what} on CUDA cores"
        )
        fix = f"Turn TF32 on: {tf32_words.tf32_fix(c.words_flavour(analysis), families)}."
    else:
        title = (
            f"Mixed precision is off: {fmt.plural(len(ops), 'eligible op')} run in "
            f"{'/'.join(dtypes) or 'float32'} without {w.unit}"
        )
        fix = c.amp_fix(analysis)
    return [
        Finding(
            id=ID,
            severity=_severity(sh),
            title=title,
            detail=detail,
            fix=fix,
            estimated_saving_ns=c.tc_saving(gpu),
            assumptions=_assumption(analysis),
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops),
        )
    ]


def _sentence_start(message: str) -> str:
    """A sentence from a why-not message: an English first word capitalised, an op type
    (``cublaslt-matmul``, ``aten::mm``) left as the trace spells it."""
    first = message.split(" ", 1)[0]
    return message[:1].upper() + message[1:] if first.isalpha() else message
