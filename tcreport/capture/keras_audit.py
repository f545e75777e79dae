"""The Keras model audit: the model's layers, dtype policies and training setup, read in process.

A CPU profile records no dtypes for most ops and no layer sizes at all, yet the model object holding
both is in the same process. Hooks on ``Layer.__init__``, the optimizer, ``compile`` / ``fit`` and
``tf.function`` note where the script built each layer and how it trains (``fit`` or a custom
loop, a ``LossScaleOptimizer`` or not, XLA); :meth:`KerasAudit.snapshot` reads the live layers'
sizes and compute dtypes and the global settings. Facts only: the audit rules judge them. Every
hook calls the original first and is removed when the script ends.
"""

from __future__ import annotations

import gc
import importlib
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from tcreport.capture.audit_source import Locator, calls_recorded, setting_lines
from tcreport.model import AuditKey, AuditLayer, AuditSetting, ModelAudit

#: Layer classes whose sizes decide Tensor Core use, and the attributes that hold them.
_DIMS = {
    "Dense": ("units",),
    "EinsumDense": (),
    "Conv1D": ("filters",),
    "Conv2D": ("filters",),
    "Conv3D": ("filters",),
    "Conv1DTranspose": ("filters",),
    "Conv2DTranspose": ("filters",),
    "Conv3DTranspose": ("filters",),
    "Embedding": ("input_dim", "output_dim"),
    "LSTM": ("units",),
    "GRU": ("units",),
    "MultiHeadAttention": ("key_dim",),
}
_OUTPUT_LIKE = frozenset({"Activation", "Softmax"})
MAX_LAYERS = 2000


def _activation(layer: Any) -> str | None:
    if type(layer).__name__ == "Softmax":
        return "softmax"
    fn = getattr(layer, "activation", None)
    name = getattr(fn, "__name__", None)
    return str(name) if isinstance(name, str) else None


def _dims(layer: Any, kind: str) -> tuple[tuple[str, int], ...]:
    if kind == "InputLayer":
        shape = getattr(layer, "batch_shape", None) or getattr(layer, "_batch_input_shape", None)
        if isinstance(shape, tuple | list) and len(shape) == 2 and type(shape[-1]) is int:
            return (("features", int(shape[-1])),)  # image inputs' channels are left alone
        return ()
    out = []
    for attr in _DIMS.get(kind, ()):
        value = getattr(layer, attr, None)
        if type(value) is int and value > 0:
            out.append((attr, value))
    return tuple(out)


class KerasAudit:
    def __init__(self, tf: Any, script: Path, tree: Any) -> None:
        self.tf = tf
        self.keras = tf.keras
        self.locate = Locator(script)
        self.lines = setting_lines(tree, script)
        self.layers: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
        self.uses: list[AuditSetting] = []
        self.functions: list[str] = []  # tf.function names, for a key node that never ran
        self.found: dict[int, AuditLayer] = {}
        self.set_at: dict[AuditKey, str] = {}  # where the running script called a setter
        self.settings: list[AuditSetting] | None = None  # read when the script ended

    def _use(self, key: AuditKey, value: str, skip: int = 3) -> None:
        entry = AuditSetting(key.value, value, self.locate.here(skip))
        if entry not in self.uses:
            self.uses.append(entry)

    @contextmanager
    def _patched(self, owner: Any, name: str, make: Any) -> Iterator[None]:
        original = getattr(owner, name)
        own = name in vars(owner)  # inherited (Model.fit is the trainer's): delete, not set, after
        setattr(owner, name, make(original))
        try:
            yield
        finally:
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

    def _layer_init(self, original: Any) -> Any:
        audit = self

        def init(layer: Any, *args: Any, **kwargs: Any) -> None:
            original(layer, *args, **kwargs)
            with suppress(TypeError):  # an unhashable subclass is simply not audited
                if layer not in audit.layers:
                    audit.layers[layer] = audit.locate.here(2)

        return init

    def _optimizer_init(self, original: Any) -> Any:
        audit = self

        def init(opt: Any, *args: Any, **kwargs: Any) -> None:
            original(opt, *args, **kwargs)
            name = type(opt).__name__
            if name == "LossScaleOptimizer":
                audit._use(AuditKey.KERAS_LOSS_SCALE, "used")
            else:
                audit._use(AuditKey.KERAS_OPTIMIZER, name)

        return init

    def _compile(self, original: Any) -> Any:
        audit = self

        def compile(model: Any, *args: Any, **kwargs: Any) -> Any:
            if "jit_compile" in kwargs:
                audit._use(AuditKey.KERAS_JIT, str(kwargs["jit_compile"]))
            return original(model, *args, **kwargs)

        return compile

    def _fit(self, original: Any) -> Any:
        audit = self

        def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            audit._use(AuditKey.KERAS_FIT, "called")
            jit = getattr(model, "jit_compile", None)
            if isinstance(jit, bool):
                audit._use(AuditKey.KERAS_JIT, str(jit))
            return original(model, *args, **kwargs)

        return fit

    def _function(self, original: Any) -> Any:
        audit = self

        def note(func: Any, kwargs: dict[str, Any]) -> None:
            name = getattr(func, "__name__", None)
            if isinstance(name, str) and name not in audit.functions:
                audit.functions.append(name)
            if "jit_compile" in kwargs:
                audit._use(AuditKey.KERAS_JIT, str(kwargs["jit_compile"]), skip=4)

        def function(func: Any = None, *args: Any, **kwargs: Any) -> Any:
            if func is None:
                decorator = original(None, *args, **kwargs)

                def deco(f: Any) -> Any:
                    note(f, kwargs)
                    return decorator(f)

                return deco
            note(func, kwargs)
            return original(func, *args, **kwargs)

        return function

    @contextmanager
    def _restored(self) -> Iterator[None]:
        """The script's global policy and TF32 switch are put back when it ends, as they were:
        a second capture in the same process (a test, a notebook) starts from the same state."""
        tf, keras = self.tf, self.keras
        policy = keras.mixed_precision.global_policy()
        tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
        try:
            yield
        finally:
            self.settings = self._settings()  # as the script left them, before they go back
            keras.mixed_precision.set_global_policy(policy)
            tf.config.experimental.enable_tensor_float_32_execution(tf32)

    @contextmanager
    def installed(self) -> Iterator[None]:
        keras = self.keras
        with ExitStack() as stack:
            stack.enter_context(self._restored())
            stack.enter_context(self._patched(keras.layers.Layer, "__init__", self._layer_init))
            stack.enter_context(
                self._patched(keras.optimizers.Optimizer, "__init__", self._optimizer_init)
            )
            stack.enter_context(self._patched(keras.Model, "compile", self._compile))
            stack.enter_context(self._patched(keras.Model, "fit", self._fit))
            stack.enter_context(self._patched(self.tf, "function", self._function))
            setters = [
                (self.tf.config.experimental, "enable_tensor_float_32_execution", AuditKey.TF_TF32),
                (keras.mixed_precision, "set_global_policy", AuditKey.KERAS_POLICY),
            ]
            with suppress(ImportError):  # Keras 3: tf.keras is a lazy alias of another module
                standalone = importlib.import_module("keras").mixed_precision
                if standalone is not keras.mixed_precision:
                    setters.append((standalone, "set_global_policy", AuditKey.KERAS_POLICY))
            for owner, name, key in setters:
                stack.enter_context(calls_recorded(owner, name, key, self.set_at, self.locate))
            yield

    def _record(self, layer: Any, output: bool) -> None:
        kind = type(layer).__name__
        if id(layer) in self.found and not output:
            return
        if kind not in _DIMS and kind not in _OUTPUT_LIKE and kind != "InputLayer" and not output:
            return
        if len(self.found) >= MAX_LAYERS:
            return
        compute = getattr(layer, "compute_dtype", None)
        self.found[id(layer)] = AuditLayer(
            name=str(layer.name),
            kind=kind,
            defined_at=self.layers.get(layer),
            compute_dtype=str(compute) if compute is not None else None,
            dims=_dims(layer, kind),
            activation=_activation(layer),
            output=output,
        )

    def adopt_live(self, model: Any = None) -> None:
        """For a model built before the hooks were installed (``tcreport.profile()``, the
        Keras callback): take its layers, optimizer and XLA setting from the live objects
        (their lines are unknown). With ``model`` (the callback's, trained by ``fit``) only its
        own; without, every Keras object alive in the process."""
        keras = self.keras
        if model is not None:
            self._note(AuditKey.KERAS_FIT, "called")
            inner = getattr(model, "_flatten_layers", None)
            objects = [*(inner() if callable(inner) else getattr(model, "layers", [])), model]
            objects.append(getattr(model, "optimizer", None))
        else:
            objects = gc.get_objects()
        for obj in objects:
            cls = type(obj)  # not isinstance(): some objects (torch.distributed) warn on __class__
            if issubclass(cls, keras.layers.Layer):
                if obj not in self.layers:
                    self.layers[obj] = None
                jit = getattr(obj, "jit_compile", None) if issubclass(cls, keras.Model) else None
                if isinstance(jit, bool):
                    self._note(AuditKey.KERAS_JIT, str(jit))
            elif issubclass(cls, keras.optimizers.Optimizer):
                if cls.__name__ == "LossScaleOptimizer":
                    self._note(AuditKey.KERAS_LOSS_SCALE, "used")
                else:
                    self._note(AuditKey.KERAS_OPTIMIZER, cls.__name__)

    def _note(self, key: AuditKey, value: str) -> None:
        entry = AuditSetting(key.value, value, None)
        if not any(u.key == entry.key and u.value == entry.value for u in self.uses):
            self.uses.append(entry)

    def collect_layers(self) -> None:
        """Record the live layers now (at the end of the window, while the model exists)."""
        for layer in list(self.layers.keys()):
            if isinstance(layer, self.keras.Model):
                inner = list(getattr(layer, "layers", []))
                if inner and type(layer).__name__ in ("Sequential", "Functional"):
                    self._record(inner[-1], output=True)
                continue
            self._record(layer, output=False)

    def _settings(self) -> list[AuditSetting]:
        tf, keras = self.tf, self.keras
        out = [AuditSetting(AuditKey.DEVICE.value, "cpu")]
        with suppress(AttributeError, RuntimeError, ValueError):
            gpus = tf.config.list_physical_devices("GPU")
            if gpus:
                details = tf.config.experimental.get_device_details(gpus[0])
                out = [AuditSetting(AuditKey.DEVICE.value, str(details.get("device_name", "GPU")))]
                cc = details.get("compute_capability")
                if isinstance(cc, tuple) and len(cc) == 2:
                    out.append(AuditSetting(AuditKey.GPU_CC.value, f"{cc[0]}.{cc[1]}"))
        with suppress(AttributeError, ValueError):
            policy = str(keras.mixed_precision.global_policy().name)
            at = self._line(AuditKey.KERAS_POLICY)
            out.append(AuditSetting(AuditKey.KERAS_POLICY.value, policy, at))
        with suppress(AttributeError):
            tf32 = str(bool(tf.config.experimental.tensor_float_32_execution_enabled()))
            out.append(AuditSetting(AuditKey.TF_TF32.value, tf32, self._line(AuditKey.TF_TF32)))
        return out

    def _line(self, key: AuditKey) -> str | None:
        return self.set_at.get(key) or self.lines.get(key)

    def snapshot(self) -> ModelAudit:
        self.collect_layers()
        layers = sorted(self.found.values(), key=lambda x: x.name)
        return ModelAudit(
            framework="keras",
            layers=tuple(layers),
            settings=(*(self.settings or self._settings()), *self.uses),
        )
