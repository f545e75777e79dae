"""Damaged XLA programs inside a real JAX profile: the HLO is read, never trusted.

The source is the bf16 JAX profile of sample_traces/h200-jax-xla-ncu. Its training program's
``HloProto`` (on the ``/host:metadata`` plane) is cut, overwritten or rewired (computations that
call themselves, operands that point nowhere, unknown element types and precisions), and the
profile must still read: a program that does not decode is as if absent (the kernels keep xprof's
op), and one that decodes into nonsense gives ops, never a traceback.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from trace_paths import SAMPLES

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis.result import classified_run  # noqa: E402
from tcreport.errors import TcreportError  # noqa: E402
from tcreport.ingest.xplane import hlo  # noqa: E402
from tcreport.ingest.xplane.proto import parse_xspace  # noqa: E402

SOURCE = next((SAMPLES / "h200-jax-xla-ncu" / "bf16").glob("plugins/profile/*/vm.xplane.pb"))


def _program_stat(space: Any) -> Any:
    plane = next(p for p in space.planes if p.name == "/host:metadata")
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    md = next(m for m in plane.event_metadata.values() if m.name.startswith("jit_train_step"))
    return next(s for s in md.stats if names.get(s.metadata_id) == hlo.HLO_PROTO_STAT)


def _write(space: Any, tmp_path: Path) -> Path:
    out = tmp_path / "plugins" / "profile" / "run" / "vm.xplane.pb"
    out.parent.mkdir(parents=True)
    out.write_bytes(space.SerializeToString())
    return tmp_path


def _read(path: Path) -> None:
    try:
        run = api.load(path)
    except TcreportError:
        return
    api.analyze(run)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_program_bytes(seed: int, tmp_path: Path) -> None:
    rng = random.Random(f"hlo-bytes:{seed}")
    space = parse_xspace(SOURCE.read_bytes())
    stat = _program_stat(space)
    data = bytearray(stat.bytes_value)
    if seed % 3 == 0:
        data = data[: rng.randrange(1, len(data))]
    elif seed % 3 == 1:
        for _ in range(rng.randint(1, 40)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    else:
        data = bytearray(rng.randbytes(rng.randint(1, 400)))
    stat.bytes_value = bytes(data)
    _read(_write(space, tmp_path))


def test_rewired_program_still_reads(tmp_path: Path) -> None:
    """Fusions that call themselves, operands that point nowhere, unknown types and precisions."""
    space = parse_xspace(SOURCE.read_bytes())
    stat = _program_stat(space)
    proto = hlo.message(stat.bytes_value)
    comps = list(proto.hlo_module.computations)
    for comp in comps:
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                inst.called_computation_ids[:] = [comp.id]  # itself, forever
            inst.operand_ids.append(10**15)
            inst.shape.element_type = 999
            inst.precision_config.operand_precision[:] = [7, -3]
            inst.precision_config.algorithm = 12345
    stat.bytes_value = proto.SerializeToString()
    path = _write(space, tmp_path)
    run = api.load(path)
    assert run.ops is not None and run.ops.num_rows
    api.analyze(run)


def test_a_program_without_its_hlo_keeps_xprof_ops(tmp_path: Path) -> None:
    """No HLO (an older JAX, or a profile cut down): kernels take JAX's name stack where the event
    has one, never ``XlaModule``, and XLA's GEMM fusions stay unknown rather than "no"."""
    space = parse_xspace(SOURCE.read_bytes())
    _program_stat(space).bytes_value = b""
    run = api.load(_write(space, tmp_path))
    assert run.ops is not None
    names = set(run.ops.column("name").cast("string").to_pylist())
    assert "XlaModule" not in names
    assert "jit(train_step)/jvp()/conv_general_dilated" in names
    k = classified_run(run).kernels
    assert k is not None
    fusions = k.filter(pc.starts_with(k.column("name").cast("string"), "gemm_fusion_dot"))
    assert fusions.num_rows and fusions.column("uses_tc").null_count == fusions.num_rows
    assert set(fusions.column("tc_rule").cast("string").to_pylist()) == {"xla-gemm-fusion"}
