"""The XSpace protobuf messages, built from a descriptor at run time.

Why not import ``xplane_pb2``: xprof does not ship it, and TensorFlow's copy would make reading a
profile depend on installing TensorFlow. The message layout (tsl/profiler/protobuf/xplane.proto) has
been stable since TF 2.2, so declaring the few fields tcreport reads is enough; protobuf skips the
fields it is not told about. Only the ``google.protobuf`` runtime (a dependency of xprof) is needed.
"""

from __future__ import annotations

import importlib
from typing import Any

_PACKAGE = "tcreport.xplane"
_cache: dict[str, Any] = {}

# (message, [(field name, number, type, label, message type name or "")]); types use
# FieldDescriptorProto enums: 1 double, 2 float(unused), 3 int64, 4 uint64, 9 string, 11 message,
# 12 bytes. Label 1 optional, 3 repeated.
_MESSAGES: tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...]], ...] = (
    (
        "XStat",
        (
            ("metadata_id", 1, 3, 1, ""),
            ("double_value", 2, 1, 1, ""),
            ("uint64_value", 3, 4, 1, ""),
            ("int64_value", 4, 3, 1, ""),
            ("str_value", 5, 9, 1, ""),
            ("bytes_value", 6, 12, 1, ""),
            ("ref_value", 7, 4, 1, ""),
        ),
    ),
    (
        "XEvent",
        (
            ("metadata_id", 1, 3, 1, ""),
            ("offset_ps", 2, 3, 1, ""),
            ("num_occurrences", 5, 3, 1, ""),
            ("duration_ps", 3, 3, 1, ""),
            ("stats", 4, 11, 3, "XStat"),
        ),
    ),
    (
        "XLine",
        (
            ("id", 1, 3, 1, ""),
            ("display_id", 10, 3, 1, ""),
            ("name", 2, 9, 1, ""),
            ("display_name", 11, 9, 1, ""),
            ("timestamp_ns", 3, 3, 1, ""),
            ("duration_ps", 9, 3, 1, ""),
            ("events", 4, 11, 3, "XEvent"),
        ),
    ),
    (
        "XEventMetadata",
        (
            ("id", 1, 3, 1, ""),
            ("name", 2, 9, 1, ""),
            ("display_name", 4, 9, 1, ""),
            ("metadata", 3, 12, 1, ""),
            ("stats", 5, 11, 3, "XStat"),
        ),
    ),
    ("XStatMetadata", (("id", 1, 3, 1, ""), ("name", 2, 9, 1, ""), ("description", 3, 9, 1, ""))),
    (
        "XPlane",
        (
            ("id", 1, 3, 1, ""),
            ("name", 2, 9, 1, ""),
            ("lines", 3, 11, 3, "XLine"),
            ("event_metadata", 4, 11, 3, "XPlane.EventMetadataEntry"),
            ("stat_metadata", 5, 11, 3, "XPlane.StatMetadataEntry"),
            ("stats", 6, 11, 3, "XStat"),
        ),
    ),
    (
        "XSpace",
        (
            ("planes", 1, 11, 3, "XPlane"),
            ("errors", 2, 9, 3, ""),
            ("warnings", 3, 9, 3, ""),
            ("hostnames", 4, 9, 3, ""),
        ),
    ),
)


def message_class(
    package: str,
    messages: tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...]], ...],
    root: str,
) -> Any:
    """The ``root`` message class of ``messages`` declared in ``package`` (built once per
    process): the XSpace here, the HLO of :mod:`.hlo`."""
    key = f"{package}.{root}"
    if key in _cache:
        return _cache[key]
    # import_module: protobuf comes with xprof (the [xplane] extra), without type stubs.
    descriptor_pb2 = importlib.import_module("google.protobuf.descriptor_pb2")
    descriptor_pool = importlib.import_module("google.protobuf.descriptor_pool")
    message_factory = importlib.import_module("google.protobuf.message_factory")

    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"{package.replace('.', '_')}.proto", package=package, syntax="proto3"
    )
    for msg_name, fields in messages:
        msg = fdp.message_type.add(name=msg_name)
        for fname, number, ftype, label, type_name in fields:
            f = msg.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = f".{package}.{type_name}"
        if msg_name == "XPlane":
            for entry, value in (
                ("EventMetadataEntry", "XEventMetadata"),
                ("StatMetadataEntry", "XStatMetadata"),
            ):
                nested = msg.nested_type.add(name=entry)
                nested.options.map_entry = True
                nested.field.add(name="key", number=1, type=3, label=1)
                nested.field.add(
                    name="value", number=2, type=11, label=1, type_name=f".{package}.{value}"
                )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(key))
    _cache[key] = cls
    return cls


def xspace_class() -> Any:
    """The ``XSpace`` message class (built once per process)."""
    return message_class(_PACKAGE, _MESSAGES, "XSpace")


def parse_xspace(data: bytes) -> Any:
    """Parse serialized XSpace bytes; raises ``google.protobuf.message.DecodeError`` on garbage."""
    space = xspace_class()()
    space.ParseFromString(data)
    return space
