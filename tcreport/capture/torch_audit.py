"""The PyTorch model audit: what the model and the framework settings are, read in the process.

Hooks on ``nn.Module.__init__``, ``torch.autocast`` and ``GradScaler`` note where the script built
each layer and which precision tools it used; :meth:`TorchAudit.snapshot` reads the live layers'
sizes and dtypes and the TF32 / cuDNN switches. Nothing here judges: the facts travel in the capture
sidecar, and ``tcreport/rules/au*.py`` turn them into findings. Every hook is removed when the
script ends, and each one calls the original first, so the script sees the same objects.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from tcreport.capture.audit_source import Locator, calls_recorded, setting_lines
from tcreport.model import AuditKey, AuditLayer, AuditSetting, ModelAudit

#: Layer classes whose sizes decide Tensor Core use, and the attributes that hold those sizes.
_DIMS = {
    "Linear": ("in_features", "out_features"),
    "LazyLinear": ("in_features", "out_features"),
    "Bilinear": ("in1_features", "out_features"),
    "Conv1d": ("in_channels", "out_channels"),
    "Conv2d": ("in_channels", "out_channels"),
    "Conv3d": ("in_channels", "out_channels"),
    "ConvTranspose1d": ("in_channels", "out_channels"),
    "ConvTranspose2d": ("in_channels", "out_channels"),
    "ConvTranspose3d": ("in_channels", "out_channels"),
    "Embedding": ("num_embeddings", "embedding_dim"),
    "LSTM": ("input_size", "hidden_size"),
    "GRU": ("input_size", "hidden_size"),
    "RNN": ("input_size", "hidden_size"),
    "MultiheadAttention": ("embed_dim",),
}
_SOFTMAX = frozenset({"Softmax", "LogSoftmax", "Softmax2d"})
#: At most this many layers are recorded (a 10,000-layer model still gives a readable sidecar).
MAX_LAYERS = 2000


def _dtype(torch: Any, value: Any) -> str | None:
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


def _dims(module: Any, kind: str) -> tuple[tuple[str, int], ...]:
    if kind.startswith("Conv") and getattr(module, "groups", 1) != 1:
        return ()  # grouped/depthwise convolutions are not Tensor Core GEMMs of these sizes
    out = []
    for attr in _DIMS.get(kind, ()):
        value = getattr(module, attr, None)
        if type(value) is int and value > 0:
            out.append((attr, value))
    return tuple(out)


def _layer(torch: Any, name: str, module: Any, where: str | None) -> AuditLayer:
    kind = type(module).__name__
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor):
        weight = next(iter(module.parameters(recurse=False)), None)
    channels_last = None
    if kind in ("Conv2d", "ConvTranspose2d") and isinstance(weight, torch.Tensor):
        channels_last = bool(
            weight.dim() == 4
            and weight.is_contiguous(memory_format=torch.channels_last)
            and not weight.is_contiguous()
        )
    return AuditLayer(
        name=name,
        kind=kind,
        defined_at=where,
        compute_dtype=_dtype(torch, getattr(weight, "dtype", None)),
        dims=_dims(module, kind),
        activation="softmax" if kind in _SOFTMAX else None,
        channels_last=channels_last,
    )


def _tf32(torch: Any) -> tuple[str, str, str]:
    """(matmul TF32 on, float32 matmul precision, cuDNN TF32 on), read through the new
    ``fp32_precision`` API first: once a script uses it, reading the legacy flags raises."""
    matmul = getattr(torch.backends.cuda.matmul, "fp32_precision", "none")
    conv = getattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision", "none")
    precision = str(torch.get_float32_matmul_precision())
    if matmul in ("tf32", "ieee"):
        matmul_on = matmul == "tf32"
    else:
        try:
            matmul_on = bool(torch.backends.cuda.matmul.allow_tf32)
        except RuntimeError:
            matmul_on = precision in ("high", "medium")
        matmul_on = matmul_on or precision in ("high", "medium")
    if conv in ("tf32", "ieee"):
        conv_on = conv == "tf32"
    else:
        try:
            conv_on = bool(torch.backends.cudnn.allow_tf32)
        except RuntimeError:
            conv_on = True
    return str(matmul_on), precision, str(conv_on)


class _RecordedProp:
    """A ``torch.backends.cudnn`` flag (a data descriptor on its module class) that records
    where the script sets it."""

    def __init__(self, prop: Any, key: AuditKey, audit: TorchAudit) -> None:
        self.prop, self.key, self.audit = prop, key, audit

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self.prop.__get__(obj, objtype)

    def __set__(self, obj: Any, value: Any) -> None:
        self.prop.__set__(obj, value)
        self.audit.set_here(self.key)


_CUDNN_FLAGS = {
    "benchmark": AuditKey.TORCH_CUDNN_BENCHMARK,
    "allow_tf32": AuditKey.TORCH_CUDNN_TF32,
}
_MATMUL_FLAGS = {
    "allow_tf32": AuditKey.TORCH_MATMUL_TF32,
    "fp32_precision": AuditKey.TORCH_MATMUL_TF32,
}


class TorchAudit:
    """Collects the facts while the script runs; :meth:`snapshot` gives them as a
    :class:`ModelAudit`."""

    def __init__(self, torch: Any, script: Path, tree: Any) -> None:
        self.torch = torch
        self.locate = Locator(script)
        self.lines = setting_lines(tree, script)
        self.modules: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
        self.uses: list[AuditSetting] = []
        self.layers: dict[int, AuditLayer] = {}
        self.set_at: dict[AuditKey, str] = {}  # where the running script set each flag
        self.hooked: set[AuditKey] = set()  # flags whose setter is hooked (no source fallback)
        self.settings: list[AuditSetting] | None = None  # read when the script ended

    def set_here(self, key: AuditKey) -> None:
        where = self.locate.here(3)
        if where is not None:
            self.set_at[key] = where

    @contextmanager
    def _flags(self) -> Iterator[None]:
        """Record where the script sets the cuDNN and cuBLAS flags: descriptors on the cuDNN
        module's class, ``__setattr__`` of the matmul object. A torch whose internals differ is
        left alone, and the script's source says where instead."""
        torch, audit = self.torch, self
        cudnn_cls = type(torch.backends.cudnn)
        saved = {n: vars(cudnn_cls)[n] for n in _CUDNN_FLAGS if n in vars(cudnn_cls)}
        matmul_cls = type(torch.backends.cuda.matmul)
        setattr_ = vars(matmul_cls).get("__setattr__")
        for name, prop in saved.items():
            setattr(cudnn_cls, name, _RecordedProp(prop, _CUDNN_FLAGS[name], self))
            self.hooked.add(_CUDNN_FLAGS[name])
        if setattr_ is not None:

            def recorded(obj: Any, name: str, value: Any) -> None:
                setattr_(obj, name, value)
                if name in _MATMUL_FLAGS:
                    audit.set_here(_MATMUL_FLAGS[name])

            setattr(matmul_cls, "__setattr__", recorded)  # noqa: B010 (mypy: a method)
            self.hooked.add(AuditKey.TORCH_MATMUL_TF32)
        self.hooked.add(AuditKey.TORCH_MATMUL_PRECISION)
        try:
            with calls_recorded(
                torch,
                "set_float32_matmul_precision",
                AuditKey.TORCH_MATMUL_PRECISION,
                self.set_at,
                self.locate,
            ):
                yield
        finally:
            for name, prop in saved.items():
                setattr(cudnn_cls, name, prop)
            if setattr_ is not None:
                setattr(matmul_cls, "__setattr__", setattr_)  # noqa: B010

    def _use(self, key: AuditKey, value: str) -> None:
        entry = AuditSetting(key.value, value, self.locate.here(3))
        if entry not in self.uses:
            self.uses.append(entry)

    @contextmanager
    def installed(self) -> Iterator[None]:
        torch, audit = self.torch, self
        module_init = torch.nn.Module.__init__
        autocast_enter = torch.amp.autocast_mode.autocast.__enter__
        scaler_init = torch.amp.GradScaler.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            module_init(self, *args, **kwargs)
            if self not in audit.modules:  # the innermost class's __init__ runs this first
                audit.modules[self] = audit.locate.here(2)

        def enter(self: Any) -> Any:
            result = autocast_enter(self)
            if getattr(self, "_enabled", True):
                dtype = _dtype(torch, getattr(self, "fast_dtype", None)) or "unknown"
                audit._use(AuditKey.TORCH_AUTOCAST, f"{dtype} on {getattr(self, 'device', '?')}")
            return result

        def scaler(self: Any, *args: Any, **kwargs: Any) -> None:
            scaler_init(self, *args, **kwargs)
            enabled = getattr(self, "_enabled", True)
            audit._use(AuditKey.TORCH_GRAD_SCALER, "created" if enabled else "disabled")

        torch.nn.Module.__init__ = init
        torch.amp.autocast_mode.autocast.__enter__ = enter
        torch.amp.GradScaler.__init__ = scaler
        # The script's switches are put back when it ends (a second capture in this process,
        # a test or a notebook, starts from the same state); the legacy TF32 flags are left:
        # reading them after the new API was used raises.
        benchmark, precision = torch.backends.cudnn.benchmark, torch.get_float32_matmul_precision()
        try:
            with self._flags():
                yield
        finally:
            self.settings = self._settings()  # as the script left them, before they go back
            torch.backends.cudnn.benchmark = benchmark
            torch.set_float32_matmul_precision(precision)
            torch.nn.Module.__init__ = module_init
            torch.amp.autocast_mode.autocast.__enter__ = autocast_enter
            torch.amp.GradScaler.__init__ = scaler_init

    def collect_layers(self) -> None:
        """Record the live layers now (called at the end of the recorded window, while the
        model still exists, and again when the script ends for anything built later)."""
        live = list(self.modules.items())
        children = {id(c) for m, _ in live for c in m.children()}
        for root, _ in live:
            if id(root) in children:
                continue
            prefix = type(root).__name__
            for path, module in root.named_modules():
                if len(self.layers) >= MAX_LAYERS:
                    return
                kind = type(module).__name__
                if id(module) in self.layers or (kind not in _DIMS and kind not in _SOFTMAX):
                    continue
                name = f"{prefix}.{path}" if path else prefix
                self.layers[id(module)] = _layer(self.torch, name, module, self.modules.get(module))

    def _settings(self) -> list[AuditSetting]:
        torch = self.torch
        matmul, precision, conv = _tf32(torch)
        values = {
            AuditKey.TORCH_MATMUL_TF32: matmul,
            AuditKey.TORCH_MATMUL_PRECISION: precision,
            AuditKey.TORCH_CUDNN_TF32: conv,
            AuditKey.TORCH_CUDNN_BENCHMARK: str(bool(torch.backends.cudnn.benchmark)),
        }
        out = [AuditSetting(AuditKey.DEVICE.value, "cpu")]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            with suppress(RuntimeError, AssertionError):
                major, minor = torch.cuda.get_device_capability()
                out = [
                    AuditSetting(AuditKey.DEVICE.value, str(torch.cuda.get_device_name())),
                    AuditSetting(AuditKey.GPU_CC.value, f"{major}.{minor}"),
                ]
        out += [AuditSetting(k.value, v, self._where(k)) for k, v in values.items()]
        return out

    def _where(self, key: AuditKey) -> str | None:
        if key in self.set_at:
            return self.set_at[key]
        return None if key in self.hooked else self.lines.get(key)

    def snapshot(self) -> ModelAudit:
        self.collect_layers()
        layers = sorted(self.layers.values(), key=lambda x: x.name)
        return ModelAudit(
            framework="pytorch",
            layers=tuple(layers),
            settings=(*(self.settings or self._settings()), *self.uses),
        )
