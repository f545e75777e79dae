"""Kilobyte-long names (C++ template kernels run to several KB: the A100 AlexNet trace has one of
5 KB) must not carry the HTML report past its size bound: row ids are cut and end in a digest, and
the timeline's hover names share a budget. Synthetic names; the report check edits the real 2xH100
export."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

from trace_paths import SAMPLES

from tcreport import api
from tcreport.render import timeline_html
from tcreport.render.html_parts import MAX_ID, anchor


def test_synthetic_long_names_get_short_distinct_row_ids() -> None:
    a, b = "k" * 5000 + "a", "k" * 5000 + "b"
    ids = {anchor("kernel", a), anchor("kernel", b)}
    assert len(ids) == 2  # names equal but for the last character stay apart
    assert all(len(i) <= len("kernel-") + MAX_ID for i in ids)
    assert anchor("kernel", a) == anchor("kernel", a)  # the link and the row agree
    assert anchor("kernel", "sgemm_128x64") == "kernel-sgemm_128x64"  # short ids unchanged


def test_synthetic_timeline_hover_names_share_a_budget() -> None:
    names = [f"kernel_{i}_" + "x" * 3000 for i in range(5000)]
    shown = timeline_html.hover_names(names)
    assert all(len(s) <= timeline_html.MIN_NAME for s in shown)  # 200 KB, not 1.2 MB
    assert all(s.startswith(f"kernel_{i}_") for i, s in enumerate(shown))
    few = timeline_html.hover_names(["short", "y" * 1000])
    assert few == ["short", "y" * (timeline_html.MAX_NAME - 1) + "…"]


def test_synthetic_long_kernel_names_in_the_h100x2_report(tmp_path: Path) -> None:
    """300 kernels of the real export renamed to distinct 3 KB names: every in-page link still
    finds its row, and the page stays under 2 MB."""
    path = tmp_path / "long.sqlite"
    shutil.copy(SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite", path)
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO StringIds(id, value) SELECT 10000000 + rowid, printf('kern_%d_', rowid)"
        " || hex(zeroblob(1500)) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 12 = 0"
    )
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 10000000 + rowid,"
        " shortName = 10000000 + rowid WHERE rowid % 12 = 0"
    )
    con.commit()
    con.close()
    html = api.render_html(api.analyze(api.load(path), with_timeline=True))
    assert len(html.encode("utf-8")) < 2 * 1024 * 1024
    ids = set(re.findall(r' id="([^"]+)"', html))
    links = set(re.findall(r'href="#([^"]+)"', html))
    assert links <= ids
    rows = re.findall(r'<tr id="(kernel-kern_[^"]+)"', html)
    assert rows and all(len(r) <= len("kernel-") + MAX_ID for r in rows)
