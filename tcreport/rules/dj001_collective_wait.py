"""DJ001: the ranks of a job wait in collectives for a straggler.

A collective ends when the last rank arrives, so one slow rank makes every other rank sit inside
its all-reduce or all-to-all. The job section (:mod:`tcreport.analysis.job`) measures that wait
per rank and iteration (collective time beyond the least any rank spent) and names the straggler
and what it spent its extra time on; this rule turns it into a finding once the ranks' median wait
reaches ``COLLECTIVE_WAIT_SHARE`` of the job's step time. The fix depends on where the straggler's
extra time went: compute (uneven work), copies, or an idle GPU (its host was busy elsewhere).
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.job import JobSection, Straggler
from tcreport.kernel_names import short_name
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "DJ001"


def _fix(s: Straggler) -> str:
    part = s.parts[0].name if s.parts and s.parts[0].excess_ns > 0 else "compute"
    if part == "idle":
        host = f" (its host was in {s.host_cause})" if s.host_cause else ""
        return (
            f"Rank {s.rank}'s GPU idles while its host works{host}: move logging, metrics, "
            "checkpointing or evaluation that only this rank does off the step path (another "
            "thread, every N steps, or spread over the ranks), and give its data loader the "
            "workers the others have."
        )
    if part.startswith("memory"):
        return (
            f"Rank {s.rank} spends more time in copies than the others: look for host-device "
            "copies only it makes (metrics read back with .item(), logging, checkpoint staging) "
            "and make them asynchronous (non_blocking=True from pinned memory) or less frequent."
        )
    lead = f" (led by {short_name(s.kernels[0].name)})" if s.kernels else ""
    return (
        f"Even out the work: rank {s.rank} computes more per step than the others{lead}. Uneven "
        "batches (sequence lengths, embedding lookups, a data-dependent expert mix) or uneven "
        "sharding (pipeline stages, tensor-parallel splits, an embedding table on one rank) are "
        "the usual causes: bucket or pad inputs to equal work, or re-shard."
    )


def check(job: JobSection) -> list[Finding]:
    s = job.straggler
    if s is None or not job.step_ns or job.wait_ns is None:
        return []
    share = job.wait_ns / job.step_ns
    if share < thresholds.COLLECTIVE_WAIT_SHARE:
        return []
    n = len(job.iterations)
    saving = int(job.wait_ns * n * thresholds.COLLECTIVE_WAIT_RECOVERABLE)
    detail = (
        f"The other ranks wait a median {fmt.ns(job.wait_ns)} per iteration inside collectives "
        f"({fmt.pct_text(share)} of the job's {fmt.ns(job.step_ns)} step) beyond the least any "
        f"rank spends in them: {s.text}"
    )
    ev = [Evidence(EvidenceKind.KERNEL, k.name) for k in s.kernels[:3]]
    ev += [Evidence(EvidenceKind.OP, o.name) for o in s.ops[:2]]
    ev += [
        Evidence(EvidenceKind.ITERATION, str(r.iteration))
        for r in job.iterations
        if r.straggler == s.rank
    ][:5]
    high = share >= thresholds.COLLECTIVE_WAIT_HIGH_SHARE
    title = f"Ranks wait {fmt.pct_text(share)} of each step in collectives for rank {s.rank}"
    if s.named_in < n:  # the straggler rotates: the wait is not all this rank's
        title = (
            f"Ranks wait {fmt.pct_text(share)} of each step in collectives; rank {s.rank} is "
            f"the straggler in {s.named_in} of {n} iterations"
        )
        detail += (
            f" The median wait in the iterations it is the straggler in is "
            f"{fmt.ns(s.wait_caused_ns)}; other ranks are the slowest in the rest."
        )
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if high else Severity.MEDIUM,
            title=title,
            detail=detail,
            fix=_fix(s),
            estimated_saving_ns=saving,
            assumptions=(
                f"{fmt.pct_text(thresholds.COLLECTIVE_WAIT_RECOVERABLE)} of the median collective "
                f"wait ({fmt.ns(job.wait_ns)} per iteration, {n} iteration{'s' if n != 1 else ''}) "
                "comes back once the straggler is as fast as the others; the job's time, not a "
                "rank's"
            ),
            evidence=tuple(ev),
        )
    ]
