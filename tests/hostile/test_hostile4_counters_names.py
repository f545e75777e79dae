"""Hostile reproductions (branch hostile4) for the counter verdict, the demangler and the template
cache: each was a failure, marked xfail(strict=True) until its fix (branch hostfix4) flipped it;
they stay as guards of those fixes."""

from __future__ import annotations

import io
import marshal
import pickle
import subprocess
import sys
from pathlib import Path

from synthetic import doubling_mangled_name

from tcreport.ingest.common.counters import TensorEvidence, tensor_evidence
from tcreport.kernel_names import demangle

PIPE = "sm__inst_executed_pipe_tensor"
HFMA2 = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2"


def test_mixed_rollups_are_not_subtracted() -> None:
    # the real fp16 CNN's float16_copy kernel: .sum 4 / 4, .avg 0.03 / 0.03; hfma2.sum missing
    got = tensor_evidence([(f"{PIPE}.sum", 4.0), (f"{HFMA2}.avg", 0.03)])
    assert got is not TensorEvidence.MATRIX


def test_negative_counter_is_not_a_verdict() -> None:
    got = tensor_evidence([(f"{PIPE}.sum", 4.0), (f"{HFMA2}.sum", -1.0)])
    assert got is not TensorEvidence.MATRIX


def test_submetric_is_not_the_total() -> None:
    got = tensor_evidence(
        [(f"{PIPE}.sum.per_second", 4e6), (f"{PIPE}.sum", 4.0), (f"{HFMA2}.sum", 4.0)]
    )
    assert got is not TensorEvidence.MATRIX


def test_demangled_name_is_bounded() -> None:
    name = doubling_mangled_name(18)
    assert len(name) < 300
    assert len(demangle(name)) < 100_000


def test_damaged_template_cache_is_no_cache(tmp_path: Path) -> None:
    from jinja2.bccache import bc_magic

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    render = "from tcreport.render import html\nhtml.environment().get_template('report.html.j2')\n"
    env = {"TMPDIR": str(tmp), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", render], env=env, check=True)
    for f in tmp.glob("_jinja2-cache-*/*.cache"):
        fh = io.BytesIO(f.read_bytes())
        assert fh.read(len(bc_magic)) == bc_magic
        pickle.load(fh)
        f.write_bytes(f.read_bytes()[: fh.tell()] + marshal.dumps(5))
    again = subprocess.run([sys.executable, "-c", render], env=env, capture_output=True)
    assert again.returncode == 0, again.stderr.decode()[-300:]
