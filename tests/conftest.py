"""Shared test fixtures: the real traces (skipped where absent; the two bundled in sample_traces/
are read from there without ../shared, see trace_paths.py), the Hypothesis profile, a skip summary,
and strict invariants for every analysis."""

from __future__ import annotations

import os
from pathlib import Path

import known_violations
import profiles  # noqa: F401  registers and loads the Hypothesis profile
import pytest
from trace_paths import DLPROF_CNN, NSYS_H100, NSYS_WIN2022, need

# Every analysis in the suite (subprocesses included) fails on a broken invariant instead of
# noting it (tcreport.analysis.invariants), except the open ones tests/known_violations.py lists.
os.environ.update(known_violations.environ())


@pytest.fixture
def dlprof_cnn() -> Path:
    return need(DLPROF_CNN)


@pytest.fixture
def nsys_h100() -> Path:
    return need(NSYS_H100)


@pytest.fixture
def nsys_win2022() -> Path:
    return need(NSYS_WIN2022)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    text = text.removeprefix("Skipped: ")
    if "real trace" in text or "realtraces" in text:
        return "needs ../shared/realtraces (or TCREPORT_REALTRACES)"
    return text if len(text) <= 100 else text[:99] + "…"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per skip reason with its count, instead of one line per skipped test (-ra printed
    ~140 SKIPPED lines that buried the result)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.skipped]
    if not skipped:
        return
    counts: dict[str, int] = {}
    for r in skipped:
        reason = _skip_reason(r)
        counts[reason] = counts.get(reason, 0) + 1
    terminalreporter.write_sep("-", f"{len(skipped)} skipped, by reason")
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{n:5d}  {reason}")


#: Modules whose every test is slow (a browser, Perfetto's trace processor, TensorFlow, a batch
#: dataset built once per module, worker processes), and the single tests of about a second or
#: more elsewhere: measured with ``pytest --durations=0`` (six minutes in all, on the shared
#: two-core machine). ``python -m pytest -m "not slow"`` is the inner loop of about a minute
#: (README, Tests); the whole suite is what CI runs. Kept here, in one list, rather than on each
#: test: re-measure and edit it when the suite's slow end moves.
SLOW_MODULES = frozenset(
    {
        "tests/cli/test_batch.py",
        "tests/cli/test_batch_reaping.py",
        "tests/cli/test_profile_tf.py",
        "tests/cli/test_query.py",
        "tests/cli/test_quiet_tf.py",
        "tests/hostile/test_batch_safety.py",
        "tests/hostile/test_fuzz_readers.py",
        "tests/render/test_browser.py",
        "tests/render/test_browser_roofline.py",
        "tests/render/test_browser_timeline.py",
        "tests/render/test_export_perfetto.py",
        "tests/render/test_outputs_agree.py",
    }
)
SLOW_TESTS = frozenset(
    {
        "tests/analysis/test_counters.py::test_cli_counters_option_lists_disagreements_in_json_and_html",
        "tests/analysis/test_invariants.py::test_every_renderer_shows_the_same_numbers",
        "tests/analysis/test_invariants.py::test_figures_add_up",
        "tests/analysis/test_invariants.py::test_synthetic_generated_runs_keep_the_invariants",
        "tests/analysis/test_tc_kernels.py::test_v100_resnet50_sgemm_and_winograd_are_not_tc",
        "tests/cli/test_capture.py::test_dlprof_flow_command_to_report",
        "tests/cli/test_capture.py::test_nsys_export_failure",
        "tests/cli/test_capture.py::test_nsys_flow_command_to_report",
        "tests/cli/test_capture.py::test_nsys_key_node_that_never_occurs_keeps_a_whole_run_report",
        "tests/cli/test_capture.py::test_nsys_pytorch_run_gets_no_tensorflow_note",
        "tests/cli/test_capture.py::test_nsys_sets_tf_nvtx_environment_for_tensorflow_scripts",
        "tests/cli/test_capture.py::test_nsys_tensorflow_run_without_op_ranges_says_why",
        "tests/cli/test_capture.py::test_nsys_without_the_graph_node_option_is_not_given_it",
        "tests/cli/test_capture.py::test_profile_reports_children_that_outlive_the_script",
        "tests/cli/test_capture.py::test_run_command_waits_for_the_process_not_its_pipes",
        "tests/cli/test_capture.py::test_script_failure_propagates_exit_code_and_marks_partial",
        "tests/cli/test_compare.py::test_markdown_fits_one_github_comment_with_many_hostile_rows",
        "tests/cli/test_error_lines.py::test_synthetic_batch_piped_stderr_has_no_blank_first_line",
        "tests/hostile/test_malformed_exports.py::test_synthetic_nvtx_without_ops_gives_kernel_figures_and_a_note",
        "tests/hostile/test_nsys_nvtx_hostile.py::test_nvtx_ranges_out_of_the_schema_bounds_are_dropped_with_a_note",
        "tests/hostile/test_query_hostile.py::test_synthetic_csv_on_a_real_terminal_sends_no_control_code",
        "tests/hostile/test_query_hostile.py::test_synthetic_ctrl_c_stops_a_runaway_query",
        "tests/hostile/test_safe_hostile.py::test_synthetic_racing_ingests_leave_no_hidden_folder",
        "tests/ingest/test_dlprof_csv.py::test_mutated_reports_read_or_raise_input_error",
        "tests/ingest/test_kineto_json.py::test_counts_and_kernel_time_match_the_raw_events",
        "tests/ingest/test_kineto_json.py::test_mutated_events_never_raise_anything_but_input_error",
        "tests/ingest/test_kineto_json.py::test_parsers_agree_on_any_layout",
        "tests/ingest/test_kineto_json.py::test_parsers_agree_on_real_traces",
        "tests/ingest/test_kineto_json.py::test_reader_works_without_msgspec",
        "tests/ingest/test_kineto_parsers_agree.py::test_parsers_agree_on_mutated_times",
        "tests/ingest/test_nsys_sqlite.py::test_merged_chunk_orders_give_the_sorted_tables",
        "tests/ingest/test_nsys_sqlite.py::test_rows_out_of_time_order_across_chunks_are_sorted_again",
        "tests/ingest/test_nsys_sqlite.py::test_small_chunks_and_batches_give_the_same_tables",
        "tests/ingest/test_nvtx_text_torch.py::test_fast_path_equals_the_full_expression",
        "tests/project/test_architecture.py::test_a_forbidden_import_breaks_the_contracts",
        "tests/project/test_suite_offline.py::test_bundled_trace_cases_run_without_shared",
        "tests/project/test_suite_offline.py::test_skips_are_one_line_per_reason",
        "tests/render/test_notebook.py::test_the_docs_example_runs",
        "tests/render/test_render.py::test_real_trace_reports_are_sound_and_deterministic",
        "tests/render/test_render.py::test_shared_op_id_dictionary_round_trips_compactly",
        "tests/render/test_render_long_names.py::test_synthetic_long_kernel_names_in_the_h100x2_report",
        "tests/rules/test_advice.py::test_cpu_only_tf_capture_has_no_tc_verdict_and_host_time_columns",
        "tests/rules/test_advice.py::test_the_bundled_nsys_sample_compares_with_itself_by_inferred_identity",
    }
)


_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """A slow entry whose file moved or went would silently put its tests into the fast subset."""
    files = {t.split("::")[0] for t in SLOW_MODULES | SLOW_TESTS}
    gone = sorted(f for f in files if not (_ROOT / f).is_file())
    if gone:
        raise pytest.UsageError(f"tests/conftest.py names test files that do not exist: {gone}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        test = item.nodeid.split("[")[0]
        if test.split("::")[0] in SLOW_MODULES or test in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
