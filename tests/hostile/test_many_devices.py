"""A trace naming thousands of devices (a hostile or broken device id per launch) must cost no
more than a few GPUs: the kernel timeline's per-GPU union and the step breakdown's host-range
lookup used one pass over every launch per GPU. Both are now done for all GPUs at once; these
tests pin that the figures are those of the per-GPU definition, on real traces whose device ids
were edited (synthetic edits)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
from trace_paths import REALTRACES, SAMPLES, need

from tcreport import api
from tcreport.analysis import activity, steps, timeline

H100X2 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
RESNET = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"


def _spread(tmp_path: Path, devices: int) -> Path:
    path = tmp_path / "spread.sqlite"
    shutil.copy(H100X2, path)
    con = sqlite3.connect(path)
    for t in ("KERNEL", "MEMCPY", "MEMSET"):
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_{t} SET deviceId = rowid % {devices}")
    con.commit()
    con.close()
    return path


def test_synthetic_kernel_timeline_over_hundreds_of_gpus_is_the_per_gpu_union(
    tmp_path: Path,
) -> None:
    run = api.load(_spread(tmp_path, 300))
    k = run.kernels
    assert k is not None
    fig = timeline.kernel_timeline(k)
    assert fig is not None and fig.devices == 300
    starts = k.column("start_ns").to_numpy().astype(np.int64)
    ends = starts + k.column("duration_ns").to_numpy().astype(np.int64)
    devices = k.column("device_id").to_numpy()
    busy = span = 0
    for d in np.unique(devices):  # the definition, one GPU at a time
        sel = devices == d
        b, s, _ = timeline._union(starts[sel], ends[sel])
        busy, span = busy + b, span + s
    assert (fig.busy_ns, fig.span_ns) == (busy, span)
    assert 0 < fig.busy_ns <= fig.span_ns


def _causes_one_gpu_at_a_time(
    act: activity.Activity, gaps: steps.HostGaps, host: steps.HostIntervals
) -> np.ndarray:
    """The definition: per GPU, the host ranges of the processes that launched on it."""
    mid = gaps.start + gaps.length // 2
    code = np.full(mid.size, -1, np.int64)
    for dev in np.unique(gaps.device):
        procs = np.unique(act.process[act.device == dev])
        keep = None
        if (procs >= 0).any():
            keep = np.isin(host.process, procs[procs >= 0]) | (host.process < 0)
            keep = keep if keep.any() else None
        sel = gaps.device == dev
        code[sel] = steps.enclosing(host, keep, mid[sel])
    return code


def test_synthetic_gap_causes_over_many_gpus_and_processes_match_the_definition() -> None:
    """The ResNet-50 trace's launches spread over 40 GPUs and two processes (by launch row), its
    host ops over the same two: every host-bound gap's cause is the one the per-GPU lookup
    names."""
    run = api.load(need(RESNET))
    act = activity.collect(run.kernels, run.memory)
    assert act is not None and run.ops is not None
    rows = np.arange(len(act))
    act = activity.Activity(
        act.start, act.end, act.cat, (rows % 40).astype(np.int32), act.stream,
        act.iteration, (rows % 7 % 2).astype(np.int64) + 1, act.kernel_row,
    )  # fmt: skip
    ops = run.ops.set_column(
        run.ops.schema.get_field_index("process_id"),
        "process_id",
        [np.arange(run.ops.num_rows) % 2 + 1],
    )
    _, gaps = steps.breakdown_with_gaps(act, run.ranges, ops)
    assert gaps is not None and gaps.start.size > 40
    mid = np.sort(gaps.start + gaps.length // 2)
    host = steps.host_intervals(run.ranges, ops, mid)
    assert host is not None and not host.single_process
    assert np.array_equal(gaps.code, _causes_one_gpu_at_a_time(act, gaps, host))
    assert (gaps.code >= 0).any()


def test_synthetic_per_gpu_table_is_capped_like_every_table(tmp_path: Path) -> None:
    """300 GPUs: the HTML's Per GPU table shows the first MAX_ROWS and says how many there are
    (it had a row per GPU: 20,000 device ids made a 4.4 MB section)."""
    from tcreport.render.html_parts import MAX_ROWS

    html = api.render_html(api.analyze(api.load(_spread(tmp_path, 300))))
    table = html[
        html.index('id="t-devices"') : html.index("</table>", html.index('id="t-devices"'))
    ]
    assert table.count('<tr><th scope="row">') == MAX_ROWS
    assert f"(first {MAX_ROWS} of 300)" in table
