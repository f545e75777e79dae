"""``summary --json`` names the run's GPU as every other output's heading does (``system.gpu_label``)
and gives its generation (``system.gpu_generation``): a newcomer found "Hopper (inferred from
kernel names)" in the terminal, Markdown and HTML, and only nulls in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_paths import H200_NCU, SAMPLES

from tcreport import api

ALEXNET = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))


@pytest.mark.parametrize(
    ("path", "label", "generation"),
    [
        (ALEXNET, "NVIDIA A100-PG509-200", "Ampere"),  # a recorded model: its capability's
        (H200_NCU / "ncu" / "ncu_details_mix_h.csv", "Hopper (compute capability 9.0)", "Hopper"),
    ],
)
def test_the_json_names_the_gpu_as_the_heading_does(
    path: Path, label: str, generation: str
) -> None:
    view = api.analyze(api.load(path))
    system = json.loads(api.render_json(view))["system"]
    assert (system["gpu_label"], system["gpu_generation"]) == (label, generation)
    assert label in api.render_markdown(view).splitlines()[2]  # the Markdown heading's line
