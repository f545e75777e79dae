"""Kernel names: demangling through the C++ runtime, and one key for two demanglers' spellings."""

from __future__ import annotations

import re
import resource
import time

import pytest
from synthetic import doubling_mangled_name
from trace_paths import H200_NCU

from tcreport import _mangled, kernel_names
from tcreport.kernel_names import MAX_DEMANGLED, MAX_MANGLED, demangle

MANGLED = "_Z22tensorTransformGenericI6__halfS0_fLb1ELb0ELb0EL21cudnnKernelDataType_t0EEv26cudnnTensorTransformStruct21tensorTransformParamsimPKT_PT0_T1_S9_"  # noqa: E501


def test_demangle_gives_the_profilers_spelling() -> None:
    if kernel_names._demangler() is None:
        pytest.skip("no __cxa_demangle in this C++ runtime")
    assert demangle(MANGLED) == (
        "void tensorTransformGeneric<__half, __half, float, true, false, false, "
        "(cudnnKernelDataType_t)0>(cudnnTensorTransformStruct, tensorTransformParams, int, "
        "unsigned long, __half const*, __half*, float, float)"
    )


@pytest.mark.parametrize(
    "name",
    [
        "volta_sgemm_128x64_nn",
        "void k<int>(int)",
        "_Z",
        "_Znot a name",
        "_Z3fooé",
        "_Z" + "N3foo" * (MAX_MANGLED // 4),  # too long: left alone, never handed to the demangler
        "_Z" + "I" * 5000 + "E" * 5000,
    ],
)
def test_what_cannot_be_demangled_comes_back_unchanged(name: str) -> None:
    assert demangle(name) == name


def test_without_a_cxx_runtime_names_stay_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_names, "_demangler", lambda: None)
    assert demangle(MANGLED) == MANGLED


def test_readable_elides_what_the_demangler_rejects() -> None:
    assert kernel_names.readable("volta_sgemm_128x64_nn") == "volta_sgemm_128x64_nn"
    # substitutions resolve to earlier prefixes; the rest of the template is elided
    name = "_ZN2ns6KernelINS_4conv23ImplicitGemmConvolutionIXbad"
    assert kernel_names.readable(name) == "ns::Kernel<ns::conv::ImplicitGemmConvolution<…>>"
    for junk in ("_ZN", "_ZN99x", "_ZNS3_1aE"[:6], "_Z" + "9" * 30):
        assert kernel_names.readable(junk) == junk


def _sample_mangled_names() -> list[str]:
    """Every mangled kernel name in the H200 sample's mangled ncu CSV: cuDNN, CUTLASS (which
    libstdc++ rejects), PyTorch's elementwise and reduction templates, with substitutions,
    template parameters, lambdas, literals and ABI-free std types."""
    text = (H200_NCU / "ncu" / "ncu3_cnn_fp16_mangled.csv").read_text(encoding="utf-8")
    return sorted(set(re.findall(r'"(_Z[^"]+)"', text)))


def test_the_size_estimate_bounds_every_real_name_and_lets_it_demangle() -> None:
    names = _sample_mangled_names()
    assert len(names) >= 20
    demangled = 0
    for name in names:
        size = _mangled.demangled_size(name)
        assert size is not None, name  # parsed: no real name falls back to the cruder rule
        assert size <= MAX_DEMANGLED
        out = demangle(name)
        if out != name:
            demangled += 1
            assert len(out) <= size, name
    if kernel_names._demangler() is not None:
        assert demangled >= 20


@pytest.mark.parametrize("levels", [4, 8])
def test_the_size_estimate_bounds_adoubling_mangled_name(levels: int) -> None:
    name = doubling_mangled_name(levels)
    size = _mangled.demangled_size(name)
    assert size is not None
    if kernel_names._demangler() is not None:
        assert len(demangle(name)) <= size


def test_names_that_would_demangle_to_megabytes_stay_mangled_fast_and_small() -> None:
    """hostile4: 212 mangled characters demangled to 6.8 MB, 322 to 7 GB; now the estimate says
    so before the demangler runs, in microseconds and without the memory."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for levels in (18, 20, 22, 26, 200, 600):
        name = doubling_mangled_name(levels)
        assert demangle(name) == name
        assert len(kernel_names.readable(name)) < 100  # the outline of what it names
    assert time.perf_counter() - start < 0.5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 50_000  # KiB


@pytest.mark.parametrize(
    "name",
    [
        "_Z1fv" + "X" * 10,  # the estimate cannot parse it, and nothing in it repeats
        "_Z" + "P" * 3000 + "i",  # deeper than the estimate recurses: no reference either
    ],
)
def test_an_unparsed_name_without_references_is_still_handed_to_the_demangler(name: str) -> None:
    assert _mangled.demangled_size(name) is None
    assert not _mangled.has_references(name)
    assert kernel_names._bounded(name)


def test_an_unparsed_name_with_references_is_not() -> None:
    name = doubling_mangled_name(8) + "X"  # trailing junk: the estimate gives up; S_ refs remain
    assert _mangled.demangled_size(name) is None
    assert not kernel_names._bounded(name)
