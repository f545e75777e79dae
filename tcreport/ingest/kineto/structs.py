"""What the msgspec parser decodes a Kineto trace into: structs that declare only the fields
the reader uses, so everything else (``Call stack`` strings, flow ids, the environment in
``metadata``) is skipped without becoming a Python object.

Every field is typed ``Any`` or a union of all JSON types, so an odd value in one event (a string
``tid``, a list as ``args``) is the same null it is with ``json``, never a failed read. Raw fields
(:mod:`.rawtext`) stay undecoded text.
"""

from __future__ import annotations

from typing import Any

import msgspec

NO_RAW = msgspec.Raw()


# JSON values are objects (a Struct in these unions) or one of these.
_Scalar = str | int | float | bool | None
_Other = list[Any] | _Scalar


class Args(
    msgspec.Struct,
    gc=False,
    rename={
        "eid": "External id",
        "eid_legacy": "external id",
        "dims": "Input Dims",
        "types": "Input type",
        "concrete": "Concrete Inputs",
        "coll_name": "Collective name",
        "in_nelems": "In msg nelems",
        "out_nelems": "Out msg nelems",
        "coll_dtype": "dtype",
        "group_size": "Group size",
        "pg_name": "Process Group Name",
    },
):
    correlation: Any = None
    eid: Any = msgspec.UNSET  # absent, not null, lets "external id" speak
    eid_legacy: Any = None
    device: Any = None
    stream: Any = None
    grid: msgspec.Raw = NO_RAW  # a few distinct triples over every kernel: see _triples
    block: msgspec.Raw = NO_RAW
    bytes: Any = None
    dims: msgspec.Raw = NO_RAW
    types: msgspec.Raw = NO_RAW
    concrete: msgspec.Raw = NO_RAW
    coll_name: Any = None
    in_nelems: Any = None
    out_nelems: Any = None
    coll_dtype: Any = None
    group_size: Any = None
    pg_name: Any = None


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Args | _Other = None


_Item = Event | _Other


class TorchEnv(msgspec.Struct, gc=False):
    torch_version: Any = None


class System(msgspec.Struct, gc=False):
    torch_env_info: TorchEnv | _Other = None


class Metadata(msgspec.Struct, gc=False):
    """Only the path to the torch version: the rest (the environment) is never decoded."""

    system: System | _Other = None


class Device(msgspec.Struct, gc=False):
    id: Any = None
    name: Any = None
    computeMajor: Any = None
    computeMinor: Any = None
    numSms: Any = None


class Doc(msgspec.Struct, gc=False):
    """``traceEvents`` stays undecoded text: a Raw is a view into the decoded text, so where it
    lies says which array the decoder kept (:mod:`.fast` checks it), then :data:`ITEMS` decodes it."""

    traceEvents: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    schemaVersion: Any = msgspec.UNSET
    cuda_runtime_version: Any = msgspec.UNSET
    baseTimeNanoseconds: Any = msgspec.UNSET
    metadata: Metadata | _Other | msgspec.UnsetType = msgspec.UNSET
    distributedInfo: dict[str, Any] | _Other | msgspec.UnsetType = msgspec.UNSET
    deviceProperties: list[Device | _Other] | dict[str, Any] | _Scalar | msgspec.UnsetType = (
        msgspec.UNSET
    )


DOC = msgspec.json.Decoder(Doc)
ITEMS = msgspec.json.Decoder(list[_Item])
