"""The verdict section: how much GPU kernel time ran on the matrix units, which eligible ops missed
them and why, in the words of the vendor whose GPU ran the trace.

This module owns the headline figure (``tc_share``), the eligibility figures, the thresholds that
make a share good or bad, the words for the matrix unit ("Tensor Cores" on NVIDIA, "AMD Matrix
Cores" on AMD: nothing NVIDIA-specific is said of another vendor's GPU) and the one-line verdict
every output shows. Renderers format what is here; none of them compares a share to a threshold
or picks a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis import (
    counters,
    eligibility,
    framework,
    gpu_arch,
    kernel_verdicts,
    tc_kernels,
    vendor,
    why_not,
)
from tcreport.analysis.counters import CounterDisagreement
from tcreport.analysis.derived import per_iteration
from tcreport.analysis.figures import KernelRow, OpRow, TimeFigures, _share, in_some_calls_only
from tcreport.analysis.kernel_evidence import fp32_kernel_per_op, tf32_families
from tcreport.analysis.sections.headline import Headline, Tone
from tcreport.analysis.tc_kernels import Agreement
from tcreport.analysis.vendor import Vendor
from tcreport.analysis.why_not import WhyNot
from tcreport.model import IterationInfo, Run

#: Share of GPU kernel time on the matrix units the report calls good (most GEMM/convolution time
#: on them) and low; in between it is neither.
TC_SHARE_GOOD = 0.5
TC_SHARE_LOW = 0.2
#: Below this share of kernel time with a known verdict, the share above is a lower bound and the
#: report says so (the TC002 finding, the card's colour).
MIN_CLASSIFIED_SHARE = 0.9


@dataclass(frozen=True)
class UnitWords:
    """What the report calls the run's matrix units, in each place it needs a word."""

    unit: str  # "Tensor Cores", "AMD Matrix Cores"
    unit_one: str  # as an adjective or one of them: "Tensor Core share"
    a_unit_one: str  # with its article: "a Tensor Core op", "an AMD Matrix Core op"
    short: str  # a column head or a tight phrase: "uses TC", "not on TC"
    eligible: str  # "TC-eligible ops"
    #: what the run's header says of its matrix units: nothing where they are the Tensor Cores
    #: a reader of a Tensor Core report expects
    header: str
    #: the unit as a machine-readable key (an export's argument name): "tensor_core",
    #: "matrix_core", never NVIDIA's word for another vendor's units
    key: str = "tensor_core"


#: Short words and the machine key per vendor; the unit's name itself is
#: :data:`tcreport.analysis.vendor.MATRIX_UNIT`.
_SHORT = {
    Vendor.NVIDIA: ("TC", "TC-eligible", "tensor_core"),
    Vendor.AMD: ("Matrix Cores", "matrix-core-eligible", "matrix_core"),
    Vendor.INTEL: ("XMX", "XMX-eligible", "xmx_engine"),
    Vendor.META: ("matrix units", "matrix-unit-eligible", "matrix_unit"),
    Vendor.UNKNOWN: ("TC", "TC-eligible", "tensor_core"),
}


def words_for(gpu_vendor: Vendor) -> UnitWords:
    unit = vendor.MATRIX_UNIT[gpu_vendor]
    short, eligible, key = _SHORT[gpu_vendor]
    header = "" if unit == vendor.MATRIX_UNIT[Vendor.NVIDIA] else unit
    one = unit.removesuffix("s")
    article = "an" if one[:1].lower() in "aeiou" else "a"
    return UnitWords(unit, one, f"{article} {one}", short, eligible, header, key)


@dataclass(frozen=True)
class Verdict:
    vendor: Vendor
    words: UnitWords
    #: GPU kernel time on the matrix units / GPU kernel time (the summary JSON's
    #: ``tensor_core.kernel_time_share``, kept there as an alias)
    tc_share: float | None
    #: share of GPU kernel time whose verdict is known (yes or no, not unknown)
    classified_share: float | None
    eligible_op_count: int | None
    using_op_count: int | None
    #: eligible ops that used the matrix units in no call, so that ``using_op_count +
    #: eligible_not_using_op_count + unknown_op_count == eligible_op_count`` (an invariant; the
    #: last is 0 wherever every eligible op's kernels have a verdict): an op that used them in
    #: some calls only counts as using (``partly_using_op_count`` says how many did), and the time
    #: of its calls that missed is in ``eligible_not_using_gpu_ns``
    eligible_not_using_op_count: int | None
    #: eligible ops that missed in all or some calls: ``eligible_not_using_op_count`` plus the
    #: partly using ones (what the missed time ``eligible_not_using_gpu_ns`` is spread over)
    missed_op_count: int | None
    #: eligible ops whose kernels have no verdict (an accelerator tcreport has no rules for)
    unknown_op_count: int | None
    eligible_gpu_ns: int | None
    eligible_not_using_gpu_ns: int | None
    #: eligible GPU time not on the matrix units / GPU kernel time (the CI gate's figure)
    eligible_not_tc_share: float | None
    #: Op-level figures, only where kernel-level ones are missing (a DLProf 0.x detailed report
    #: has per-op GPU time but no kernel table): the ops' GPU time summed, and the share of it in
    #: ops that used the matrix units (an op's whole time counts, its other kernels included, so
    #: it is an upper bound of the kernel-level share). Every output labels them "op-level".
    op_level_gpu_ns: int | None
    op_level_tc_share: float | None
    #: every GPU of the run is identified and none has matrix units (a Pascal GeForce): a share
    #: of 0 is the hardware's, and the rules that presume matrix units do not run (TC005)
    no_matrix_units: bool
    eligible_not_using_per_iteration_ns: float | None
    partly_using_op_count: int | None
    #: ops flagged eligible (the eligibility table's rows), and those of them with no GPU time of
    #: their own (a wrapper whose kernels are counted under the op it calls)
    eligible_listed: int
    eligible_untimed: int
    why_not: tuple[WhyNot, ...]
    #: tcreport's own verdicts against the profiler's (``None`` where the input states none)
    kernel_agreement: Agreement | None
    op_eligibility_agreement: Agreement | None
    op_tc_agreement: Agreement | None
    #: kernels whose name verdict Nsight Compute's tensor-pipe counters contradict, and how many
    #: kernel names the counters decided at all
    counter_disagreements: tuple[CounterDisagreement, ...]
    counter_measured: int
    tone: Tone  # of ``tc_share``: the verdict line's and the share card's colour
    sentence: tuple[str, str]  # the one-line verdict: (the lead a renderer may stress, the rest)
    share_card: Headline
    miss_card: Headline
    classified_card: Headline
    op_level_card: Headline | None  # the op-level share, where there is one
    op_level_sentence: str | None  # the same, as a sentence (Markdown)
    #: the script entered a torch.autocast (the capture's audit); None: not known from a trace
    autocast: bool | None = None
    #: whose words the fixes take: "torch", "tf", "jax" or "any" (analysis.framework.flavour,
    #: decided once here from the run's framework, else its op names; every rule reads it)
    flavour: str = "any"
    #: the GPUs only a compute capability identifies, where parts of that capability have no
    #: matrix units (7.5: "Tensor Cores unless this is a GeForce GTX 16-series ... part"), in the
    #: words every output shows (TC006; :func:`gpu_arch.matrix_units_caveat`); None: no such GPU
    matrix_units_caveat: str | None = None

    @property
    def miss_share_words(self) -> str | None:
        """The missed time's share of GPU kernel time, for a table that shows the miss card's
        figure (per iteration over several) beside totals: "381.7 µs / iteration" beside a
        10.9 ms kernel time over 4 iterations read as 3.5 %, where it is 14.0 %. None where there
        is no miss or no share."""
        share = self.eligible_not_tc_share
        if share is None or self.miss_card.value == "none":
            return None
        return miss_words(share)


def miss_words(share: float) -> str:
    """A missed time's share of kernel time, in the words of every output (the terminal, Markdown,
    the HTML's card, ``check``'s gate): a miss that rounds to "0.0 %" is still one."""
    return "under 0.1 % of kernel time" if share < 0.0005 else f"{fmt.pct(share)} of kernel time"


def share_tone(tc_share: float | None) -> Tone:
    if tc_share is None:
        return Tone.UNKNOWN
    if tc_share >= TC_SHARE_GOOD:
        return Tone.GOOD
    return Tone.BAD if tc_share < TC_SHARE_LOW else Tone.NEUTRAL


@dataclass(frozen=True)
class _Eligibility:
    eligible: int | None
    using: int | None
    missing: int | None  # missed in all or some calls
    never: int | None  # missed in every call: eligible = using + never + unknown
    unknown: int | None  # no verdict for its kernels
    eligible_ns: int | None
    missing_ns: int | None
    partly: int | None


def _eligibility(run: Run, ops: Sequence[OpRow], cpu_only: bool) -> _Eligibility:
    """Eligible ops, those using the matrix units, those that missed them and their time: from
    the op rows, else the profiler's own counts (a DLProf summary alone). On a CPU-only run
    every figure is unknown without a GPU, never 0: whether an op would use the matrix units,
    and even which eligible ops count, since a wrapper (``aten::conv2d`` over
    ``aten::mkldnn_convolution``) is told from the op doing the work by its GPU time."""
    if cpu_only:
        return _Eligibility(None, None, None, None, None, None, None, None)
    if run.ops is not None:
        eligible = [o for o in ops if o.counts_as_eligible]
        missing = [o for o in eligible if o.has_misses]  # an op partly on TC is in both lists
        return _Eligibility(
            eligible=len(eligible),
            using=sum(1 for o in eligible if o.uses_tc),
            missing=len(missing),
            never=sum(1 for o in eligible if o.missed_tc),
            unknown=sum(1 for o in eligible if not o.uses_tc and not o.tc_known),
            eligible_ns=sum(o.gpu_ns or 0 for o in eligible),
            missing_ns=sum(o.missed_ns for o in missing),
            partly=sum(1 for o in eligible if o.partly_missed),
        )
    rep = run.meta.reported
    missing_ns = rep.eligible_not_using_gpu_ns
    using_ns = rep.using_gpu_ns
    return _Eligibility(
        eligible=rep.eligible_op_count,
        using=rep.using_op_count,
        missing=rep.eligible_not_using_op_count,
        never=rep.eligible_not_using_op_count,  # the profiler counts op instances: no partly
        unknown=None,
        eligible_ns=None if missing_ns is None or using_ns is None else missing_ns + using_ns,
        missing_ns=missing_ns,
        partly=None,
    )


def _agreements(run: Run) -> tuple[Agreement | None, Agreement | None, Agreement | None]:
    """(kernel, op eligibility, op uses-TC) agreement with the profiler, where it states one."""
    k, ops = run.kernels, run.ops
    kernel = (
        None
        if k is None or k.column("profiler_uses_tc").null_count == k.num_rows
        else tc_kernels.tc_agreement(k)
    )
    if ops is None or ops.num_rows == 0:
        return kernel, None, None
    elig = (
        eligibility.eligibility_agreement(ops, k)
        if ops.column("profiler_tc_eligible").null_count < ops.num_rows
        else None
    )
    uses = (
        eligibility.op_tc_agreement(ops, k)
        if ops.column("profiler_uses_tc").null_count < ops.num_rows
        else None
    )
    return kernel, elig, uses


def _why_not(run: Run, fix_flavour: str) -> tuple[WhyNot, ...]:
    if run.ops is None or run.ops.num_rows == 0:
        return ()
    ops = run.ops.append_column("fp32_kernel", fp32_kernel_per_op(run.ops, run.kernels))
    return tuple(
        why_not.explain(
            ops,
            fix_flavour,
            run.meta.gpus,
            tf32_seen_in=tf32_families(run.kernels),
            autocast=why_not.autocast_in_use(run.meta.audit),
        )
    )


def _disagreements(run: Run) -> tuple[CounterDisagreement, ...]:
    """The counters held against what the trace alone says (names, then the trace's own
    refinements: :mod:`tcreport.analysis.kernel_verdicts`)."""
    if run.kernels is None:
        return ()
    return counters.disagreements(
        run.kernels, lambda k: kernel_verdicts.classify(k, run, counters=False)
    )


def _sentence(
    w: UnitWords, cpu_only: bool, tc_share: float | None, time: TimeFigures, e: _Eligibility
) -> tuple[str, str]:
    """The one-line verdict: (lead, rest)."""
    if cpu_only:
        return (
            "CPU-only run: no GPU kernels.",
            f" There is no {w.unit_one} verdict without a GPU; the host time by op and op type "
            "stands in for it.",
        )
    if tc_share is None:
        return f"{w.unit_one} use unknown:", " this input holds no kernel times."
    n = e.missing or 0
    ops = f"op{'s' if n != 1 else ''}"
    if time.tc_kernel_ns == 0 and (time.unknown_kernel_ns or 0) * 2 > (time.gpu_kernel_ns or 0):
        # most of the time unjudged (torch.compile's float32 templates): "no use" would be a guess
        return (
            f"{w.unit_one} use unknown for most kernel time:",
            f" {fmt.ns(time.unknown_kernel_ns)} of {fmt.ns(time.gpu_kernel_ns)} ran in kernels "
            f"whose names do not say; none of the rest ran on {w.unit}.",
        )
    if time.tc_kernel_ns == 0:
        could = f", although {n} {ops} could" if n else ""
        return (
            f"No {w.unit_one} use.",
            f" None of the {fmt.ns(time.gpu_kernel_ns)} of GPU kernel time ran on {w.unit}{could}.",
        )
    rest = ""
    if n:
        rest = f"; {n} eligible {ops} did not{in_some_calls_only(e.partly or 0, n)}"
    return f"{fmt.pct(tc_share)} of GPU kernel time ran on {w.unit}", rest + "."


def _op_level(time: TimeFigures, ops: Sequence[OpRow]) -> tuple[int | None, float | None]:
    """Op GPU time and its share in ops using the matrix units, when there is no kernel time."""
    if time.gpu_kernel_ns is not None or not any(o.gpu_ns for o in ops):
        return None, None
    total = sum(o.gpu_ns or 0 for o in ops)
    return total, _share(sum(o.gpu_ns or 0 for o in ops if o.uses_tc), total)


def _op_level_words(
    w: UnitWords, gpu_ns: int | None, share: float | None
) -> tuple[Headline | None, str | None]:
    """The op-level figures' card and sentence, always labelled op-level."""
    if gpu_ns is None:
        return None, None
    card = Headline(
        fmt.pct(share),
        f"of op GPU time in ops using {w.unit} (op-level)",
        f"{fmt.ns(gpu_ns)} op GPU time (op-level: the input has no kernel table)",
        Tone.NEUTRAL,
    )
    sentence = (
        f"Op-level (the input has no kernel table): {fmt.pct(share)} of {fmt.ns(gpu_ns)} op GPU "
        f"time is in ops using {w.unit}."
    )
    return card, sentence


def _miss_card(
    w: UnitWords, e: _Eligibility, miss_share: float | None, per_iter: float | None, several: bool
) -> Headline:
    miss = e.missing_ns
    value = (
        "none"
        if miss == 0
        else fmt.ns(per_iter if several else miss) + (" / iteration" if several else "")
    )
    # the ops that used the matrix units in no call (the JSON's count, which adds up with the
    # using ones to the eligible), then those whose missed calls the time also holds
    partly = e.partly or 0
    more = f", {partly} more in some of {'its' if partly == 1 else 'their'} calls" if partly else ""
    shown = f"{fmt.pct(miss_share)} of kernel time" if not miss else miss_words(miss_share or 0.0)
    detail = (f"{shown}; " if miss_share is not None else "") + (
        f"{fmt.count(e.never)} of {fmt.count(e.eligible)} eligible {fmt.noun(e.eligible, 'op')}"
        f"{more}"
    )
    tone = Tone.UNKNOWN if miss is None else (Tone.BAD if miss > 0 else Tone.GOOD)
    return Headline(value, f"eligible GPU time not on {w.unit}", detail, tone)


def build(
    run: Run,
    gpu_vendor: Vendor,
    time: TimeFigures,
    ops: Sequence[OpRow],
    kernels: Sequence[KernelRow],
    info: IterationInfo,
    cpu_only: bool,
) -> Verdict:
    """The verdict of ``run`` (classified and sliced to the aggregated iterations), from its time
    figures and its op and kernel rows."""
    w = words_for(gpu_vendor)
    fix_flavour = framework.flavour(run.meta.framework, (o.name for o in ops))
    e = _eligibility(run, ops, cpu_only)
    tc_share = _share(time.tc_kernel_ns, time.gpu_kernel_ns)
    classified = tc_kernels.classified_share(run.kernels) if run.kernels is not None else None
    miss_share = _share(e.missing_ns, time.gpu_kernel_ns)
    per_iter = per_iteration(e.missing_ns, info)
    kernel, op_elig, op_uses = _agreements(run)
    tone = share_tone(tc_share)
    op_level_ns, op_level_share = _op_level(time, ops)
    op_level_card, op_level_sentence = _op_level_words(w, op_level_ns, op_level_share)
    classified_tone = (
        Tone.UNKNOWN
        if classified is None
        else (Tone.BAD if classified < MIN_CLASSIFIED_SHARE else Tone.NEUTRAL)
    )
    return Verdict(
        vendor=gpu_vendor,
        words=w,
        tc_share=tc_share,
        classified_share=classified,
        eligible_op_count=e.eligible,
        using_op_count=e.using,
        eligible_not_using_op_count=e.never,
        missed_op_count=e.missing,
        unknown_op_count=e.unknown,
        eligible_gpu_ns=e.eligible_ns,
        eligible_not_using_gpu_ns=e.missing_ns,
        eligible_not_tc_share=miss_share,
        op_level_gpu_ns=op_level_ns,
        op_level_tc_share=op_level_share,
        no_matrix_units=gpu_arch.has_matrix_units(run.meta.gpus) is False,
        matrix_units_caveat=gpu_arch.matrix_units_caveat(run.meta.gpus),
        eligible_not_using_per_iteration_ns=per_iter,
        partly_using_op_count=e.partly,
        eligible_listed=sum(1 for o in ops if o.tc_eligible),
        eligible_untimed=sum(1 for o in ops if o.tc_eligible and not o.counts_as_eligible),
        why_not=() if cpu_only else _why_not(run, fix_flavour),
        flavour=fix_flavour,
        kernel_agreement=kernel,
        op_eligibility_agreement=op_elig,
        op_tc_agreement=op_uses,
        counter_disagreements=_disagreements(run),
        counter_measured=len({k.name for k in kernels if k.tc_rule == tc_kernels.COUNTER_RULE}),
        tone=tone,
        sentence=_sentence(w, cpu_only, tc_share, time, e),
        share_card=Headline(
            fmt.pct(tc_share),
            f"of GPU kernel time on {w.unit}",
            f"{fmt.ns(time.tc_kernel_ns)} of {fmt.ns(time.gpu_kernel_ns)}",
            tone,
        ),
        miss_card=_miss_card(
            w, e, miss_share, per_iter, (info.aggregated or 0) > 1 and per_iter is not None
        ),
        classified_card=Headline(
            fmt.pct(classified),
            "of kernel time with a known verdict",
            f"{fmt.count(time.unique_kernels)} distinct kernels, "
            f"{fmt.count(time.kernel_launches)} launches",
            classified_tone,
        ),
        op_level_card=op_level_card,
        op_level_sentence=op_level_sentence,
        autocast=why_not.autocast_in_use(run.meta.audit),
    )
