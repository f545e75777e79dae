"""Kernel names a profiler left mangled, made readable before the name rules judge them.

The PyTorch profiler (and a ``--print-kernel-base mangled`` ncu run, or an nsys export without
demangling) can hand over Itanium names (``_ZN17cutlass__5x_cudnn6KernelI...``). Read raw, the
name rules judged cuDNN's CUTLASS wgrad convolution a copy (``NoPermute`` in its template
arguments said "permute"), though Nsight Compute counted it the largest Tensor Core kernel of
the fp16 CNN in ``sample_traces/h200-torch-cnn-ncu``. So the analysis demangles first
(:func:`tcreport.kernel_names.readable`), once per distinct name through the columns'
dictionaries, and shows the readable name. Where the demangler rejects a name, the elided
readable form is shown and the mangled original kept as ``long_name``, for the rules that need
its template arguments and for the counter merge to match ncu's mangled names.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport.kernel_names import demangle, readable


def _mapped(chunk: pa.DictionaryArray) -> tuple[pa.Array, pa.Array] | None:
    """(readable names, originals kept where demangling failed) per row; None when no value of
    this chunk's dictionary is mangled."""
    values = chunk.dictionary.to_pylist()
    if not any(v and v.startswith("_Z") for v in values):
        return None
    shown = [readable(v) if v else v for v in values]
    kept = [  # the demangler rejected it: the readable form is elided, the original keeps it all
        v if v and s != v and demangle(v) == v else None for v, s in zip(values, shown, strict=True)
    ]
    names = pc.take(pa.array(shown, pa.string()), chunk.indices)
    originals = pc.take(pa.array(kept, pa.string()), chunk.indices)
    return names, originals


def with_readable_names(kernels: pa.Table) -> pa.Table:
    """``kernels`` with every mangled ``name`` demangled (unchanged when none is)."""
    col = kernels.column("name")
    mapped = [_mapped(c) if isinstance(c, pa.DictionaryArray) else None for c in col.chunks]
    if all(m is None for m in mapped):
        return kernels
    names, originals = [], []
    for chunk, m in zip(col.chunks, mapped, strict=True):
        if m is None:
            names.append(chunk.cast(pa.string()))
            originals.append(pa.nulls(len(chunk), pa.string()))
        else:
            names.append(m[0])
            originals.append(m[1])
    name = pc.dictionary_encode(pa.chunked_array(names, pa.string()))
    long_name = pc.coalesce(
        kernels.column("long_name").cast(pa.string()), pa.chunked_array(originals, pa.string())
    )
    out = kernels
    for field, values in (("name", name), ("long_name", pc.dictionary_encode(long_name))):
        i = out.schema.get_field_index(field)
        out = out.set_column(i, out.schema.field(i), values.cast(out.schema.field(i).type))
    schema.validate(out, schema.TableKind.KERNELS)
    return out
