"""What an NVTX range's text says: an op (and of which type, dtype, shapes), a DLProf module
marker, or a plain range, per the conventions listed in :mod:`tcreport.ingest.nsys.nvtx`.

Parsing runs over distinct texts only, and with Arrow kernels (RE2) rather than Python per text:
autograd-nvtx exports number every range (``op_id = 993403``), so a long run has millions of
distinct texts. Only dict-like records (DLProf, TensorFlow), which have no fixed field order, go
through Python, and only those texts.

TensorFlow (NVIDIA's builds, ``TF_ENABLE_NVTX_RANGES=1``; formats read from TensorFlow's sources,
not from a real export) names each executed node ``"<OpType>: <node>"``, or with
``TF_ENABLE_NVTX_RANGES_DETAILED=1`` a compact JSON-like record ``{"op":..,"name":..,"args":[..],
"attrs":{..}}``. The short form is too plain to tell from a user's ``Epoch: 3``, so it becomes an
op only in TensorFlow mode (:meth:`Parsed.with_tensorflow`); the record form is always read.
Ops in :data:`TF_CONTAINERS` wrap other ops' ranges and stay plain ranges in either form.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import int64s as _codes_of

#: CPython 3.11's AST constructor keeps its recursion counter in per-interpreter state, shared by
#: threads (gh-106905): two threads in ``ast.literal_eval`` at once can fail with "SystemError:
#: AST constructor recursion depth mismatch" (seen here on 3.11.7, in the NVTX hostile tests). The
#: NVTX chunks are parsed in several threads, so the DLProf records of a chunk are parsed under it.
_AST_LOCK = threading.Lock()

OTHER, DLPROF_OP, DLPROF_MARKER, TORCH_OP, TF_OP = range(5)
_TORCH = (
    r"^(?P<name>.+?)(?:, seq = (?P<seq>\d+))?(?:, op_id = (?P<opid>\d+))?"
    r"(?:, sizes = (?P<sizes>\[.*?\]))?(?:, input_op_ids = \[.*\])?$"
)
_NAMESPACED = r"^[A-Za-z_][\w.]*::[A-Za-z_]\w*$"
# _TORCH's texts with a comma-free name and no sizes, and of those the ones with a seq number
_TORCH_FAST = r"^[^,\n]+(?:, seq = \d+)?(?:, op_id = \d+)?(?:, input_op_ids = \[.*\])?$"
_TORCH_SEQ = r"^[^,\n]+, seq = \d"
# OpDef types are [A-Z][A-Za-z0-9>_]* (">" unseen, left out); internal ones begin with "_". Node
# names are [A-Za-z0-9.][A-Za-z0-9_.>/-]* (XLA thunks: "MatMul: cluster_0_1/xla_run/dense/MatMul";
# "_" first when the cluster name is empty). One ": " and no spaces, so "Note: see above" fails.
_TF_TYPE = r"_*[A-Z]\w*"
_TF_NODE = rf"^(?P<type>{_TF_TYPE}): (?P<node>[A-Za-z0-9._][\w.>/-]*)$"
_FUNC_STACK = re.compile(r"'funcStack': '([^']*)'")
_DEDUP = re.compile(r"\((\d+)\)(?=/|$)")
_ANGLE = re.compile(r"<([\w.]+)>")
# The detailed record is not always JSON (attrs print `[?,784]`, `nan`, unquoted-quote strings),
# so it is read by regex: op and name lead in fixed order, then args, then attrs.
_TF_JSON = re.compile(rf'^\{{"op":\s*"(?P<op>{_TF_TYPE})"(?:,\s*"name":\s*"(?P<name>[^"]*)")?')
_TF_ARGS = re.compile(r'"args":\s*\[')
_TF_SHAPE = re.compile(r'"shape":\s*(null|\[[^\[\]]*\])')
_TF_DIM = re.compile(r"\?|-?[0-9]+")
_TF_DTYPE_ATTR = re.compile(r'[{,]\s*"(T|dtype)":\s*"([\w&]+)"')
# TensorFlow's spellings (NVIDIA's numpy-like ones with "bfloat32", a bug in its source, for
# bfloat16 and "&" for refs; DataType_Name lowercased in others) to the numpy ones DLProf uses.
_TF_DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat32": "bfloat16"}

#: Op types whose range encloses other ops' ranges on the same thread: XLA's launch ops (thunk
#: ranges run inside them) and function calls / functional control flow (their body's nodes when
#: run inline; an inference from the executor, not seen in an export). The reader attributes a
#: kernel to the outermost op, so as ops these would take their inner ops' kernels; as plain ranges
#: they become the scope path of those ops instead. Their label stays ``"Type: node"`` (the JSON form
#: is rewritten so): the text nsys shows, and the same whether or not the detailed form was on.
#: ``_XlaCompile`` is not one: it wraps no op ranges, and any kernel it launches (autotuning) is its
#: own; neither are ``_Send``/``_Recv`` (their copies are theirs).
TF_CONTAINERS = frozenset(
    {
        "_XlaRun",
        "XlaLaunch",
        "StatefulPartitionedCall",
        "PartitionedCall",
        "While",
        "StatelessWhile",
        "If",
        "StatelessIf",
        "Case",
        "StatelessCase",
    }
)


_FIELDS = ("label", "dtype", "shapes", "func_stack", "tf_label", "node")


@dataclass(frozen=True)
class Parsed:
    """Per distinct text: its kind, and as Arrow strings its label (op type for ops, the cleaned
    name for other ranges), dtype, input shapes, DLProf module path, TensorFlow op type
    (``MatMul: dense/MatMul``; applied only once a domain says the run is TensorFlow) and
    TensorFlow node name."""

    kind: np.ndarray
    label: pa.Array
    dtype: pa.Array
    shapes: pa.Array
    func_stack: pa.Array
    tf_label: pa.Array
    node: pa.Array  # TensorFlow node name (``dense_1/MatMul``): the op's name and scope

    @staticmethod
    def concat(parts: list[Parsed]) -> Parsed:
        def cat(name: str) -> pa.Array:
            return pa.concat_arrays(
                [getattr(p, name) for p in parts] or [pa.array([], pa.string())]
            )

        kind = np.concatenate([p.kind for p in parts]) if parts else np.zeros(0, np.int8)
        return Parsed(kind, *(cat(n) for n in _FIELDS))

    def take(self, rows: pa.Array) -> Parsed:
        kind = self.kind[np.asarray(rows.to_numpy(zero_copy_only=False), dtype=np.int64)]
        return Parsed(kind, *(getattr(self, n).take(rows) for n in _FIELDS))

    def collapse(self) -> tuple[np.ndarray, Parsed]:
        """Texts that parse alike as one entry: (entry of each text, the distinct entries).

        Everything after parsing reads only these fields, never the text. An autograd-nvtx
        export numbers every range (``op_id = 993403``), so millions of distinct texts parse to
        a few thousand results; collapsed, the ranges carry small codes into a small table."""
        key = self.kind.astype(np.int64)
        if not len(key):
            return key, self
        for col in (getattr(self, n) for n in _FIELDS):
            if col.null_count == len(col):
                continue
            c = _codes_of(pc.dictionary_encode(col).indices)
            packed = (key + 1) * (int(c.max(initial=0)) + 2) + (c + 1)
            key = _codes_of(pc.dictionary_encode(pa.array(packed, pa.int64())).indices)
        if self.label.null_count == len(key):  # kind alone: still number in first-seen order
            key = _codes_of(pc.dictionary_encode(pa.array(key, pa.int64())).indices)
        first = np.flatnonzero(key > np.maximum.accumulate(np.r_[-1, key[:-1]]))
        return key, self.take(pa.array(first))

    def with_tensorflow(self) -> Parsed:
        """``Type: node`` plain ranges become TensorFlow ops (TF_ENABLE_NVTX_RANGES' short form),
        but for :data:`TF_CONTAINERS`. Only for a TensorFlow run: ``Epoch: 3`` has the same form."""
        mask = pc.and_(pc.is_valid(self.tf_label), pa.array(self.kind == OTHER))
        kind = np.where(mask.to_numpy(zero_copy_only=False), TF_OP, self.kind).astype(np.int8)
        return replace(self, kind=kind, label=pc.if_else(mask, self.tf_label, self.label))


def is_op(kind: np.ndarray) -> np.ndarray:
    flags: np.ndarray = (kind == DLPROF_OP) | (kind == TORCH_OP) | (kind == TF_OP)
    return flags


def parse(texts: pa.Array, tf_domain: bool = False) -> Parsed:
    n = len(texts)
    texts = texts.cast(pa.string())
    name, has_seq, shapes = _torch(texts)
    label = pc.if_else(pc.is_valid(name), name, texts)
    namespaced = pc.match_substring_regex(name, _NAMESPACED)
    is_torch = pc.fill_null(pc.or_(has_seq, namespaced), False).to_numpy(zero_copy_only=False)
    kind = np.where(is_torch, TORCH_OP, OTHER).astype(np.int8)
    nulls = pa.nulls(n, pa.string())
    dtype, func_stack, node = nulls, nulls, nulls
    dictish = np.flatnonzero(pc.starts_with(texts, "{").to_numpy(zero_copy_only=False))
    if len(dictish):
        raw = texts.take(pa.array(dictish)).to_pylist()
        with _AST_LOCK:
            recs = [_parse_dict(str(t)) for t in raw]
        hit = [i for i, r in enumerate(recs) if r is not None]
        rows = dictish[hit]
        mask = np.zeros(n, dtype=bool)
        mask[rows] = True
        got = [r for r in recs if r is not None]
        kind[rows] = [r[0] for r in got]
        am = pa.array(mask)

        def put(col: pa.Array, i: int, keep: bool) -> pa.Array:
            """Field ``i`` of each record; with ``keep``, a record without it keeps ``col``'s."""
            vals = [r[i] for r in got]
            if keep:
                was = col.take(pa.array(rows)).to_pylist()
                vals = [v if v is not None else w for v, w in zip(vals, was, strict=True)]
            return pc.replace_with_mask(col, am, pa.array(vals, pa.string()))

        label = put(label, 1, keep=True)
        dtype, shapes, func_stack = put(dtype, 2, False), put(shapes, 3, True), put(nulls, 4, False)
        node = put(nulls, 5, False)
    # "Type: node" needs ": " and cannot be a dict; RE2 only runs on the few texts that have it
    maybe = np.flatnonzero(pc.match_substring(texts, ": ").to_numpy(zero_copy_only=False))
    maybe = maybe[kind[maybe] == OTHER] if len(maybe) else maybe
    tf_label = nulls
    if len(maybe):
        found = pc.extract_regex(texts.take(pa.array(maybe)), _TF_NODE)
        types = pc.if_else(found.is_valid(), found.field("type"), None)
        container = pc.is_in(types, value_set=pa.array(sorted(TF_CONTAINERS), pa.string()))
        types = pc.if_else(pc.fill_null(container, False), pa.scalar(None, pa.string()), types)
        mask = np.zeros(n, dtype=bool)
        mask[maybe] = True
        tf_label = pc.replace_with_mask(nulls, pa.array(mask), types)
        nodes = pc.if_else(pc.is_valid(types), found.field("node"), None)
        node = pc.replace_with_mask(node, pa.array(mask), nodes)
    parsed = Parsed(kind, label, dtype, shapes, func_stack, tf_label, node)
    return parsed.with_tensorflow() if tf_domain else parsed


def _torch_regex(texts: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(name, has a sequence number or sizes, sizes) of the autograd-nvtx form, by :data:`_TORCH`;
    name is null where the text does not match (empty or null)."""
    m = pc.extract_regex(texts, _TORCH)
    matched = m.is_valid()
    name = pc.if_else(matched, m.field("name"), None)  # RE2 fills a failed match with ""
    # RE2 gives "" for an optional group that did not take part
    has_seq = pc.or_(pc.not_equal(m.field("seq"), ""), pc.not_equal(m.field("sizes"), ""))
    has_seq = pc.fill_null(pc.and_(matched, has_seq), False)
    sizes = m.field("sizes")
    shapes = pc.if_else(pc.and_(matched, pc.not_equal(sizes, "")), sizes, None)
    return name, has_seq, shapes


def _torch(texts: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """:func:`_torch_regex`, fast for the common texts. Extracting :data:`_TORCH`'s groups costs
    ~0.6 µs a text, and an autograd-nvtx export has tens of millions of distinct ones; but a
    text whose name has no comma and that records no sizes (``aten::add, seq = 5, op_id = 9``)
    is settled by two match tests (RE2 runs those as a DFA) and a split at the first ", ": the
    name cannot end before that comma, and the suffix's parts have distinct fixed prefixes.
    Every other text goes through the full expression."""
    fast = pc.fill_null(pc.match_substring_regex(texts, _TORCH_FAST), False)
    if not pc.any(fast).as_py():
        return _torch_regex(texts)
    head = pc.list_element(pc.split_pattern(texts, ", ", max_splits=1), 0)
    name = pc.if_else(fast, head, None)
    has_seq = pc.and_(fast, pc.fill_null(pc.match_substring_regex(texts, _TORCH_SEQ), False))
    shapes = pa.nulls(len(texts), pa.string())
    slow = np.flatnonzero(~fast.to_numpy(zero_copy_only=False))
    if len(slow):
        mask = pa.array(~fast.to_numpy(zero_copy_only=False))
        s_name, s_seq, s_shapes = _torch_regex(texts.take(pa.array(slow)))
        name = pc.replace_with_mask(name, mask, s_name)
        has_seq = pc.replace_with_mask(has_seq, mask, s_seq)
        shapes = pc.replace_with_mask(shapes, mask, s_shapes)
    return name, has_seq, shapes


Record = tuple[int, str | None, str | None, str | None, str | None, str | None]


def _parse_dict(text: str) -> Record | None:
    """DLProf plugin records are Python literals; TensorFlow's detailed records are JSON.
    Returns (kind, label, dtype, shapes, func_stack, node); None for a text of no known form."""
    tf = _TF_JSON.match(text)
    if tf:
        op, node = tf.group("op"), tf.group("name")
        if op in TF_CONTAINERS:
            return OTHER, op if node is None else f"{op}: {node}", None, None, None, None
        return TF_OP, op, _tf_dtype(text, tf.end()), _tf_shapes(text, tf.end()), None, node or None
    fs = _FUNC_STACK.search(text)
    if fs and text.startswith("{'traceMarker'"):
        stack = _DEDUP.sub(r"[\1]", _ANGLE.sub(r"\1", fs.group(1)))
        return DLPROF_MARKER, None, None, None, stack, None
    if not text.startswith("{'mod'"):
        return None
    try:
        rec = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("op"), str):
        return None
    args = [a for a in rec.get("args", []) if isinstance(a, dict)]
    tensors = [a for a in args if "shape" in a]
    shapes = "[" + ", ".join(str(list(a["shape"])) for a in tensors) + "]" if tensors else None
    dtypes = [str(a["dtype"]) for a in args if a.get("dtype")]
    return DLPROF_OP, rec["op"], dtypes[0] if dtypes else None, shapes, None, None


def _tf_shapes(text: str, pos: int) -> str | None:
    """Input shapes of a detailed TensorFlow record as DLProf's ``[[32, 784], [784, 10]]``.

    Unknown dims stay ``?`` (``[[?, 784]]``): the text shows what TensorFlow printed, and
    ``parse_shapes`` then rejects it rather than reading -1 as a misaligned dimension. Shapes
    stop at the first input of unknown rank (``null``), so the ones kept are in input order; the
    bare ``null`` after the 10th input (the list was cut) has no shape and is skipped.
    """
    args = _TF_ARGS.search(text, pos)
    if args is None:
        return None
    end = text.find('"attrs":', args.end())
    out: list[str] = []
    for m in _TF_SHAPE.finditer(text, args.end(), end if end >= 0 else len(text)):
        if m.group(1) == "null":
            break
        dims = [d.strip() for d in m.group(1)[1:-1].split(",") if d.strip()]
        if not all(_TF_DIM.fullmatch(d) for d in dims):
            return None
        out.append("[" + ", ".join(dims) + "]")
    return "[" + ", ".join(out) + "]" if out else None


def _tf_dtype(text: str, pos: int) -> str | None:
    """The ``T`` attr of a detailed TensorFlow record (else ``dtype``), spelt as numpy does."""
    at = text.find('"attrs":', pos)
    if at < 0:
        return None
    found: dict[str, str] = {}
    for m in _TF_DTYPE_ATTR.finditer(text, at):
        found.setdefault(m.group(1), m.group(2))
    raw = found.get("T") or found.get("dtype")
    if raw is None:
        return None
    s = raw.lower().rstrip("&").removeprefix("dt_")
    return None if s in ("", "unknown", "invalid") else _TF_DTYPES.get(s, s)
