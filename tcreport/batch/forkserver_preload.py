"""Imported only as the batch forkserver's preload: arms it to die with the coordinator.

:func:`tcreport.batch.pool.arm_forkserver` runs only when this is the forkserver process itself
(started as ``python -c 'from multiprocessing.forkserver import main; ...'``), never in a process
that merely imports this module, where a parent-death signal would be a surprise.
"""

from __future__ import annotations

import sys

import tcreport.batch.work  # noqa: F401  preloaded once for every worker
from tcreport.batch import pool

if sys.argv == ["-c"] and "multiprocessing.forkserver" in sys.modules:
    pool.arm_forkserver()
