"""``tcreport summary --json`` of a distributed job: the ``tcreport.job/1`` document.

A job is not one trace, so it gets its own documented schema (docs/summary-json.md, "Distributed
jobs") rather than a ``tcreport.summary/1`` whose top-level verdict would silently be one rank's:
``job`` is the job section, every figure the analysis made (the same object the HTML and
Markdown format), and ``detail`` the ``tcreport.summary/1`` document of the rank shown in full.
Times are integer ns, shares fractions, unknown figures ``null``, keys sorted.
"""

from __future__ import annotations

import json
from typing import Any

from tcreport.analysis.collectives import Bandwidth
from tcreport.analysis.job import JobSection, Straggler
from tcreport.analysis.job_cells import Cell
from tcreport.job_report import JobReport
from tcreport.render import summary_json

SCHEMA = "tcreport.job/1"


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def _cell(c: Cell) -> dict[str, Any]:
    s = c.step
    return {
        "rank": c.rank,
        "iteration": c.iteration,
        "label": c.label,
        "rank_iteration": s.iteration,
        "step_ns": s.step_ns,
        "span_ns": s.span_ns,
        "window_ns": s.window_ns,
        "compute_ns": s.compute_ns,
        "tc_compute_ns": s.tc_compute_ns,
        "communication_ns": s.communication_ns,
        "communication_total_ns": s.communication_total_ns,
        "memory_ns": s.memory_ns,
        "memory_total_ns": s.memory_total_ns,
        "idle_ns": s.idle_ns,
        "own_ns": s.own_ns,
        "wait_ns": c.wait_ns,
        "dominant": c.dominant,
        "straggler": c.straggler,
        "host_cause": s.host_cause,
    }


def _straggler(s: Straggler | None) -> dict[str, Any] | None:
    if s is None:
        return None

    def rows(xs: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [{"name": x.name, "excess_ns": _int(x.excess_ns)} for x in xs]

    return {
        "rank": s.rank,
        "named_in": s.named_in,
        "of": s.of,
        "excess_ns": _int(s.excess_ns),
        "wait_caused_ns": _int(s.wait_caused_ns),
        "parts": rows(s.parts),
        "kernels": rows(s.kernels),
        "ops": rows(s.ops),
        "host_cause": s.host_cause,
        "text": s.text,
    }


def _bandwidth(b: Bandwidth) -> dict[str, Any]:
    return {
        "recorded": b.recorded,
        "note": b.note,
        "nvlink_gbs_one_way": b.nvlink_gbs,
        "rows": [
            {
                "collective": r.collective,
                "name": r.name,
                "dtype": r.dtype,
                "message_bytes": r.message_bytes,
                "group_size": r.group_size,
                "calls": r.calls,
                "ranks": r.ranks,
                "time_ns": r.time_ns,
                "algbw_gbs": r.algbw_gbs,
                "busbw_gbs": r.busbw_gbs,
                "nvlink_share": r.nvlink_share,
            }
            for r in b.rows
        ],
    }


def section_dict(sec: JobSection) -> dict[str, Any]:
    """The job section, every figure as the analysis made it."""
    i, v = sec.identity, sec.verdict
    sp = v.spread
    return {
        "label": i.label,
        "detected_by": i.detected_by,
        "backend": i.backend,
        "world_size": i.world_size,
        "ranks_present": list(i.ranks),
        "presence": i.presence,
        "matrix_unit": sec.matrix_unit,
        "verdict": {
            "tc_share": v.tc_share,
            "tc_kernel_ns": v.tc_kernel_ns,
            "gpu_kernel_ns": v.gpu_kernel_ns,
            "spread": None
            if sp is None
            else {
                "low": sp.low,
                "median": sp.median,
                "high": sp.high,
                "low_rank": sp.low_rank,
                "high_rank": sp.high_rank,
            },
            "text": v.text,
            "eligible_not_using_gpu_ns": v.eligible_not_using_gpu_ns,
            "eligible_not_tc_share": v.eligible_not_tc_share,
        },
        "matching": sec.matching,
        "step_ns": _int(sec.step_ns),
        "wait_ns": _int(sec.wait_ns),
        "ranks": [
            {
                "rank": r.rank,
                "file": r.file,
                "gpu": r.gpu,
                "tc_share": r.tc_share,
                "gpu_kernel_ns": r.gpu_kernel_ns,
                "iterations": r.iterations,
                "step_ns": _int(r.step_ns),
                "compute_ns": _int(r.compute_ns),
                "communication_ns": _int(r.communication_ns),
                "memory_ns": _int(r.memory_ns),
                "idle_ns": _int(r.idle_ns),
                "own_ns": _int(r.own_ns),
                "wait_ns": _int(r.wait_ns),
                "straggler_in": r.straggler_in,
                "findings": list(r.findings),
            }
            for r in sec.ranks
        ],
        "iterations": [
            {
                "iteration": r.iteration,
                "label": r.label,
                "step_ns": r.step_ns,
                "straggler": r.straggler,
                "excess_ns": r.excess_ns,
                "max_wait_ns": r.max_wait_ns,
                "median_wait_ns": r.median_wait_ns,
            }
            for r in sec.iterations
        ],
        "cells": [_cell(c) for c in sec.cells],
        "straggler": _straggler(sec.straggler),
        "bandwidth": _bandwidth(sec.bandwidth),
        "untimed_ranks": list(sec.untimed),
        "notes": list(sec.notes),
        "invariant_violations": [
            {"invariant": v.invariant.value, "figure": v.figure, "message": v.message}
            for v in sec.violations
        ],
    }


def job_dict(jr: JobReport) -> dict[str, Any]:
    job = section_dict(jr.section)
    job["findings"] = [
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
        }
        for f in jr.findings
    ]
    return {
        "schema": SCHEMA,
        "tcreport_version": jr.tool_version,
        "source": {
            "path": jr.source_path,
            "ranks": [{"rank": r, "path": p} for r, p in jr.rank_files],
        },
        "job": job,
        "detail": {
            "rank": jr.detail_rank,
            "why": jr.detail_why,
            "summary": summary_json.summary_dict(jr.detail),
        },
    }


def render(jr: JobReport) -> str:
    return json.dumps(job_dict(jr), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
