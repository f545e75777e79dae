"""Running a training script under a profiler: DLProf, Nsight Systems, PyTorch's or TensorFlow's.

This package only produces raw profiles on disk (what each profiler writes, kept as is) and the
facts the profilers cannot record (the steps kept, the in-process model audit) in a sidecar beside
them, and says where they are; reading them is ingest's job and judging them is analysis's and the
rules'. It never imports analysis, so a capture works even where the report cannot be built.
"""

from __future__ import annotations

from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest

__all__ = ["Backend", "CaptureResult", "Framework", "ProfileRequest", "capture", "plan"]


def plan(request: ProfileRequest) -> tuple[Framework, Backend, str | None]:
    """Check what can be checked before the script runs (the script, the backend, the output
    folder) and pick the backend (``auto`` resolves here); returns the script's framework, the
    backend and why ``auto`` chose it."""
    from tcreport.capture import backends

    return backends.check(request)


def capture(request: ProfileRequest) -> CaptureResult:
    """Run the script under the backend :func:`plan` picks."""
    from tcreport.capture import backends

    return backends.run(request)
