"""Running a training script under a profiler: DLProf, Nsight Systems or the TensorFlow profiler.

This package only produces raw profiles on disk (what each profiler writes, kept as is) and says
where they are; reading them is ingest's job and judging them is analysis's. It never imports
analysis, so a capture works even where the report cannot be built.
"""

from __future__ import annotations

from tcreport.capture.request import Backend, CaptureResult, ProfileRequest

__all__ = ["Backend", "CaptureResult", "ProfileRequest", "capture"]


def capture(request: ProfileRequest) -> CaptureResult:
    """Pick the backend (``auto`` resolves here) and run the script under it."""
    from tcreport.capture import backends

    return backends.run(request)
