"""A sentence built around a count agrees with it: "1 op of type add_ takes", "(1 op)", "1 time
in 1 aggregated step", "1 heavy op has", "on 1 GPU", "1 call" — never "1 ops", "take" after one, or a
hedging "step(s)". Checked on the real runs' every output, where the counts are 1 and several.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console
from trace_paths import H200_NCU, REALTRACES, need

from tcreport import api, fmt
from tcreport.render import terminal

BF16 = H200_NCU / "cnn_bf16fixed" / "torch_cnn.pt.trace.json.gz"
BERT = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)
V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
#: A count of one before a plural noun, or a noun hedged with "(s)".
DISAGREES = re.compile(r"\b1 (ops|calls|times|steps|copies|layers|kernels)\b|\w\(s\)")


def _outputs(path: Path) -> str:
    view = api.analyze(api.load(path), source_path=path.name)
    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=200, highlight=False))
    page = re.sub(r"<[^>]+>", " ", api.render_html(view))
    return "\n".join([buf.getvalue(), api.render_markdown(view), page, api.render_json(view)])


def test_noun_agrees_with_its_count() -> None:
    assert fmt.plural(1, "copy", "copies") == "1 copy"
    assert fmt.plural(8, "copy", "copies") == "8 copies"
    assert fmt.noun(1, "takes", "take") == "takes" and fmt.noun(2, "takes", "take") == "take"
    assert fmt.noun(None, "op") == "ops"


def test_the_bf16_cnn_outputs_agree_with_their_counts() -> None:
    text = _outputs(BF16)
    assert not DISAGREES.search(text), DISAGREES.search(text)
    assert "1 op of type add_ takes 768.8 µs" in text  # OP001's detail
    # the Markdown verdict table: named fix, per iteration as the card says (627.5 µs in all)
    assert "156.9 µs / iteration (1 op; " in text  # then its share of kernel time
    assert "8 copies from pageable memory (48 MiB) in 4 aggregated steps;" in text  # ST002
    assert "In the 3 measured steps (GPU step time" in text  # GP001
    assert "in 139.9 ms on 1 GPU, 1.76 TFLOP/s achieved" in text  # the MFU line


def test_the_bert_outputs_agree_with_their_counts() -> None:
    path = need(BERT)
    text = _outputs(path)
    assert not DISAGREES.search(text), DISAGREES.search(text)
    assert "1 time in 1 aggregated step the GPU ran out of work" in text  # ST001
    assert re.search(r"; 1 call, [\d.]+ µs", text)  # a roofline point's title


def test_the_v100_outputs_agree_with_their_counts() -> None:
    text = _outputs(need(V100))
    assert not DISAGREES.search(text), DISAGREES.search(text)
    # the throughput section's note, whole
    assert "1 heavy op has no FLOP count (shapes absent or incomplete): " in text
