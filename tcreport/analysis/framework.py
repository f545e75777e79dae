"""Which framework's words a fix takes: the one decision, read by the verdict's why-not rows and
by every rule (``torch.autocast`` is no use to a Keras user, ``tf.config`` none to a JAX user).

The run's metadata names the framework when the profiler recorded it; a trace that does not
(an Nsight Systems export, a bare Kineto file) is told by its op names: ``aten::`` and
``autograd::`` are PyTorch's, ``tf_``/``XLA`` prefixes and ``Scope/Op`` paths TensorFlow's.
JAX runs say so in their XSpace; they share XLA's advice with TensorFlow but not its switches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice

TORCH, TF, JAX, ANY = "torch", "tf", "jax", "any"
FLAVOURS = (TORCH, TF, JAX, ANY)

_TF = re.compile(r"tensorflow|keras|\btf\b|xla", re.IGNORECASE)
#: Op names looked at when the metadata is silent: enough to see a framework's prefixes, bounded
#: however many distinct ops a trace has.
NAMES_LOOKED_AT = 200


def flavour(framework: str | None, op_names: Iterable[str] = ()) -> str:
    """``torch``, ``tf`` (TensorFlow, Keras, XLA), ``jax`` or ``any`` (unknown). A flavour word
    given as ``framework`` is returned as is."""
    fw = (framework or "").strip().lower()
    if fw in FLAVOURS:
        return fw
    if "jax" in fw:
        return JAX
    if "torch" in fw:
        return TORCH
    if fw and _TF.search(fw):
        return TF
    names = list(islice(op_names, NAMES_LOOKED_AT))
    if any(n.startswith("aten::") or "autograd::" in n for n in names):
        return TORCH
    if any(n.startswith(("tf_", "XLA", "xla")) or ("/" in n and n[:1].isupper()) for n in names):
        return TF
    return ANY
