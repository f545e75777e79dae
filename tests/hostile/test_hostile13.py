"""Hostile tests of the JAX/XLA HLO reading, step annotations and torch.compile template ops.

Every input is a real profile (sample_traces/h200-jax-xla-ncu, sample_traces/h200-torch-compile-tf32)
or a synthetic edit of one (``*_synthetic``): the XSpace is decoded with tcreport's own descriptor
(:func:`parse_xspace`), changed, and written back under ``plugins/profile/run``. Each test is a
defect found on the day the HLO reading landed (hostile13), fixed the same day.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from trace_paths import SAMPLES

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis import result  # noqa: E402
from tcreport.ingest.xplane import hlo  # noqa: E402
from tcreport.ingest.xplane.proto import parse_xspace  # noqa: E402

BF16 = next((SAMPLES / "h200-jax-xla-ncu" / "bf16").glob("plugins/profile/*/vm.xplane.pb"))
INDUCTOR = SAMPLES / "h200-torch-compile-tf32" / "inductor_mlp.pt.trace.json.gz"
TRAIN = 16606  # the bf16 profile's jit_train_step program id


def _write(space: Any, root: Path) -> Path:
    out = root / "plugins" / "profile" / "run" / "vm.xplane.pb"
    out.parent.mkdir(parents=True)
    out.write_bytes(space.SerializeToString())
    return root


def _names(plane: Any) -> dict[int, str]:
    return {k: v.name for k, v in plane.stat_metadata.items()}


def _plane(space: Any, prefix: str) -> Any:
    return next(p for p in space.planes if p.name.startswith(prefix))


def _stream_events(space: Any) -> list[tuple[Any, dict[str, Any]]]:
    gpu = _plane(space, "/device:GPU")
    names = _names(gpu)
    return [
        (ev, {names.get(s.metadata_id, ""): s for s in ev.stats})
        for line in gpu.lines
        if line.name.startswith("Stream #")
        for ev in line.events
    ]


def _classified_kernels(run: Any) -> list[dict[str, Any]]:
    kernels = result._classify(run, result.run_vendor(run)).kernels
    assert kernels is not None
    rows: list[dict[str, Any]] = kernels.to_pylist()
    return rows


# --- two programs whose instructions share names ------------------------------------------------


def test_two_programs_with_the_same_instruction_names_keep_their_own_precision_synthetic(
    tmp_path: Path,
) -> None:
    """The bf16 JAX profile with a second program (id 777, 'jit_eval_step') that is the train
    step's HLO recompiled at float32 HIGHEST precision (every bf16 shape made f32, every dot's
    operand precision HIGHEST), and the later half of each stream's kernels moved to it. XLA names
    instructions per module, so both programs hold ``gemm_fusion_dot.4`` etc.: any two jitted
    functions with matrix work do. space.py keeps one HloOp per instruction name
    (``facts.hlo_ops.setdefault(op, ...)``) and the kernel's op id is that name, so all 42 GEMM
    fusion kernels get the first program's verdict: the fp32-HIGHEST program's 21 read 'uses
    Tensor Cores: yes' (rule xla-hlo-precision). Expected: the program's own precision decides
    (fp32 HIGHEST -> 'no'), e.g. op ids qualified by program."""
    space = parse_xspace(BF16.read_bytes())
    meta = _plane(space, "/host:metadata")
    names = _names(meta)
    train = next(m for m in meta.event_metadata.values() if m.name.startswith("jit_train_step"))
    proto = hlo.message(
        next(s for s in train.stats if names[s.metadata_id] == hlo.HLO_PROTO_STAT).bytes_value
    )
    for comp in proto.hlo_module.computations:
        for inst in comp.instructions:
            if inst.opcode in ("dot", "convolution"):
                inst.precision_config.operand_precision[:] = [2, 2]  # HIGHEST
            if inst.shape.element_type == 16:  # bf16 -> f32
                inst.shape.element_type = 11
    new_id = max(meta.event_metadata.keys()) + 1
    copy = meta.event_metadata[new_id]
    copy.id, copy.name = new_id, "jit_eval_step(777)"
    for s in train.stats:
        stat = copy.stats.add()
        stat.CopyFrom(s)
        if names[s.metadata_id] == "program_id":
            stat.uint64_value = 777
        elif names[s.metadata_id] == hlo.HLO_PROTO_STAT:
            stat.bytes_value = proto.SerializeToString()
    moved: set[int] = set()
    gpu = _plane(space, "/device:GPU")
    gpu_names = _names(gpu)
    for line in gpu.lines:
        if line.name.startswith("Stream #"):
            events = list(line.events)
            for ev in events[len(events) // 2 :]:
                stats = {gpu_names.get(s.metadata_id): s for s in ev.stats}
                if "program_id" in stats:
                    stats["program_id"].int64_value = 777
                    corr = stats["correlation_id"]
                    moved.add(int(corr.int64_value or corr.uint64_value))
    run = api.load(_write(space, tmp_path / "two_programs_synthetic"))
    verdicts = Counter(
        (k["correlation_id"] in moved, k["uses_tc"])
        for k in _classified_kernels(run)
        if str(k["name"]).startswith("gemm_fusion")
    )
    assert verdicts[(False, True)] == 21  # the bf16 program's fusions: Tensor Cores
    assert verdicts[(True, True)] == 0, verdicts  # fp32 HIGHEST: never 'yes'


# --- program id 0 -------------------------------------------------------------------------------


def test_kernels_of_program_id_0_get_their_hlo_ops_synthetic(tmp_path: Path) -> None:
    """The bf16 JAX profile with its train step renumbered 16606 -> 0 (and the ``jit_stage``
    program, which really is id 0 in this profile, renumbered 0 -> 16606). XLA numbers modules
    from 0 in a process, so a script whose first compiled function is its train step has program
    0. _programs() keys the HLO by 0, but space._stat_value returns None for an int64 stat of 0,
    so _hlo_op finds no program: 180 of the 228 kernels get no op at all (op id None) and the GEMM
    fusions lose their precision. Expected: the same ops as with id 16606."""
    space = parse_xspace(BF16.read_bytes())
    meta = _plane(space, "/host:metadata")
    names = _names(meta)
    for md in meta.event_metadata.values():
        for s in md.stats:
            if names.get(s.metadata_id) == "program_id" and s.uint64_value in (0, TRAIN):
                s.uint64_value = TRAIN if s.uint64_value == 0 else 0
    for _ev, stats in _stream_events(space):
        if "program_id" in stats and stats["program_id"].int64_value == TRAIN:
            stats["program_id"].int64_value = 0
    run = api.load(_write(space, tmp_path / "program_zero_synthetic"))
    baseline = api.load(BF16.parents[3])
    assert run.kernels is not None and baseline.kernels is not None
    assert run.kernels.column("op_id").null_count == baseline.kernels.column("op_id").null_count
    assert "gemm_fusion_dot.4" in set(run.kernels.column("op_id").to_pylist())


# --- an enormous program ------------------------------------------------------------------------


def test_describing_ops_of_a_100k_instruction_program_is_fast_synthetic() -> None:
    """A synthetic ``HloProto``: one computation of 100,000 loop fusions, each using the one
    before. Describing 400 distinct instructions (a big unrolled model launches thousands of
    distinct fusions) rebuilds a 100k-entry dict per op: ~9 s here (1,000 ops: 23 s), so a real
    LLM profile's reading grows with instructions x kernels. Expected: well under 3 s (building
    the Program itself takes ~0.25 s)."""
    proto = hlo.message(b"")
    comp = proto.hlo_module.computations.add()
    comp.id, comp.name = 1, "main"
    for i in range(100_000):
        inst = comp.instructions.add()
        inst.id, inst.name, inst.opcode = i, f"loop_add_fusion.{i}", "fusion"
        inst.shape.element_type = 11
        inst.shape.dimensions.extend([128, 128])
        if i:
            inst.operand_ids.append(i - 1)
    program = hlo.Program(hlo.message(proto.SerializeToString()))
    start = time.perf_counter()
    for i in range(0, 100_000, 250):
        op = program.op(f"loop_add_fusion.{i}", "kernel")
        assert op is not None
    assert time.perf_counter() - start < 3.0


# --- step annotations ---------------------------------------------------------------------------


def test_a_two_host_profile_keeps_its_step_annotations_synthetic(tmp_path: Path) -> None:
    """The bf16 JAX profile as a two-host run: the same XSpace written twice into one run folder
    (``host0.xplane.pb``, ``host1.xplane.pb``, as a multi-host jax.profiler capture on a shared
    file system lays them out; the reader merges every file of the folder). Each host annotated
    its 6 steps with StepTraceAnnotation; the steps of the two hosts run at the same time. The
    ranges get no process id, so iteration_marks sees 12 'train_step' ranges overlapping each
    other and rejects the name: IT001 'No iteration marker found' whose fix is 'wrap each step in
    jax.profiler.StepTraceAnnotation', which the profile already does. Expected: 6 iterations
    (one host's steps cut them, as with several ranks), no IT001."""
    run_dir = tmp_path / "two_hosts_synthetic" / "plugins" / "profile" / "run"
    run_dir.mkdir(parents=True)
    shutil.copyfile(BF16, run_dir / "host0.xplane.pb")
    shutil.copyfile(BF16, run_dir / "host1.xplane.pb")
    view = api.analyze(api.load(tmp_path / "two_hosts_synthetic"))
    assert "IT001" not in {f.id for f in view.findings}


def _damaged_step(root: Path) -> Path:
    space = parse_xspace(BF16.read_bytes())
    host = _plane(space, "/host:CPU")
    step = next(k for k, v in _names(host).items() if v == "step_num")
    for line in host.lines:
        steps = [ev for ev in line.events if any(s.metadata_id == step for s in ev.stats)]
        if steps:
            steps[2].duration_ps = -5
            break
    return _write(space, root)


def test_a_dropped_step_annotation_is_named_in_the_notes_synthetic(tmp_path: Path) -> None:
    """The bf16 JAX profile with its third ``train_step`` annotation's duration set to -5 ps.
    space._host_plane drops it silently: the run has 5 ranges, the iteration before it now spans
    two steps, and the report gains IT003 'GPU step times vary by 33%', a finding made of the
    damage with nothing telling the user a step was dropped (damaged GPU events are counted in a
    note: 'dropped N GPU events whose duration is negative...'). Expected: a note saying a step
    annotation was dropped as damage."""
    run = api.load(_damaged_step(tmp_path / "negative_step_synthetic"))
    assert run.ranges is not None and run.ranges.num_rows == 5
    assert any("step" in n.lower() and "drop" in n.lower() for n in run.meta.notes), run.meta.notes


# --- torch.compile's GEMM templates in the op tables --------------------------------------------


def test_inductor_template_ops_are_not_shown_as_missing_tensor_cores() -> None:
    """sample_traces/h200-torch-compile-tf32 (real, H200, float32 with TF32 allowed): since
    2b82c1a the template ops (triton_tem_fused_mm_t_7, 22.8 % of GPU time) are eligible, and all
    their kernels are 'unknown' (triton-unknown; ncu counted TF32 tensor-path math in them). The
    op tables nonetheless print 'eligible yes, uses TC no': terminal summary ('│ yes │ no │'),
    Markdown ('| yes | no |'), HTML op table and eligibility table (class 'v-no v-miss', a miss),
    and the JSON ops row says uses_tc false, while the headline says 0 ns of eligible time missed
    Tensor Cores. Expected: 'unknown' for such ops, as their kernels say."""
    view = api.analyze(api.load(INDUCTOR))
    md = api.render_markdown(view)
    row = next(
        ln for ln in md.splitlines() if ln.startswith("| triton\\_tem\\_fused\\_mm\\_t\\_7 |")
    )
    assert row.rstrip(" |").endswith("unknown"), row
    html = api.render_html(view)
    row_html = html[html.index('<tr id="elig-triton_tem_fused_mm_t_7">') :]
    row_html = row_html[: row_html.index("</tr>")]
    assert "v-miss" not in row_html, row_html
