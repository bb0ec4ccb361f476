"""Fixtures and the hypothesis profiles shared by every test package.

Hypothesis profiles: ``ci`` (selected when the ``CI`` environment variable is
set) draws fresh examples every run from a seed printed in the pytest header
(rerun a failure with ``--hypothesis-seed=<seed>``); ``dev`` (the default
locally) is derandomized, so a local run tests the same examples every time.

Every test under ``tests/multiprocess/`` is marked ``processes``
and the tests of :data:`SLOW_TESTS` ``slow``
(:func:`pytest_collection_modifyitems`): the contributors' fast lane,
``pytest -m "not slow and not processes"``, leaves both out (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["protocols.testing.plugin"]

_COMMON = {"max_examples": 40, "deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=False, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", derandomize=True, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
_SEED_KEY = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under the ``ci`` profile, draw one hypothesis seed for the session (unless given)."""
    if settings.get_current_profile_name() != "ci" or config.getoption("--hypothesis-seed") is not None:
        return
    from hypothesis import core

    seed = secrets.randbits(32)
    core.global_force_seed = seed
    config.stash[_SEED_KEY] = seed


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.stash.get(_SEED_KEY, None)
    if seed is None:
        return None
    return f"hypothesis seed: {seed} (reproduce with --hypothesis-seed={seed})"


@pytest.fixture
def wine() -> np.ndarray:
    from sklearn.datasets import load_wine

    return load_wine().data


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Repeat the seed after the results, where ``pytest -q`` (no header) shows it too."""
    line = pytest_report_header(terminalreporter.config)
    if line is not None:
        terminalreporter.write_line(line)


MULTIPROCESS = Path(__file__).resolve().parent / "multiprocess"
#: Tests (node ids from the repository root) of 3 s or more, marked ``slow`` here rather than in
#: their files (parametrized cases and doctests included). Measured with
#: ``pytest -m "not slow and not processes" --durations=100`` on 2 shared cores under a load
#: average of about 15, where a test takes about twice its time on an idle machine: every test of
#: 6 s or more there, then of 3 s or more in a second run under a load average of 3 to 10, then
#: (for a lane under two minutes) of 2 s or more under a load average of 12 to 15.
#: tests/test_fast_lane.py checks that each is the id of a collected test.
SLOW_TESTS = frozenset(
    {
        "tests/protocols/testing/test_testing_kit.py::test_every_in_process_backend_passes_the_kit[additive-masks]",
        "tests/packaging/test_install.py::test_wheel_has_the_command_and_no_torch_in_the_base_requirements",
        "tests/protocols/transport/test_handshake_limits.py::test_a_party_that_times_out_says_what_happened_at_the_rendezvous",
        "tests/protocols/transport/test_handshake_limits.py::test_a_party_whose_peer_never_dials_counts_the_idle_connections",
        "tests/deploy/test_cli_floor.py::test_run_as_processes_gives_the_in_process_json",
        "tests/protocols/testing/test_testing_kit.py::test_every_in_process_backend_passes_the_kit[additive]",
        "tests/protocols/transport/test_link_attacks.py::test_status_frames_with_new_phase_labels_restart_nobodys_deadline",
        "tests/studies/test_benchmark_output.py::test_quick_secure_sum_leaves_published_results_alone",
        "tests/pppca/test_pppca.py::test_matches_centralized_pca_for_any_uneven_split",
        "tests/protocols/transport/test_rendezvous_schemas.py::test_reply_address_table_and_status_of_any_shape_are_typed_or_a_protocol_error",
        "tests/protocols/transport/test_socket_transport.py::test_links_check_the_party_name_at_both_ends",
        "tests/protocols/transport/test_socket_transport.py::test_rendezvous_refuses_a_certificate_of_another_name",
        "mpc_pca/pppca/estimator.py::mpc_pca.pppca.estimator.PPPCA",
        "tests/deploy/test_announcements.py::test_pppca_announcements_of_any_shape_configure_or_are_refused_naming_the_sender",
        "tests/dp/test_capeagn.py::test_aggregate_noise_has_the_pooled_variance_in_both_stages",
        "tests/dp/test_capeagn.py::test_conventional_noise_is_sqrt_s_times_pooled_and_capeagn_beats_it",
        "tests/dp/test_deployments.py::test_fixed_seed_gives_the_in_process_json_and_the_cap_bounds_every_message[dpdpca]",
        "tests/dp/test_dp_statistics.py::test_matrix_bingham_gibbs_matches_the_exact_moments",
        "tests/dp/test_dpdpca.py::test_noise_variance_matches_the_gaussian_mechanism",
        "tests/dp/test_dpdpca.py::test_paper_calibration_uses_delta_one_and_reports_the_weaker_epsilon",
        "tests/dp/test_estimator_accounting.py::test_a_weaker_calibration_is_charged_its_effective_epsilon[CapePCA]",
        "tests/dp/test_noise_calibration.py::test_ppca_samples_with_exponent_half_epsilon_times_the_scatter",
        "tests/pppca/test_pppca_dp.py::test_server_matrix_minus_exact_has_the_calibrated_variance[paillier-2]",
        "tests/packaging/test_install.py::test_wheel_holds_every_package_and_module_and_nothing_else",
        "tests/pppca/test_answer_check.py::test_a_random_t_is_caught_with_reveal_components",
        "tests/pppca/test_answer_check.py::test_honest_answers_pass_with_room_to_spare[2-options2]",
        "tests/core/test_lazy_imports.py::test_the_main_job_never_imports_torch[inprocess]",
        "tests/core/test_lazy_imports.py::test_the_main_job_never_imports_torch[processes]",
        "tests/docs/test_examples.py::test_secure_mean_example_runs_as_three_hospitals_and_an_analyst_over_tls",
        "tests/pppca/test_sklearn_parity.py::test_component_mode_has_the_same_probabilistic_model",
        "tests/protocols/transport/test_control_schemas.py::test_abort_of_any_shape_is_parsed_or_refused_naming_the_sender",
        "tests/protocols/transport/test_control_schemas.py::test_status_of_any_shape_is_parsed_or_refused_naming_the_sender",
        "tests/protocols/transport/test_handshake_limits.py::test_idle_connections_do_not_stop_or_delay_a_run[127.0.0.1-6.0]",
        "tests/protocols/transport/test_link_attacks.py::test_a_false_waiting_claim_does_not_shift_the_blame",
        "tests/protocols/transport/test_rendezvous_schemas.py::test_hello_of_any_shape_is_a_name_or_a_protocol_error",
        "tests/protocols/transport/test_rendezvous_schemas.py::test_registration_of_any_shape_is_typed_or_a_protocol_error",
        "tests/protocols/transport/test_socket_transport.py::test_deadline_blames_the_end_of_the_waiting_chain",
        "tests/protocols/tensor/test_tensor_eig.py::test_matches_numpy_on_a_random_covariance",
        "tests/protocols/testing/test_testing_kit.py::test_every_in_process_backend_passes_the_kit[paillier]",
        "tests/studies/test_benchmark_output.py::test_parquet_only_reads_every_row_and_reports_memory",
        "tests/studies/test_smoke.py::test_study_smoke[backends]",
        "tests/studies/test_smoke.py::test_study_smoke[aaai2020-table3]",
        "tests/studies/test_smoke.py::test_study_smoke[icassp2018]",
        "tests/studies/test_smoke.py::test_study_smoke[dsc2018-fig3]",
        "tests/studies/test_smoke.py::test_study_smoke[lossless]",
        "tests/studies/test_smoke.py::test_study_smoke[scaling]",
        # 2.0 s or more of wall time at a load average of 12 to 15 on the 2 shared cores (about
        # 1 s of CPU or more each), measured directory by directory for the < 2 min lane
        "tests/studies/test_smoke.py::test_study_smoke[dsc2018-fig4]",
        "tests/studies/test_smoke.py::test_study_smoke[icassp2016-table1]",
        "tests/studies/test_smoke.py::test_study_smoke[dsc2018-fig5]",
        "tests/studies/test_smoke.py::test_study_smoke[jstsp-capeagn]",
        "tests/studies/test_smoke.py::test_study_smoke[icassp2016-fig1]",
        "tests/studies/test_smoke.py::test_study_smoke[dp-noise]",
        "tests/studies/test_claims.py::test_accuracy_points_are_reproducible_so_verdicts_cannot_flip",
        "tests/docs/test_blocks.py::test_python_blocks_run[docs/tutorials/secure-sum.md:57]",
        "tests/docs/test_blocks.py::test_python_blocks_run[docs/explanation/reveal-components.md:13]",
        "tests/protocols/backends/test_dropout_sum.py::test_the_receivers_view_does_not_depend_on_a_dropped_providers_input",
        "tests/protocols/runtime/test_parties.py::test_run_processes_over_tls_gives_the_in_process_result",
        "tests/protocols/tensor/test_tensor_fast_eig.py::test_the_rotated_matrix_depends_on_the_eigenvalues_only",
        "tests/protocols/testing/test_testing_kit.py::test_only_the_kit_imports_hypothesis",
        "tests/protocols/runtime/test_parties.py::test_an_output_that_is_not_wire_encodable_is_reported_by_party",
        "tests/protocols/paillier/test_paillier_cipher.py::test_parallel_encryption_and_decryption_are_correct[fixed-base-None]",
        "tests/protocols/paillier/test_paillier_cipher.py::test_parallel_encryption_and_decryption_are_correct[standard-True]",
        "tests/pppca/test_pppca_limits.py::test_peak_memory_at_most_six_d_by_d[additive-sparse-masks]",
        "tests/cli/test_cli_hygiene.py::test_every_output_file_is_owner_only_whatever_the_umask",
        "tests/cli/test_workflow.py::test_plot_writes_a_png",
        "tests/pppca/test_pppca_dropout.py::test_a_late_provider_is_named_in_every_deployment_result_and_ends_without_error",
        "tests/pppca/test_chunked_parts.py::test_dask_part_on_a_local_cluster",
        "tests/deploy/test_floor.py::test_processes_give_the_threads_result_with_every_party_its_own_spec",
        "tests/dp/test_dpdpca.py::test_without_noise_the_user_gets_the_exact_centred_scatter",
        "tests/pppca/test_pppca_limits.py::test_leading_eigenpairs_match_full_eigh[300-10]",
        "tests/pppca/test_pppca_limits.py::test_peak_memory_at_most_six_d_by_d[additive]",
        "tests/pppca/test_pppca_limits.py::test_peak_memory_at_most_six_d_by_d[additive-masks]",
        "tests/cli/test_plot.py::test_plot_reads_the_consumer_table_of_mpc_pca_party",
        "tests/pppca/test_local_stats_pass.py::test_the_pass_allocates_no_copy_of_the_rows",
        "tests/cli/test_paillier_cli.py::test_pppca_he_with_fast_randomness_gives_the_secret_sharing_result",
        "tests/studies/test_claims.py::test_table3_verdict_is_about_the_he_over_ss_ratio_with_a_margin",
        "tests/protocols/backends/test_sparse_masks.py::test_sparse_sum_equals_plain_sum[100]",
        "tests/protocols/paillier/test_paillier_packing.py::test_unpacked_per_element_scalars",
        "tests/protocols/backends/test_paillier_backend.py::test_equals_the_additive_backend",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/multiprocess/`` ``processes`` and those of :data:`SLOW_TESTS` ``slow``."""
    for item in items:
        if Path(str(item.path)).resolve().is_relative_to(MULTIPROCESS):
            item.add_marker(pytest.mark.processes)
        if item.nodeid in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Name a failing test the moment it fails (``-q`` prints only a dot or an ``F`` until the end).

    The line ``FAILED <nodeid> (setup|call|teardown)`` goes to the terminal on a line of its own;
    the final summary with the tracebacks is unchanged.
    """
    reporter = _terminal_reporter
    if not report.failed or reporter is None:
        return
    reporter.write("\n")  # after the progress letters (-q keeps no file name that ensure_newline would see)
    reporter.write_line(f"FAILED {report.nodeid} ({report.when})", red=True, bold=True)


_terminal_reporter: pytest.TerminalReporter | None = None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Keep the terminal reporter for :func:`pytest_runtest_logreport` (none under ``-p no:terminal``)."""
    global _terminal_reporter
    _terminal_reporter = session.config.pluginmanager.get_plugin("terminalreporter")
