"""Reader for the DLProf Viewer database (``dlprof_dldb.sqlite``).

DLProf writes this database for its Viewer next to the CSV reports of the same run. It holds both
the raw per-launch records (``read_only_*``) and DLProf's own aggregation (``op_nodes``,
``model_summary``, ``category_summary``...), so one file gives tcreport launch-level rows *and* the
figures DLProf showed its user. Strings are interned in ``dictionary``; every join happens in SQLite
and the rows go straight into Arrow.

A Viewer database can hold several aggregations (the Viewer re-aggregates with another key node or
iteration range); the latest one wins. Tables this reader can do without are replaced by empty
derived tables in the SQL, so a database from an older DLProf, or one missing a table, still reads:
the figures it cannot give stay ``None`` and ``meta.notes`` says which tables were absent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError, SchemaError
from tcreport.ingest.common import sqlite as _sqlite
from tcreport.ingest.common import started
from tcreport.ingest.dlprof.viewer_meta import ViewerMeta, _int
from tcreport.model import (
    Granularity,
    Run,
    RunMeta,
    SourceFormat,
)
from tcreport.schema import MemoryKind, TableKind, conform

#: The columns this reader uses, per table. The first three tables are required; any other one
#: that is absent (or lacks a column) is read as empty.
_COLUMNS: Mapping[str, str] = {
    "dictionary": "id string",
    "read_only_ops": "id op_id op_name op_type_id data_type_id direction_id",
    "read_only_kernels": "id read_only_ops_id name_id long_name_id uses_tc api_start gpu_start"
    " gpu_stop grid_id block_id device_id process_id",
    "read_only_memcpys": "read_only_ops_id name_id gpu_start gpu_stop num_bytes copy_kind"
    " device_id process_id",
    "read_only_memsets": "read_only_ops_id name_id gpu_start gpu_stop num_bytes device_id process_id",
    "read_only_op_instances": "id read_only_ops_id input_shapes_id output_shapes_id",
    "read_only_grid_block": "id x y z",
    "read_only_model_config": "id cudnn_benchmark_disabled amp_enabled num_workers pin_memory",
    "op_nodes": "aggr_id read_only_ops_id node_time_metrics_id num_calls kernel_calls tc_eligible"
    " using_tc",
    "node_time_metrics": "id cpu_time_metric_id gpu_time_metric_id",
    "metric": "id sum",
    "kernel_iteration_node": "aggr_id read_only_kernel_id iter_value",
    "iteration_list": "aggr_id iter_value start_time stop_time",
    "iteration_key": "aggr_id key_node_id",
    "model_summary": "aggr_id domain_id wall_time nodes_total_id nodes_tc_eligible_id"
    " nodes_using_tc_id gpu_utilization tc_utilization avg_iteration_time iteration_time_std_dev"
    " iter_total iter_aggregated iter_start iter_stop key_node_id",
    "category_summary": "id gpu_time count",
    "kernel_summary_metrics": "aggr_id domain_id kernels_total_id kernels_using_tc_id",
    "memory_summary_metrics": "aggr_id domain_id memory_time_id",
    "expert_systems_feedback": "id aggr_id exp_sys_id problem recommendation",
    "read_only_gpu_infos": "device_id gpu_name compute_capability_major compute_capability_minor"
    " sm_count",
    "read_only_system_config": "id driver_version framework cuda_version cudnn_version"
    " dlprof_version",
    "db_version": "current_version",
}
_REQUIRED = ("dictionary", "read_only_ops", "read_only_kernels")

#: CUPTI's CUpti_ActivityMemcpyKind, which DLProf copies from the Nsight Systems export. CUDA
#: arrays live in device memory, so "to/from array" counts as device.
_COPY_KINDS: Mapping[int, MemoryKind] = {
    1: MemoryKind.HTOD, 2: MemoryKind.DTOH, 3: MemoryKind.HTOD, 4: MemoryKind.DTOH,
    5: MemoryKind.DTOD, 6: MemoryKind.DTOD, 7: MemoryKind.DTOD, 8: MemoryKind.DTOD,
    9: MemoryKind.HTOH, 10: MemoryKind.PEER,
}  # fmt: skip


def sniff(path: Path) -> bool:
    """True for a DLProf Viewer database; an Nsight Systems export (``StringIds``) is not one."""
    if not _sqlite.is_sqlite(path):
        return False
    try:
        with _sqlite.connect(path) as con:
            names = _sqlite.table_names(con, path)
    except (InputError, UnicodeDecodeError):  # see read()
        return False
    return (
        {"dictionary", "read_only_kernels"} <= names
        and bool(names & {"model_summary", "read_only_ops"})
        and "StringIds" not in names
    )


def read(path: Path) -> Run:
    if path.is_dir():
        raise InputError("is a directory; expected a DLProf Viewer database file", path)
    try:
        if path.stat().st_size == 0:
            raise InputError("file is empty", path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path) from exc
    if not _sqlite.is_sqlite(path):
        raise InputError("not an SQLite database (expected dlprof_dldb.sqlite)", path)
    try:
        with _sqlite.connect(path) as con:  # dated by the nsys export DLProf left beside it
            return started.dated_by_export_beside(_Reader(con, path).run(), path.parent)
    except UnicodeDecodeError as exc:
        # CPython decodes SQLite's error messages strictly, and "malformed database schema (...)"
        # quotes the damaged bytes: the error is about corruption, not about our text decoding.
        raise InputError("corrupt SQLite database (undecodable error message)", path) from exc


def _i(expr: str) -> str:
    """SQLite is dynamically typed: a cast keeps each Arrow column one type, even when damaged."""
    return f"CAST({expr} AS INTEGER)"


class _Reader(ViewerMeta):
    """One read of one database: which tables are usable, which aggregation, then the tables."""

    def __init__(self, con: sqlite3.Connection, path: Path) -> None:
        self.con, self.path = con, path
        _sqlite.refuse_unsafe(con, path, _COLUMNS)  # a view or trigger runs code: refused
        names = _sqlite.table_names(con, path)
        missing = [t for t in _REQUIRED if t not in names]
        if missing:
            raise InputError(f"not a DLProf Viewer database: no table {', '.join(missing)}", path)
        self.usable: set[str] = set()
        absent: list[str] = []
        for table, cols in _COLUMNS.items():
            have = set(_sqlite.columns(con, table)) if table in names else set()
            lacking = [c for c in cols.split() if c not in have]
            if not lacking:
                self.usable.add(table)
            elif table in _REQUIRED:
                raise InputError(f"table {table} lacks column {', '.join(lacking)}", path)
            else:
                absent.append(table)
        self.notes = [f"tables absent or of another layout: {', '.join(absent)}"] if absent else []
        latest = self._one(
            f"SELECT {_i('aggr_id')}, {_i('domain_id')} FROM {self._t('model_summary')}"
            " ORDER BY 1 DESC, 2 LIMIT 1"
        ) or self._one(f"SELECT MAX({_i('aggr_id')}), NULL FROM {self._t('op_nodes')}")
        # -1 matches no row: the aggregated figures are then simply absent.
        aggr, domain = (_int(latest[0]), _int(latest[1])) if latest else (None, None)
        self.aggr: int = -1 if aggr is None else aggr
        self.domain: int = -1 if domain is None else domain
        self.ms = self._summary()
        seen = self._one(
            "SELECT COUNT(DISTINCT aggr_id), COUNT(DISTINCT domain_id)"
            f" FROM {self._t('model_summary')}"
        )
        if seen and ((_int(seen[0]) or 0) > 1 or (_int(seen[1]) or 0) > 1):
            self.notes.append(
                f"several aggregations or domains: figures are those of aggregation {self.aggr},"
                f" domain {self.domain}"
            )

    # -- SQL helpers ------------------------------------------------------------------------------

    def _t(self, table: str) -> str:
        """The table, or an empty stand-in with the same columns when it is unusable."""
        if table in self.usable:
            return table
        cols = ", ".join(f'NULL AS "{c}"' for c in _COLUMNS[table].split())
        return f"(SELECT {cols} WHERE 0)"

    def _one(self, sql: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.con.execute(sql).fetchone()
        return row

    def _arrow(self, sql: str, names: str, kind: TableKind, required: tuple[str, ...]) -> pa.Table:
        raw = _sqlite.query_arrow(self.con, sql, names.split(), self.path)
        for col in required:
            if raw.column(col).null_count:
                raise InputError(f"{kind.value} rows without {col} (dangling ids?)", self.path)
        if "duration_ns" in raw.column_names and raw.num_rows:
            ok = pc.fill_null(pc.greater_equal(raw.column("duration_ns"), 0), False)
            if bad := raw.num_rows - (pc.sum(ok).as_py() or 0):  # else negative totals
                raw = raw.filter(ok)
                self.notes.append(f"dropped {bad:,} {kind.value} rows that end before they start")
        try:
            return conform(raw, kind)
        except SchemaError as exc:
            reason = exc.reason.splitlines()[0]
            raise InputError(f"unexpected values in {kind.value}: {reason}", self.path) from exc

    # -- tables -----------------------------------------------------------------------------------

    def run(self) -> Run:
        kernels, memory, ops = self.kernels(), self.memory(), self.ops()
        profiler, version, framework, cuda, cudnn, driver = self.system()
        meta = RunMeta(
            format=SourceFormat.DLPROF_SQLITE,
            path=str(self.path),
            profiler=profiler,
            profiler_version=version,
            framework=framework,
            cuda_version=cuda,
            cudnn_version=cudnn,
            driver_version=driver,
            gpus=self.gpus(),
            iterations=self.iteration_info(),
            reported=self.reported(),
            source_findings=self.findings(),
            kernel_granularity=Granularity.LAUNCH,
            op_granularity=Granularity.AGGREGATE,
            files=(self.path.name,),
            notes=tuple(self.notes),
            settings=self.settings(),
        )
        its = self.iterations()
        return Run(meta=meta, kernels=kernels, memory=memory, ops=ops, iterations=its)

    def _kernel_iters(self) -> str:
        """Per kernel id, its iteration in the chosen aggregation."""
        return (
            f"(SELECT {_i('read_only_kernel_id')} AS kid, MIN({_i('iter_value')}) AS it"
            f" FROM {self._t('kernel_iteration_node')} WHERE aggr_id = {self.aggr} GROUP BY 1)"
        )

    def kernels(self) -> pa.Table:
        geo = ", ".join(_i(f"{g}.{a}") for g in ("g", "b") for a in ("x", "y", "z"))
        gb = self._t("read_only_grid_block")
        sql = f"""
            SELECT CAST(dn.string AS TEXT), CAST(dl.string AS TEXT), {_i("k.device_id")},
                   {_i("k.process_id")}, {_i("k.gpu_start")},
                   {_i("k.gpu_stop")} - {_i("k.gpu_start")}, 1, {_i("k.api_start")}, kin.it,
                   CAST(o.op_id AS TEXT), {geo}, {_i("k.uses_tc")} != 0
            FROM read_only_kernels k
            LEFT JOIN dictionary dn ON dn.id = k.name_id
            LEFT JOIN dictionary dl ON dl.id = k.long_name_id
            LEFT JOIN read_only_ops o ON o.id = k.read_only_ops_id
            LEFT JOIN {self._kernel_iters()} kin ON kin.kid = k.id
            LEFT JOIN {gb} g ON g.id = k.grid_id
            LEFT JOIN {gb} b ON b.id = k.block_id
            ORDER BY k.gpu_start, k.id"""
        names = """name long_name device_id process_id start_ns duration_ns calls launch_ns
                   iteration op_id grid_x grid_y grid_z block_x block_y block_z profiler_uses_tc"""
        return self._arrow(sql, names, TableKind.KERNELS, ("name", "duration_ns"))

    def memory(self) -> pa.Table:
        cases = " ".join(f"WHEN {k} THEN '{v.value}'" for k, v in _COPY_KINDS.items())
        copy = f"CASE {_i('m.copy_kind')} {cases} ELSE '{MemoryKind.MEMCPY_OTHER.value}' END"
        sources = (
            ("read_only_memcpys", copy),
            ("read_only_memsets", f"'{MemoryKind.MEMSET.value}'"),
        )
        sql = " UNION ALL ".join(
            f"""SELECT {kind}, CAST(d.string AS TEXT), {_i("m.device_id")}, {_i("m.process_id")},
                       {_i("m.gpu_start")}, {_i("m.gpu_stop")} - {_i("m.gpu_start")}, 1,
                       {_i("m.num_bytes")}, CAST(o.op_id AS TEXT)
                FROM {self._t(table)} m
                LEFT JOIN dictionary d ON d.id = m.name_id
                LEFT JOIN read_only_ops o ON o.id = m.read_only_ops_id"""
            for table, kind in sources
        )
        names = "kind name device_id process_id start_ns duration_ns calls bytes op_id"
        return self._arrow(sql + " ORDER BY 5", names, TableKind.MEMORY, ("kind", "duration_ns"))

    def ops(self) -> pa.Table:
        """One row per op: DLProf's node metrics (aggregated iterations), kernel time summed here.

        ``gpu_total_ns`` is DLProf's node GPU time, which is not a plain sum of the op's kernel
        durations (309,276 ns against 306,779 ns for CONV2D_1); ``gpu_ns`` is that plain sum, the
        figure DLProf's own Tensor Core report gives, restricted to the aggregated iterations.
        """
        start, stop = _int(self.ms[7]), _int(self.ms[8])
        in_range = ""
        if "kernel_iteration_node" in self.usable and start is not None and stop is not None:
            in_range = f"WHERE kin.it BETWEEN {start} AND {stop}"
        scope = "rtrim(o.op_name, replace(o.op_name, '/', ''))"  # up to the last '/'
        shape = "NULLIF(rtrim(CAST({}.string AS TEXT), char(10)), 'null')"
        sql = f"""
            SELECT CAST(o.op_id AS TEXT), CAST(o.op_name AS TEXT),
                   NULLIF(CAST(dt.string AS TEXT), ''),
                   NULLIF(substr({scope}, 1, length({scope}) - 1), ''),
                   NULLIF(CAST(dd.string AS TEXT), ''), NULLIF(CAST(dy.string AS TEXT), ''),
                   {shape.format("dis")}, {shape.format("dos")},
                   COALESCE({_i("n.num_calls")}, fi.c, 0), {_i("mc.sum")}, COALESCE(kt.t, 0),
                   {_i("mg.sum")}, COALESCE({_i("n.kernel_calls")}, kt.c, 0),
                   {_i("n.tc_eligible")} != 0, {_i("n.using_tc")} != 0
            FROM read_only_ops o
            LEFT JOIN {self._t("op_nodes")} n
                 ON n.read_only_ops_id = o.id AND n.aggr_id = {self.aggr}
            LEFT JOIN dictionary dt ON dt.id = o.op_type_id
            LEFT JOIN dictionary dd ON dd.id = o.direction_id
            LEFT JOIN dictionary dy ON dy.id = o.data_type_id
            LEFT JOIN {self._t("node_time_metrics")} ntm ON ntm.id = n.node_time_metrics_id
            LEFT JOIN {self._t("metric")} mc ON mc.id = ntm.cpu_time_metric_id
            LEFT JOIN {self._t("metric")} mg ON mg.id = ntm.gpu_time_metric_id
            LEFT JOIN (SELECT k.read_only_ops_id AS oid, COUNT(*) AS c,
                              SUM({_i("k.gpu_stop")} - {_i("k.gpu_start")}) AS t
                       FROM read_only_kernels k
                       LEFT JOIN {self._kernel_iters()} kin ON kin.kid = k.id
                       {in_range} {"AND" if in_range else "WHERE"}
                       {_i("k.gpu_stop")} >= {_i("k.gpu_start")} GROUP BY 1) kt ON kt.oid = o.id
            LEFT JOIN (SELECT read_only_ops_id AS oid, MIN(id) AS first, COUNT(*) AS c
                       FROM {self._t("read_only_op_instances")} GROUP BY 1) fi ON fi.oid = o.id
            LEFT JOIN {self._t("read_only_op_instances")} oi ON oi.id = fi.first
            LEFT JOIN dictionary dis ON dis.id = oi.input_shapes_id
            LEFT JOIN dictionary dos ON dos.id = oi.output_shapes_id
            ORDER BY o.id"""
        names = """op_id name type scope direction dtype input_shapes output_shapes calls cpu_ns
                   gpu_ns gpu_total_ns kernel_calls profiler_tc_eligible profiler_uses_tc"""
        return self._arrow(sql, names, TableKind.OPS, ("op_id", "name"))

    def iterations(self) -> pa.Table | None:
        if "iteration_list" not in self.usable:
            return None
        sql = f"""SELECT {_i("iter_value")}, {_i("start_time")}, {_i("stop_time")}
                  FROM iteration_list WHERE aggr_id = {self.aggr} ORDER BY 1"""
        names = "iteration start_ns end_ns"
        return self._arrow(sql, names, TableKind.ITERATIONS, tuple(names.split()))

    # -- metadata ---------------------------------------------------------------------------------
