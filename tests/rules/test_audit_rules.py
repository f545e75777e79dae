"""The model-audit rules (AU001-AU007) and PR002 on CPU-only runs, on synthetic audits.

The audit facts are what ``tcreport profile`` reads from the model object (tests/cli/test_profile_torch
and test_profile_tf check that against real PyTorch and Keras runs); here each rule fires on a
synthetic audit built for it and stays silent on its corrected twin. The runs are CPU-only captures
(no kernels, ops with host time only), the case these rules exist for.
"""

from __future__ import annotations

import dataclasses
import json

from synthetic import US, op_row, synthetic_rows_run

from tcreport import api
from tcreport.model import AuditKey, AuditLayer, AuditSetting, ModelAudit, Run, RunMeta
from tcreport.rules import Finding
from tcreport.rules.base import EvidenceKind


def _cpu_run(audit: ModelAudit | None, ops: list[dict[str, object]] | None = None) -> Run:
    """A CPU-only capture: no GPU, no kernels, ops with host time."""
    rows = ops or [dict(op_row("mm", "MatMul", "float32", 0), cpu_ns=500 * US)]
    run = synthetic_rows_run(kernels=[], ops=rows, framework="TensorFlow 2.21.0", gpus=())
    return run.replace(meta=dataclasses.replace(run.meta, audit=audit))


def _ids(run: Run) -> list[str]:
    """The model and precision findings (a synthetic run also earns IT001: no iteration marks)."""
    return [f.id for f in api.analyze(run).findings if f.id.startswith(("AU", "PR"))]


def _one(run: Run, rule_id: str) -> Finding:
    (f,) = [f for f in api.analyze(run).findings if f.id == rule_id]
    return f


def _set(key: AuditKey, value: str, at: str | None = None) -> AuditSetting:
    return AuditSetting(key.value, value, at)


def _dense(name: str, units: int, line: int, dtype: str = "float16", **kw: object) -> AuditLayer:
    return AuditLayer(
        name=name,
        kind="Dense",
        defined_at=f"train.py:{line}",
        compute_dtype=dtype,
        dims=(("units", units),),
        **kw,  # type: ignore[arg-type]
    )


#: The Keras model of issue #25: mixed_float16, input 100, Dense 1000/333/77, float16 softmax
#: output, a custom loop with a plain Adam (no LossScaleOptimizer), jit_compile off.
KERAS_ISSUE = ModelAudit(
    framework="keras",
    layers=(
        AuditLayer("input_layer", "InputLayer", "train.py:9", "float32", (("features", 100),)),
        _dense("dense", 1000, 10),
        _dense("dense_1", 333, 11),
        _dense("out_softmax", 77, 12, activation="softmax", output=True),
    ),
    settings=(
        _set(AuditKey.DEVICE, "cpu"),
        _set(AuditKey.KERAS_POLICY, "mixed_float16", "train.py:5"),
        _set(AuditKey.TF_TF32, "True"),
        _set(AuditKey.KERAS_OPTIMIZER, "Adam", "train.py:14"),
        _set(AuditKey.KERAS_JIT, "False", "train.py:17"),
    ),
)

KERAS_FIXED = dataclasses.replace(
    KERAS_ISSUE,
    layers=(
        AuditLayer("input_layer", "InputLayer", "train.py:9", "float32", (("features", 104),)),
        _dense("dense", 1000, 10),
        _dense("dense_1", 336, 11),
        _dense("logits", 80, 12),
        AuditLayer(
            "out_softmax", "Activation", "train.py:13", "float32", activation="softmax", output=True
        ),
    ),
    settings=(
        *KERAS_ISSUE.settings[:3],
        _set(AuditKey.KERAS_LOSS_SCALE, "used", "train.py:15"),
        _set(AuditKey.KERAS_JIT, "True", "train.py:17"),
    ),
)


def test_keras_issue_model_gets_every_audit_finding_with_lines() -> None:
    run = _cpu_run(KERAS_ISSUE)
    assert sorted(_ids(run)) == ["AU001", "AU002", "AU007", "PR002"]
    sizes = _one(run, "AU001")
    assert "float16" in sizes.title
    for text in (
        "input_layer (train.py:9): features 100 → 104",
        "dense_1 (train.py:11): units 333 → 336",
        "out_softmax (train.py:12): units 77 → 80",
    ):
        assert text in sizes.detail
    assert "dense (train.py:10)" not in sizes.detail  # 1000 is a multiple of 8
    assert "expected on a GPU" in sizes.detail and sizes.estimated_saving_ns is None
    assert {e.kind for e in sizes.evidence} == {EvidenceKind.LAYER}
    scaling = _one(run, "AU002")
    assert scaling.severity == "high" and "train.py:14" in scaling.detail
    assert "LossScaleOptimizer" in (scaling.fix or "")
    softmax = _one(run, "PR002")
    assert "out_softmax (train.py:12)" in softmax.detail and "mixed_float16" in softmax.detail
    assert "dtype='float32'" in (softmax.fix or "")
    assert "train.py:17" in _one(run, "AU007").detail


def test_keras_corrected_model_gets_none() -> None:
    assert _ids(_cpu_run(KERAS_FIXED)) == []


def test_keras_fit_scales_the_loss_itself() -> None:
    fit = dataclasses.replace(
        KERAS_ISSUE, settings=(*KERAS_ISSUE.settings, _set(AuditKey.KERAS_FIT, "called"))
    )
    assert "AU002" not in _ids(_cpu_run(fit))


def test_pr002_fires_on_a_float16_softmax_op_of_a_cpu_trace() -> None:
    """Issue #25: PR002 was skipped on every CPU-only run; dtypes are recorded there too."""
    ops = [
        dict(op_row("sm", "Softmax", "float16", 0), cpu_ns=50 * US),
        dict(op_row("mm", "MatMul", "float16", 0), cpu_ns=500 * US, start=60 * US),
    ]
    run = _cpu_run(None, ops)
    assert api.analyze(run).analysis.host.cpu_only
    f = _one(run, "PR002")
    assert f.evidence[0].key == "/model/sm/Softmax"
    float32 = [dict(o, dtype="float32") for o in ops]
    assert "PR002" not in _ids(_cpu_run(None, float32))


TORCH_FP16 = ModelAudit(
    framework="pytorch",
    layers=(
        AuditLayer(
            "Net.conv", "Conv2d", "net.py:8", "float32", (("in_channels", 3), ("out_channels", 30)),
            channels_last=False,
        ),
        AuditLayer(
            "Net.fc", "Linear", "net.py:9", "float32", (("in_features", 30), ("out_features", 333))
        ),
    ),
    settings=(
        _set(AuditKey.DEVICE, "cpu"),
        _set(AuditKey.TORCH_MATMUL_TF32, "False"),
        _set(AuditKey.TORCH_MATMUL_PRECISION, "highest"),
        _set(AuditKey.TORCH_CUDNN_TF32, "True"),
        _set(AuditKey.TORCH_CUDNN_BENCHMARK, "False"),
        _set(AuditKey.TORCH_AUTOCAST, "float16 on cuda", "train.py:30"),
    ),
)  # fmt: skip


def test_torch_float16_without_scaler_channels_last_benchmark_and_sizes() -> None:
    run = _cpu_run(TORCH_FP16)
    assert sorted(_ids(run)) == ["AU001", "AU002", "AU004", "AU005"]
    assert "train.py:30" in _one(run, "AU002").detail
    assert "GradScaler" in (_one(run, "AU002").fix or "")
    sizes = _one(run, "AU001").detail
    # the 3 input channels too: the padding rule TC003 applies to the same convolution
    assert "Net.conv (net.py:8): in_channels 3 → 8, out_channels 30 → 32" in sizes
    assert "Net.fc (net.py:9): in_features 30 → 32, out_features 333 → 336" in sizes
    bench = _one(run, "AU004")
    assert (
        "never set, so PyTorch's default" in bench.detail and "Net.conv (net.py:8)" in bench.detail
    )
    assert "channels_last" in (_one(run, "AU005").fix or "")


def test_torch_fixed_model_gets_none() -> None:
    fixed = ModelAudit(
        framework="pytorch",
        layers=tuple(
            dataclasses.replace(
                x, dims=tuple((n, 32) for n, _ in x.dims), channels_last=x.channels_last and True
            )
            for x in TORCH_FP16.layers
        ),
        settings=(
            *TORCH_FP16.settings[:4],
            _set(AuditKey.TORCH_CUDNN_BENCHMARK, "True", "train.py:3"),
            TORCH_FP16.settings[5],
            _set(AuditKey.TORCH_GRAD_SCALER, "created", "train.py:20"),
        ),
    )
    conv = dataclasses.replace(fixed.layers[0], channels_last=True)
    fixed = dataclasses.replace(fixed, layers=(conv, fixed.layers[1]))
    assert _ids(_cpu_run(fixed)) == []


def test_torch_float32_model_gets_tf32_and_mixed_precision_advice() -> None:
    fp32 = dataclasses.replace(TORCH_FP16, settings=TORCH_FP16.settings[:5])
    run = _cpu_run(fp32)
    assert sorted(_ids(run)) == ["AU003", "AU004", "AU006"]
    tf32 = _one(run, "AU003")
    assert "Net.fc (net.py:9)" in tf32.detail and "Net.conv" not in tf32.detail  # cuDNN TF32 on
    assert (tf32.fix or "").startswith("Call torch.set_float32_matmul_precision('high')")
    assert "torch.autocast" in (_one(run, "AU006").fix or "")
    # A pre-Ampere GPU has no TF32: nothing to switch on.
    volta = dataclasses.replace(fp32, settings=(*fp32.settings, _set(AuditKey.GPU_CC, "7.0")))
    assert "AU003" not in _ids(_cpu_run(volta))


def test_pr002_does_not_take_autocast_loss_records_for_float16() -> None:
    """Under autocast the outer cross_entropy record carries the float16 input; autocast runs
    it in float32 (the inner record). With the audit showing autocast, no PR002."""
    ops = [dict(op_row("ce", "cross_entropy_loss", "float16", 0), cpu_ns=50 * US)]
    assert "PR002" in _ids(_cpu_run(None, ops))
    assert "PR002" not in _ids(_cpu_run(TORCH_FP16, ops))


def test_audit_round_trips_through_the_ingest_manifest() -> None:
    meta = _cpu_run(KERAS_ISSUE).meta
    back = RunMeta.from_json(meta.to_json())
    assert back.audit == KERAS_ISSUE


def test_damaged_audit_entries_are_dropped_not_raised() -> None:
    raw = json.loads(json.dumps(dataclasses.asdict(KERAS_ISSUE)))
    raw["layers"].append({"name": 3, "kind": "Dense"})
    raw["layers"][1]["dims"] = [["units", "1000"], ["units", -4], ["units", 2**70], "x"]
    raw["settings"].append({"key": "device", "value": None})
    audit = ModelAudit.from_dict(raw)
    assert audit is not None and len(audit.layers) == 4 and audit.layers[1].dims == ()
    assert len(audit.settings) == len(KERAS_ISSUE.settings)
    assert ModelAudit.from_dict({"layers": []}) is None and ModelAudit.from_dict("x") is None
