"""Timeline figures: busy/idle by interval union, launch gaps, short kernels, data-loader cover.
Synthetic tables with hand-computed answers, plus one real trace."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from tcreport import api, schema
from tcreport.analysis import timeline

US = 1_000


def _kernels(rows: list[tuple[str, int | None, int, int]]) -> pa.Table:
    return schema.conform(
        {
            "name": [r[0] for r in rows],
            "start_ns": [r[1] for r in rows],
            "duration_ns": [r[2] for r in rows],
            "device_id": [r[3] for r in rows],
            "calls": [1] * len(rows),
        },
        schema.TableKind.KERNELS,
    )


def test_union_counts_overlap_once_and_splits_gaps() -> None:
    # device 0: [0,10) and [5,20) overlap -> busy 20; gap 5 µs; [25,30) -> busy 25 of span 30
    # device 1: [0,100 µs) then a 200 µs gap, then [300,302) -> a long gap
    k = _kernels(
        [
            ("a", 0, 10 * US, 0),
            ("b", 5 * US, 15 * US, 0),
            ("a", 25 * US, 5 * US, 0),
            ("c", 0, 100 * US, 1),
            ("a", 300 * US, 2 * US, 1),
        ]
    )
    tl = timeline.kernel_timeline(k)
    assert tl is not None
    assert tl.devices == 2 and tl.launches == 5
    assert tl.span_ns == 30 * US + 302 * US
    assert tl.busy_ns == 25 * US + 102 * US
    assert tl.idle_ns == 5 * US + 200 * US
    assert (tl.short_gap_idle_ns, tl.long_gap_idle_ns) == (5 * US, 200 * US)
    assert tl.short_launches == 2  # the 5 µs and 2 µs kernels
    assert tl.short_kernel_names == ("a",)
    assert tl.busy_share is not None and 0 < tl.busy_share < 1


def test_no_timestamps_means_no_timeline() -> None:
    assert timeline.kernel_timeline(None) is None
    assert timeline.kernel_timeline(schema.empty(schema.TableKind.KERNELS)) is None
    assert timeline.kernel_timeline(_kernels([("a", None, 10, 0)])) is None


def test_data_loader_cover_is_an_interval_union() -> None:
    ranges = schema.conform(
        {
            "name": [
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "IteratorGetNext",
                "train_step",
            ],
            "start_ns": [0, 50, 0],
            "end_ns": [100, 150, 1000],
        },
        schema.TableKind.RANGES,
    )
    m = timeline.host_markers(ranges, None)
    assert m.data_loader_ns == 150
    assert m.data_loader_names == (
        "IteratorGetNext",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    )
    assert timeline.host_markers(None, None).data_loader_ns is None


def test_dlprof_cnn_timeline_matches_dlprof_kernel_total(dlprof_cnn: Path) -> None:
    a = api.analyze(api.load(dlprof_cnn)).analysis
    assert a.time.timeline is not None
    assert a.time.timeline.launches == 59  # CUPTI kernel launches of this run
    assert a.time.timeline.busy_ns <= 589_147  # the union never exceeds DLProf's summed kernel time
