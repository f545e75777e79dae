"""Shared test fixtures: the real traces (skipped where absent) and the Hypothesis profile."""

from __future__ import annotations

from pathlib import Path

import profiles  # noqa: F401  registers and loads the Hypothesis profile
import pytest
from trace_paths import DLPROF_CNN, NSYS_H100, NSYS_WIN2022, need


@pytest.fixture
def dlprof_cnn() -> Path:
    return need(DLPROF_CNN)


@pytest.fixture
def nsys_h100() -> Path:
    return need(NSYS_H100)


@pytest.fixture
def nsys_win2022() -> Path:
    return need(NSYS_WIN2022)
