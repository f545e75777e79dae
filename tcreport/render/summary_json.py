"""``tcreport summary --json``: the ``tcreport.summary/1`` contract of docs/summary-json.md.

A public contract: fields may be added, never renamed or changed in meaning without a new schema
version. Times are integer ns, shares fractions in [0, 1], unknown figures ``null``, keys sorted.
"""

from __future__ import annotations

import json
from typing import Any

from tcreport.analysis.host_time import HostRow
from tcreport.render import summary_steps
from tcreport.report import Report

SCHEMA = "tcreport.summary/1"
TOP_N = 20


def _int(x: float | int | None) -> int | None:
    return None if x is None else int(round(x))


def _host(r: HostRow) -> dict[str, Any]:
    return {
        "name": r.name,
        "ops": r.ops,
        "calls": r.calls,
        "cpu_ns": r.cpu_ns,
        "inclusive_ns": r.inclusive_ns,
        "share": r.share,
    }


def _advice(view: Report) -> dict[str, Any]:
    """CPU-only host time, collective communication and the fix-first finding (added compatibly
    to ``tcreport.summary/1``)."""
    a = view.analysis
    return {
        "cpu_only": a.host.cpu_only,
        "host": {
            "ops": [_host(r) for r in a.host.ops[:TOP_N]],
            "op_types": [_host(r) for r in a.host.op_types[:TOP_N]],
            "total_ns": a.host.total.ns if a.host.total else None,
            "total_method": a.host.total.method if a.host.total else None,
        },
        "communication": None
        if a.communication.collectives is None
        else {
            "kernel_ns": a.communication.collectives.kernel_ns,
            "kernel_share": a.communication.collectives.kernel_share,
            "exposed_ns": a.communication.collectives.exposed_ns,
            "max_device_share": a.communication.collectives.max_device_share,
            "wall_share": a.communication.wall_share,
        },
        "fix_first": None
        if view.fix_first is None
        else {
            "id": view.fix_first.id,
            "title": view.fix_first.title,
            "fix": view.fix_first.fix,
            "estimated_saving_ns": view.fix_first.estimated_saving_ns,
            "saving_per_iteration_ns": view.fix_first.saving_per_iteration_ns,
        },
        # without one, what every other output's "Fix first" line says instead, and why
        "no_fix_first": view.no_fix_first,
    }


def _system(view: Report) -> dict[str, Any]:
    """The GPUs (whitelisted fields), the run's vendor and what its matrix units are called."""
    a = view.analysis
    gpus = [
        {
            "device_id": g.device_id,
            "name": g.name,
            "compute_capability": g.compute_capability,
            "vendor": g.vendor,
        }
        for g in a.meta.gpus
    ]
    return {
        "gpus": gpus,
        "vendor": a.verdict.vendor.value,
        "matrix_unit": a.verdict.words.unit,
        # the GPU as every other output's heading names it, and its generation, also where the
        # trace names no model ("Hopper (inferred from kernel names)"): Analysis.gpu
        "gpu_label": a.gpu.label,
        "gpu_generation": a.gpu.best_generation,
    }


#: Names ``tcreport.summary/1`` gave two figures first, kept as aliases of their one name
#: (docs/summary-json.md): a public contract renames nothing.
ALIASES = {"tc_share": "kernel_time_share", "classified_share": "classified_kernel_time_share"}


def _tensor_core(view: Report) -> dict[str, Any]:
    v = view.analysis.verdict
    figures = {
        "tc_share": v.tc_share,
        "classified_share": v.classified_share,
        "eligible_op_count": v.eligible_op_count,
        "using_op_count": v.using_op_count,
        "eligible_not_using_op_count": v.eligible_not_using_op_count,
        "missed_op_count": v.missed_op_count,
        "eligible_gpu_ns": v.eligible_gpu_ns,
        "eligible_not_using_gpu_ns": v.eligible_not_using_gpu_ns,
        # the headline's figure (every output's "eligible GPU time not on ..."), per iteration
        "eligible_not_using_per_iteration_ns": _int(v.eligible_not_using_per_iteration_ns),
    }
    op_level = {"op_level_gpu_ns": v.op_level_gpu_ns, "op_level_share": v.op_level_tc_share}
    return figures | {alias: figures[name] for name, alias in ALIASES.items()} | op_level


def summary_dict(view: Report) -> dict[str, Any]:
    """The ``tcreport.summary/1`` object: the contract's keys, then the compatible additions."""
    a = view.analysis
    m = a.meta
    it = a.iterations.info
    return {
        "schema": SCHEMA,
        "tcreport_version": view.tool_version,
        "source": {
            "format": m.format.value,
            "path": view.source_path,
            "profiler": m.profiler,
            "profiler_version": m.profiler_version,
            "framework": m.framework,
        },
        "system": _system(view),
        "iterations": {
            "key_node": it.key_node,
            "total": it.total,
            "start": it.start,
            "stop": it.stop,
            "aggregated": it.aggregated,
            "mean_ns": _int(it.mean_ns),
            "std_ns": _int(it.std_ns),
        },
        "time": {
            "wall_ns": a.time.wall_ns,
            "gpu_kernel_ns": a.time.gpu_kernel_ns,
            "tc_kernel_ns": a.time.tc_kernel_ns,
            "memory_ns": a.time.memory_ns,
        },
        "tensor_core": _tensor_core(view),
        **_rows(view),
        **_advice(view),
        **_evidence(view),
        "invariant_violations": [
            {"invariant": v.invariant.value, "figure": v.figure, "message": v.message}
            for v in a.violations
        ],
        "notes": list(m.notes),
        **summary_steps.keys(a),
    }


def _rows(view: Report) -> dict[str, Any]:
    """The top ops and kernels by GPU time, and every finding."""
    a = view.analysis
    return {
        "ops": [
            {
                "name": o.name,
                "type": o.type,
                "calls": o.calls,
                "gpu_ns": o.gpu_ns,
                "share": o.share,
                "tc_eligible": o.tc_eligible,
                "uses_tc": a.host.op_uses_tc(o),
                "dtype": o.dtype,
            }
            for o in a.breakdown.ops[:TOP_N]
        ],
        "kernels": [
            {
                "name": k.name,
                "calls": k.calls,
                "gpu_ns": k.gpu_ns,
                "share": k.share,
                "uses_tc": k.uses_tc,
            }
            for k in a.breakdown.kernels[:TOP_N]
        ],
        "findings": [
            {
                "id": f.id,
                "severity": f.severity.value,
                "title": f.title,
                "detail": f.detail,
                "estimated_saving_ns": f.estimated_saving_ns,
                "saving_share": f.saving_share,
                "saving_per_iteration_ns": f.saving_per_iteration_ns,
                "fix": f.fix,
                "assumptions": f.assumptions,
                "source": f.source,
            }
            for f in view.findings
        ],
    }


def _evidence(view: Report) -> dict[str, Any]:
    """Per-GPU figures and the kernels whose measured Tensor Core use contradicts their name."""
    a = view.analysis
    return {
        "counter_disagreements": [
            {
                "name": c.name,
                "name_verdict": c.name_verdict,
                "name_rule": c.name_rule,
                "counter_verdict": c.counter_verdict,
                "launches": c.launches,
                "gpu_ns": c.gpu_ns,
            }
            for c in a.verdict.counter_disagreements
        ],
        "devices": [
            {
                "device_id": d.device_id,
                "name": d.name,
                "kernel_launches": d.launches,
                "gpu_kernel_ns": d.gpu_kernel_ns,
                "tc_kernel_ns": d.tc_kernel_ns,
                "memory_ns": d.memory_ns,
                "tc_share": d.tc_share,
            }
            for d in a.breakdown.devices
        ],
    }


def render(view: Report) -> str:
    return json.dumps(summary_dict(view), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
