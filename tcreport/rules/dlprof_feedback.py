"""DLProf's own expert-system findings, carried over verbatim with DLProf's detector ids.

Teams compare old DLProf verdicts with new tcreport ones; keeping DLProf's wording and ids
(``dlprof:amp_detector``) makes that comparison possible.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules.base import Finding, Severity

_SEVERITY = {
    "amp_detector": Severity.HIGH,
    "bad_tc_data_type_detector": Severity.HIGH,
    "tc_not_used_detector": Severity.HIGH,
    "underutilized_gpu_detector": Severity.MEDIUM,
}


def check(analysis: Analysis) -> list[Finding]:
    return [
        Finding(
            id=f"dlprof:{sf.id}",
            severity=_SEVERITY.get(sf.id, Severity.INFO),
            title=sf.problem,
            detail=sf.problem,
            fix=sf.recommendation or None,
            source="DLProf expert systems",
        )
        for sf in analysis.meta.source_findings
    ]
