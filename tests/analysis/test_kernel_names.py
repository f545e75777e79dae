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
