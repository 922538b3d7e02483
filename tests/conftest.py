"""What the test command needs around the tests themselves: the `floor` subset that `make test-floor` runs at the lowest
declared versions, and running in two processes safely (pytest-xdist).

The floor. What the lowest declared versions (numpy 2.0, pandas 3.0, scipy 1.13, pyarrow 16, matplotlib 3.9, seaborn
0.13, ...) can break is what irinnov asks of those libraries: reading run and qrels files and the mirrored data
(pyarrow's CSV reader and string sort, pandas), encoding campaigns (numpy sorting, packing, searching), the measure
kernels, the statistics (scipy, statsmodels) and the report's figures and tables (matplotlib, seaborn, Parquet).
FLOOR names the test files that exercise them, each with the tests left out: those that repeat the same library
calls many times (property searches and brute-force oracles over many random campaigns, second seeds) or over whole
real campaigns (TREC-COVID, TREC DL); one read of TREC-COVID round 1 and of Web 2012 from the mirror stays in. Files
not named (the command line in subprocesses, Dask, the trec_eval builds, the diversity programs, MovieLens, the
notebooks, the docs site) run at the pinned versions only.

Two processes. `make test` runs the tests and the notebooks with `-n 2 --dist loadfile`: each file (a test module, or
a notebook with all its nbval cells and its kernel) stays in one worker. What the workers share is safe as it is:
the data cache `$IRINNOV_HOME` is written by a temporary file and a rename, servers listen on a free port of the
loopback interface, temporary files live in each test's (or notebook's) own folder, and `_proc/`, which the docs-site
test writes, is read by nothing else. One test is not: the check that
`nbdev_export` leaves `irinnov/` unchanged rewrites every module of the library in place, and a kernel or a
subprocess importing irinnov in the other worker at that moment could read a half-written file. Such a test runs
alone: it takes a lock for writing, which it gets only once the other worker is between two tests, and every other
test (and notebook cell) holds the lock for reading while it runs. Without xdist the lock is not taken.

Order. The work is dealt out file by file in collection order, so FIRST puts the longest files first: neither worker
is then left with a long file at the end while the other one idles.

Names. xdist checks that both workers collected the same tests, so a parameter's name must not depend on the process:
bytes parameters (some hold a gzip header, which records the time it was written) are named by their length.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the files of the floor run, each with the tests (a name, or a name and the start of its parameters) it leaves out
FLOOR = {
    "tests/test_trec.py": {"test_ragged_measures_equal_the_dense_ones",
                           "test_batches_and_chunks_do_not_change_the_campaign[1-",
                           "test_prepare_files_equals_brute_force[1-"},
    "tests/test_hostile_input.py": set(),
    "tests/test_architecture.py": set(),
    "tests/test_metrics.py": {"test_trec_covid_parity_with_pytrec_eval", "test_trec_covid_leaderboard",
                              "test_parity_property"},
    "tests/test_measures.py": set(),
    "tests/test_meta.py": {"test_algorithm1_random_draws_follow_the_documented_stream"},
    "tests/test_asl.py": {"test_against_brute_force_oracle",
                          "test_appending_a_nonrelevant_document_raises_only_unretrieved",
                          "test_atomicity_adjacent_swap", "test_atomicity_moving_a_nonrelevant_document_down",
                          "test_eq1_eq2_bounds_monotone_and_prefix_shift",
                          "test_g1_n_monotone_limit_and_delta_sort_bounds", "test_shares_against_oracle",
                          "test_map_equals_pytrec_eval", "test_trec_covid_precheck",
                          "test_table1_passages_and_fig5_on_dl2020"},
    "tests/test_rareness.py": {"test_synthetic_ranks_brute_force"},
    "tests/test_novelty.py": {"test_oracle", "test_permutation_and_grouped_sums"},
    "tests/test_rpp.py": {"test_offline_interleaving_against_literal_simulation", "test_subtopic_rpp_against_oracle",
                          "test_properties_against_oracle", "test_dominance_missing_topic_and_single_item_properties",
                          "test_preference_family_equals_one_weighting_at_a_time",
                          "test_disaggregation_sums_equal_trec_eval_differences",
                          "test_deep_pass_2020_table1_and_table4a_rpp_family"},
    "tests/test_infotheory.py": {"test_joint_and_id_match_brute_force", "test_ric_matches_brute_force"},
    "tests/test_gap.py": set(),
    "tests/test_fusion.py": {"test_naive_bound_binary_ric_is_union_recall", "test_one_system_reproduces_its_order",
                             "test_comb_matches_brute_force"},
    "tests/test_datasets.py": {"test_dl2020_passage_from_mirror_and_nist_leaderboard",
                               "test_trec_covid_round1_runs_cached_compressed",
                               "test_dl2019_leaderboard_code_path_through_loopback"},
    "tests/test_report.py": {"test_report_against_trec_covid", "test_evaluate_against_trec_covid",
                             "test_writes_are_atomic_and_never_follow_symlinks",
                             "test_report_command_errors_are_one_line", "test_report_command_in_process",
                             "test_report_command_on_files", "test_unusable_or_busy_output_folder",
                             "test_math_markup_and_csv_safe_names", "test_write_report_from_runs",
                             "test_against_places_a_run_where_the_full_campaign_does",
                             "test_small_field_warns_and_small_report_says_so", "test_official_measures_and_reference"},
}


# tests that write files other tests read while they run (node ids relative to the repository)
EXCLUSIVE = {"tests/test_nbdev.py::test_nbdev_export_leaves_library_unchanged"}

# the files to deal out first. The nbdev checks open the run, one in each worker: test_nbdev.py's export check must
# wait for the other worker to be between two tests, which is soon when that worker is in test_readme.py's short
# ones. Then the longest files, longest first (measured: the trec_eval parity builds and runs trec_eval on 1,200
# generated campaigns and three real ones, the Dask tests start clusters and shard real campaigns, then the report,
# the notebooks that load real campaigns, the docs site). A file not named comes after, in collection order; a
# renamed file only loses its place.
FIRST = ["tests/test_nbdev.py", "tests/test_readme.py",
         "tests/test_trec_eval_parity.py", "tests/test_scale.py", "tests/test_report.py", "nbs/00e_encode.ipynb",
         "tests/test_docs_site.py", "nbs/13_asl_experiments.ipynb", "nbs/10_rareness_experiments.ipynb",
         "nbs/12_rpp_experiments.ipynb", "nbs/11_novelty_experiments.ipynb", "nbs/14_infotheory_experiments.ipynb",
         "nbs/17_diversity_experiments.ipynb", "nbs/18_rpp_recsys.ipynb", "nbs/21_campaigns.ipynb",
         "nbs/20_compare.ipynb",
         "tests/test_cli.py", "tests/test_trec.py", "nbs/01_datasets.ipynb", "nbs/index.ipynb", "nbs/02_metrics.ipynb"]


class _Lock:
    """A readers-writer lock shared by the xdist workers of one run (flock on two files in the temporary folder).

    The writer holds a turnstile while it waits, so that readers queue behind it instead of starving it."""

    def __init__(self, uid: str):
        base = Path(tempfile.gettempdir()) / f"irinnov-tests-{uid}"
        self.turnstile = open(f"{base}.turnstile", "a+")
        self.rw = open(f"{base}.lock", "a+")

    @contextlib.contextmanager
    def read(self):
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        fcntl.flock(self.rw, fcntl.LOCK_SH)
        try: yield
        finally: fcntl.flock(self.rw, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def write(self):
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.rw, fcntl.LOCK_EX)
            try: yield
            finally: fcntl.flock(self.rw, fcntl.LOCK_UN)
        finally: fcntl.flock(self.turnstile, fcntl.LOCK_UN)


class _Guard:
    "Registered as a plugin, so that it wraps every item, the notebooks' cells included."

    def __init__(self, lock: _Lock):
        self.lock = lock

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        with (self.lock.write() if _nodeid(item) in EXCLUSIVE else self.lock.read()):
            yield


def _nodeid(item) -> str:
    return _file(item) + (item.nodeid[item.nodeid.index("::"):] if "::" in item.nodeid else "")


def pytest_configure(config):
    config.addinivalue_line("markers", "floor: run by `make test-floor` at the lowest declared versions (the Makefile)")
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if os.environ.get("PYTEST_XDIST_WORKER") and uid:
        config.pluginmanager.register(_Guard(_Lock(uid)), "irinnov-xdist-guard")


def _file(item) -> str:
    path = Path(str(item.path)).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()


def _in_floor(item) -> bool:
    left_out = FLOOR.get(_file(item))
    return left_out is not None and not any(item.name == n or (n.endswith("-") and item.name.startswith(n)) or
                                            item.name.startswith(n + "[") for n in left_out)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _in_floor(item): item.add_marker(pytest.mark.floor)
    rank = {name: i for i, name in enumerate(FIRST)}
    items[:] = sorted(items, key=lambda item: rank.get(_file(item), len(rank)))   # stable: each file's order is kept


def pytest_make_parametrize_id(config, val, argname):
    """Bytes parameters are named by their length: their bytes can differ from one process to the next (a gzip header
    holds the time it was written), and xdist needs every worker to collect the same test names."""
    if isinstance(val, (bytes, bytearray)): return f"{len(val)}-bytes"
    return None
