"""The roofline section of the HTML report as text: present with its table on a real trace,
deterministic, hostile names inert, a note instead of a chart where a roof is missing, and the
summary JSON's roofline fields."""

from __future__ import annotations

import json
import re

from synthetic import HOSTILE, US, kernel_row, op_row, synthetic_rows_run
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.model import Gpu, Run
from tcreport.render import roofline_html

BERT = REALTRACES / "kineto" / "h100-bf16-bert-small"


def _section(html: str) -> str:
    start = html.index('<section id="roofline"')
    return html[start : html.index("</section>", start)]


def test_bert_report_draws_every_heavy_shape_with_its_table() -> None:
    view = api.analyze(api.load(next(need(BERT).glob("*.json.gz"))))
    html = api.render_html(view)
    part = _section(html)
    assert part.count("<circle ") == 5 == part.count('<tr><td class="num">')
    assert 'aria-describedby="t-roofline"' in part and "bf16 989.4 TFLOP/s" in part
    assert "ran on Tensor Cores" in part and "memory-bound" in part
    assert "<script" not in part and "style=" not in part  # the CSP allows neither here
    # the same run renders the same bytes
    assert _section(api.render_html(view)) == part
    r = roofline_html.section(view.analysis)
    assert r is not None and [d.n for d in r.dots] == [1, 2, 3, 4, 5]
    # the mean per call beside the aggregate, as the table prints them
    first = r.rows[0]
    assert (first.tflops, first.mean, first.median) == ("12.74", "12.75", "12.78")


def _hostile_h100_run() -> Run:
    """A 4096³ bf16 GEMM in 250 µs (550 TFLOP/s, 56 % of the H100's dense peak: a time an H100
    can reach; in 50 µs it would be 278 %, which the throughput-within-peak invariant refuses)."""
    gpu = (Gpu(device_id=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0"),)
    op = {**op_row("op1", "mm", "bfloat16", 250 * US, "[[4096,4096],[4096,4096]]"), "name": HOSTILE}
    return synthetic_rows_run(
        kernels=[kernel_row("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "op1", 0, 250 * US)],
        ops=[op],
        cc="9.0",
        gpus=gpu,
    )


def test_hostile_op_name_is_inert_in_the_chart_and_table() -> None:
    view = api.analyze(_hostile_h100_run())
    part = _section(api.render_html(view))
    assert part.count("<circle ") == 1
    assert HOSTILE not in part and "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in part
    assert not re.search(r"<img", part)


def test_summary_json_carries_the_roofline_fields() -> None:
    data = json.loads(api.render_json(api.analyze(_hostile_h100_run())))
    t = data["throughput"]
    assert t["memory_gbs"] == 3350.0
    (o,) = (o for o in t["ops"] if o["kind"] == "gemm")
    assert o["bytes"] == 3 * 4096 * 4096 * 2 and o["flops_per_byte"] == 2 * 4096**3 / o["bytes"]
    assert o["bound"] == "compute-bound" and o["matrix_units"] == "yes"
    assert o["mean_tflops"] == o["achieved_tflops"] == o["median_tflops"]  # one call
    assert o["memset_ns"] == 0 and o["roofline_share"] > 0


def test_no_bandwidth_gives_a_note_not_a_chart() -> None:
    gpu = (Gpu(device_id=0, name="NVIDIA A100-PG509-200", compute_capability="8.0"),)
    run = synthetic_rows_run(
        kernels=[kernel_row("ampere_bf16_s16816gemm_bf16_128x128", "op1", 0, 50 * US)],
        ops=[op_row("op1", "mm", "bfloat16", 50 * US, "[[1024,1024],[1024,1024]]")],
        cc="8.0",
        gpus=gpu,
    )
    part = _section(api.render_html(api.analyze(run)))
    assert "<svg" not in part and "no memory bandwidth for A100" in part
