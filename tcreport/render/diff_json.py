"""``tcreport diff --format json``: the diff as schema ``tcreport.diff/1`` for bots and dashboards.

Same conventions as ``tcreport.summary/1``: keys sorted, times integer nanoseconds (per aggregated
iteration, rounded), shares fractions in [0, 1], unknown figures ``null``. Rows are complete (no cap,
unchanged ones too) and carry the same row model as the Markdown and HTML (``presence``, then the
deltas, ``changed`` for "beyond noise"): a machine reader filters for itself.
"""

from __future__ import annotations

import json

from tcreport.compare.model import Diff, Figure, RowDiff, Side, Unit

SCHEMA = "tcreport.diff/1"


def _num(x: float | None, unit: Unit) -> float | int | None:
    if x is None:
        return None
    return x if unit is Unit.SHARE else int(round(x))


def _side(s: Side) -> dict[str, object]:
    return {
        "path": s.path,
        "format": s.format,
        "gpu": s.gpu,
        "framework": s.framework,
        "iterations_aggregated": s.aggregated,
        "noise_spread": s.spread,
    }


def _figure(f: Figure) -> dict[str, object]:
    return {
        "key": f.key,
        "label": f.label,
        "unit": f.unit.value,
        "better": f.better.value,
        "base": _num(f.base, f.unit),
        "head": _num(f.head, f.unit),
        "delta": _num(f.delta, f.unit),
        "relative": f.rel,
        "noise_threshold": _num(f.threshold, f.unit),
        "verdict": f.verdict.value,
    }


def _row(r: RowDiff) -> dict[str, object]:
    return {
        "key": r.key,
        "type": r.type,
        "presence": r.presence.value,
        "matched_by": r.matched_by or None,
        "base_gpu_ns": _num(r.base_ns, Unit.NS),
        "head_gpu_ns": _num(r.head_ns, Unit.NS),
        "delta_gpu_ns": _num(r.delta_ns, Unit.NS),
        "relative": r.rel,
        "base_tc_share": r.base_tc_share,
        "head_tc_share": r.head_tc_share,
        "base_missed_ns": _num(r.base_missed_ns, Unit.NS),
        "head_missed_ns": _num(r.head_missed_ns, Unit.NS),
        "tc_eligible": r.eligible,
        "base_uses_tc": r.base_uses_tc,
        "head_uses_tc": r.head_uses_tc,
        "tc_lost": r.tc_lost,
        "changed": r.changed,
        "noise_threshold_ns": _num(r.threshold_ns, Unit.NS),
        "verdict": r.verdict.value,
        "base_dtype": r.base_dtype,
        "head_dtype": r.head_dtype,
    }


def diff_dict(d: Diff, tool_version: str) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "tcreport_version": tool_version,
        "base": _side(d.base),
        "head": _side(d.head),
        "verdict": d.verdict,
        "forced": d.forced,
        "not_comparable": list(d.not_comparable),
        "matching": d.matching,
        # "host" for CPU-only captures: the ops' *_gpu_ns figures are then host time
        "op_clock": d.op_clock,
        "noise_rule": d.noise_rule,
        "figures": [_figure(f) for f in d.figures],
        # ops (else kernels) on the matrix units in base and not in head: each a regression
        "tc_lost": list(d.tc_lost),
        "ops": [_row(r) for r in d.ops],
        "op_types": [_row(r) for r in d.op_types],
        "kernels": [_row(r) for r in d.kernels],
        "findings": {
            kind: [
                {"id": f.id, "title": f.title, "severity": f.severity, "base_title": f.base_title}
                for f in items
            ]
            for kind, items in (
                ("added", d.added),
                ("resolved", d.resolved),
                ("persisting", d.persisting),
            )
        },
        "notes": list(d.notes),
    }


def render(d: Diff, tool_version: str) -> str:
    return (
        json.dumps(diff_dict(d, tool_version), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    )
