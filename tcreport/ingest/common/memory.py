"""Handing freed memory back to the OS between the phases of a run."""

from __future__ import annotations

import contextlib
import ctypes

import pyarrow as pa


def release_free_memory() -> None:
    """Hand freed memory back to the OS between phases. glibc keeps what a phase frees (in each
    thread's arena) and Arrow's allocator keeps freed pages too, all of it counting against the
    peak RSS of the phase after: half a GiB held by one allocator while the other asks the OS for
    more on the 3.6 M-kernel nsys export, ~75 MiB of a 230 MiB Kineto trace's decoded events
    still held when its analysis starts. Both calls take milliseconds; without glibc (macOS,
    musl) the first is a no-op.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)
    pa.default_memory_pool().release_unused()
