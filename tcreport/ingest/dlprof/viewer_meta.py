"""Run metadata from the DLProf Viewer database: the system and framework versions, the GPUs, the
iteration range, DLProf's own summary figures, the recorded settings and its expert-system findings.

Split from :mod:`tcreport.ingest.dlprof.viewer_db` (which reads the bulk tables): the reader class
there mixes this in, so every query still goes through its one connection and its table checks.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tcreport.errors import InputError
from tcreport.model import (
    Gpu,
    IterationInfo,
    IterationMethod,
    ReportedFigures,
    RunSettings,
    SourceFinding,
)


class ViewerMeta:
    """The metadata queries; the reader provides the connection-level helpers below."""

    con: sqlite3.Connection
    path: Path
    usable: set[str]
    aggr: int
    domain: int
    ms: tuple[Any, ...]  # the summary row (:meth:`_summary`)

    def _t(self, table: str) -> str:
        raise NotImplementedError

    def _one(self, sql: str) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def settings(self) -> RunSettings:
        """PyTorch settings DLProf recorded (``read_only_model_config``); optional table."""
        if "read_only_model_config" not in self.usable:
            return RunSettings()
        row = self._one(
            "SELECT cudnn_benchmark_disabled, amp_enabled, num_workers, pin_memory"
            " FROM read_only_model_config ORDER BY id DESC LIMIT 1"
        )
        if row is None:
            return RunSettings()
        off, amp, workers, pin = row

        def flag(v: Any) -> bool | None:
            return bool(v) if isinstance(v, int) else None

        bench_off = flag(off)
        return RunSettings(
            cudnn_benchmark=None if bench_off is None else not bench_off,
            amp_enabled=flag(amp),
            num_workers=workers if isinstance(workers, int) else None,
            pin_memory=flag(pin),
        )

    def system(self) -> tuple[str, str | None, str | None, str | None, str | None, str | None]:
        """Profiler, its version, framework, CUDA, cuDNN and driver versions."""
        row = (
            self._one(
                "SELECT dlprof_version, framework, cuda_version, cudnn_version, driver_version"
                f" FROM {self._t('read_only_system_config')} ORDER BY id LIMIT 1"
            )
            or (None,) * 5
        )
        version = _str(row[0])
        if version is None:
            db = self._one(f"SELECT current_version FROM {self._t('db_version')} LIMIT 1")
            version = _str(db[0]) if db else None
        bare = version.removeprefix("v") if version else None
        profiler = f"DLProf v{bare}" if bare else "DLProf"
        return profiler, bare, _str(row[1]), _str(row[2]), _str(row[3]), _str(row[4])

    def gpus(self) -> tuple[Gpu, ...]:
        cur = self.con.execute(
            "SELECT device_id, gpu_name, compute_capability_major, compute_capability_minor,"
            f" sm_count FROM {self._t('read_only_gpu_infos')} ORDER BY device_id"
        )
        gpus = []
        for dev, name, major, minor, sms in cur.fetchall():
            if _int(dev) is None:
                continue
            cc = f"{major}.{minor}" if _int(major) is not None and _int(minor) is not None else None
            gpus.append(Gpu(int(dev), _str(name), compute_capability=cc, sm_count=_int(sms)))
        return tuple(gpus)

    def _summary(self) -> tuple[Any, ...]:
        """model_summary of the chosen aggregation, its op categories resolved."""
        sql = f"""
            SELECT ms.wall_time, ms.gpu_utilization, ms.tc_utilization, ms.avg_iteration_time,
                   ms.iteration_time_std_dev, ms.iter_total, ms.iter_aggregated, ms.iter_start,
                   ms.iter_stop, kn.string, nt.count, nt.gpu_time, ne.count, ne.gpu_time,
                   nu.count, nu.gpu_time
            FROM {self._t("model_summary")} ms
            LEFT JOIN dictionary kn ON kn.id = ms.key_node_id
            LEFT JOIN {self._t("category_summary")} nt ON nt.id = ms.nodes_total_id
            LEFT JOIN {self._t("category_summary")} ne ON ne.id = ms.nodes_tc_eligible_id
            LEFT JOIN {self._t("category_summary")} nu ON nu.id = ms.nodes_using_tc_id
            WHERE ms.aggr_id = {self.aggr} AND ms.domain_id = {self.domain}"""
        return self._one(sql) or (None,) * 16

    def iteration_info(self) -> IterationInfo:
        ms = self.ms
        key = self._one(
            f"SELECT d.string FROM {self._t('iteration_key')} ik"
            f" JOIN dictionary d ON d.id = ik.key_node_id WHERE ik.aggr_id = {self.aggr}"
        )
        return IterationInfo(
            key_node=_str(key[0]) if key else _str(ms[9]),
            total=_int(ms[5]),
            start=_int(ms[7]),
            stop=_int(ms[8]),
            aggregated=_int(ms[6]),
            mean_ns=self._duration(ms[3], "model_summary mean iteration time"),
            std_ns=self._duration(ms[4], "model_summary iteration time deviation"),
            method=IterationMethod.DLPROF,
        )

    def _duration(self, v: object, what: str) -> float | None:
        """A negative time is damage, not a figure to pass on (found by fuzzing)."""
        f = _float(v)
        if f is not None and f < 0:
            raise InputError(f"{what} is negative ({f:g})", self.path)
        return f

    def reported(self) -> ReportedFigures:
        """DLProf's own figures. Its op categories partition the ops into using TC, eligible but
        not using TC (``nodes_tc_eligible``) and the rest; its utilisations are percentages."""
        ms = self.ms
        self._duration(ms[0], "model_summary wall time")  # a negative one is damage: refused
        ks = (
            self._one(f"""
            SELECT kt.count, kt.gpu_time, ku.gpu_time, mm.gpu_time
            FROM {self._t("kernel_summary_metrics")} ksm
            LEFT JOIN {self._t("category_summary")} kt ON kt.id = ksm.kernels_total_id
            LEFT JOIN {self._t("category_summary")} ku ON ku.id = ksm.kernels_using_tc_id
            LEFT JOIN {self._t("memory_summary_metrics")} msm
                 ON msm.aggr_id = ksm.aggr_id AND msm.domain_id = ksm.domain_id
            LEFT JOIN {self._t("category_summary")} mm ON mm.id = msm.memory_time_id
            WHERE ksm.aggr_id = {self.aggr} AND ksm.domain_id = {self.domain}""")
            or (None,) * 4
        )
        kernel_ns, memory_ns = _int(ks[1]), _int(ks[3])
        not_using, using = _int(ms[12]), _int(ms[14])
        return ReportedFigures(
            wall_ns=_int(ms[0]),  # checked non-negative above
            all_kernel_ns=_add(kernel_ns, memory_ns),
            gpu_kernel_ns=kernel_ns,
            tc_kernel_ns=_int(ks[2]),
            memory_ns=memory_ns,
            unique_kernels=_int(ks[0]),
            op_count=_int(ms[10]),
            op_gpu_ns=_int(ms[11]),
            eligible_op_count=_add(not_using, using),
            using_op_count=using,
            using_gpu_ns=_int(ms[15]),
            eligible_not_using_op_count=not_using,
            eligible_not_using_gpu_ns=_int(ms[13]),
            gpu_utilization=_fraction(ms[1]),
            tc_kernel_utilization=_fraction(ms[2]),
        )

    def findings(self) -> tuple[SourceFinding, ...]:
        cur = self.con.execute(
            "SELECT exp_sys_id, problem, recommendation FROM"
            f" {self._t('expert_systems_feedback')} WHERE aggr_id = {self.aggr} ORDER BY id"
        )
        return tuple(
            SourceFinding(_str(i) or "dlprof", _str(p) or "", _str(r) or "")
            for i, p, r in cur.fetchall()
        )


# Metadata cells are few; a damaged one becomes "unknown" rather than a failed read.


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _str(v: object) -> str | None:
    return v.strip() or None if isinstance(v, str) else None


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _fraction(pct: object) -> float | None:
    f = _float(pct)
    return None if f is None or not 0.0 <= f <= 100.0 else f / 100.0
