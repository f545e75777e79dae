"""Kernel names: demangling through the C++ runtime, and one key for two demanglers' spellings."""

from __future__ import annotations

import pytest

from tcreport import kernel_names
from tcreport.kernel_names import MAX_MANGLED, demangle

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
