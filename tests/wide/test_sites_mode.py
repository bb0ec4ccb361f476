"""pppca-randomized with ``iterates="sites"``: provider0 leads the iterations, the server learns only the output."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca import PPPCA
from mpc_pca.cli import main
from mpc_pca.pppca.randomized import SolverChoiceWarning
from mpc_pca.registry import entry
from mpc_pca.roles import SERVER
from mpc_pca.threads import run_protocol
from mpc_pca.wide.roles import answer_size
from protocols.errors import InputValidationError, ProtocolError
from protocols.testing.recording import Recorder
from tests.wide.helpers import gapped_rows, reference, split

K = 4
BACKENDS = ("additive", "additive-masks", "additive-sparse-masks")


def both_modes(parts, **settings):
    """The server-mode and sites-mode runs of the same settings (same start block)."""
    runs = {}
    for mode in ("server", "sites"):
        runs[mode] = run_protocol(entry("pppca-randomized"), parts, {**settings, "iterates": mode})
    return runs["server"], runs["sites"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("standardize", "tol"), [(False, None), (True, 1e-10)])
def test_the_sites_mode_equals_the_server_mode_and_the_plaintext_reference(backend, standardize, tol):
    parts = split(gapped_rows(500, 60, seed=7), [150, 3, 347])
    settings = {"n_components": K, "iterated_power": 30 if tol else 4, "tol": tol, "start_seed": 5,
                "standardize": standardize, "backend": backend}  # fmt: skip
    server, sites = both_modes(parts, **settings)
    assert sites.output.result_fields()["iterates"] == "sites"
    assert server.output.result_fields()["iterates"] == "server"
    assert np.max(np.abs(sites.output.components - server.output.components)) <= 1e-10
    assert np.max(np.abs(sites.output.explained_variance - server.output.explained_variance)) <= 1e-10
    assert sites.output.solver.report() == server.output.solver.report()
    ref = reference(
        parts, K, standardize=standardize, iterated_power=settings["iterated_power"], tol=tol, seed=5
    )
    assert sites.output.solver.stop == ref.stop == ("tol" if tol else "iterated_power")
    assert sites.output.solver.n_products == ref.n_products == (ref.n_products if tol else 5)
    assert tol is None or ref.n_products < 31  # the early stop ran
    assert np.max(np.abs(sites.output.components - ref.components)) <= 1e-8
    assert np.max(np.abs(sites.output.explained_variance - ref.eigenvalues) / ref.eigenvalues) <= 1e-8
    for name in ("provider0", "provider1", "provider2"):  # each site's own scores, as in the server mode
        assert np.max(np.abs(sites.run.outputs[name]["scores"] - server.run.outputs[name]["scores"])) <= 1e-10


def server_view_after_mean_phase(parts, mode, backend="additive"):
    """Every message the server received after it sent the mean phase's ``[mu, D, N]``."""
    recorder = Recorder()
    settings = {"n_components": 2, "iterated_power": 3, "start_seed": 1, "iterates": mode, "backend": backend}
    run_protocol(entry("pppca-randomized"), parts, settings, wrap_channel=recorder.wrap)
    width = parts[0].shape[1]
    first_header = next(
        i for i, d in enumerate(recorder.deliveries)
        if d.sender == SERVER and isinstance(d.message, np.ndarray) and d.message.shape == (2 * width + 1,)
    )  # fmt: skip
    return [d for d in recorder.deliveries[first_header:] if d.receiver == SERVER]


def only_the_answer(view, d, config_size):
    """True when the server received one message after the mean phase: provider0's 1-D answer."""
    return (
        len(view) == 1
        and view[0].sender == "provider0"
        and isinstance(view[0].message, np.ndarray)
        and view[0].message.shape == (config_size,)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_the_sites_mode_the_server_receives_only_the_answer_after_the_mean_phase(backend):
    d = 30
    parts = split(gapped_rows(200, d, seed=2), [80, 50, 70])
    size = 2 * 2 + 2 * d + 4
    view = server_view_after_mean_phase(parts, "sites", backend)
    assert only_the_answer(view, d, size)
    assert not any(isinstance(m.message, np.ndarray) and m.message.ndim == 2 for m in view)  # no d x b block
    # the same check fails in the server mode: there it receives every product's secure-sum traffic
    server_view = server_view_after_mean_phase(parts, "server", backend)
    assert not only_the_answer(server_view, d, size)
    assert sum(isinstance(m.message, np.ndarray) and m.message.shape == (d, 12) for m in server_view) == 4 * 3


def test_answer_size_counts_the_report():
    run = run_protocol(entry("pppca-randomized"), split(gapped_rows(60, 6, seed=1), [20, 20, 20]),
                       {"n_components": 2, "iterates": "sites"})  # fmt: skip
    assert answer_size(run.config.config) == 2 * 2 + 2 * 6 + 4
    assert run.config.config.lead == "provider0"


def test_a_rogue_provider0_sending_a_block_that_is_not_orthonormal_is_refused_naming_it():
    d, b = 20, 12
    parts = split(gapped_rows(150, d, seed=4), [50, 50, 50])

    def stretch(to, message):
        if (
            to != SERVER
            and isinstance(message, np.ndarray)
            and message.dtype == np.float64
            and message.shape == (d, b)
        ):
            return 3.0 * message
        return message

    recorder = Recorder(faults={"provider0": stretch})
    with pytest.raises(ProtocolError, match="'provider0' sent a block whose columns have norms up to 3"):
        run_protocol(entry("pppca-randomized"), parts, {"n_components": 2, "iterates": "sites"},
                     wrap_channel=recorder.wrap)  # fmt: skip


def test_a_rogue_provider0_sending_an_answer_against_the_stop_rule_is_refused_naming_it():
    d, k = 20, 2
    parts = split(gapped_rows(150, d, seed=4), [50, 50, 50])

    def early(to, message):
        if isinstance(message, np.ndarray) and message.shape == (2 * k + k * d + 4,):
            message = message.copy()
            message[-1] = 2.0  # claims 2 products where the agreed cap (no tol) is 4
        return message

    recorder = Recorder(faults={"provider0": early})
    with pytest.raises(ProtocolError, match="'provider0' sent a solver report against the agreed stop rule"):
        run_protocol(entry("pppca-randomized"), parts, {"n_components": k, "iterated_power": 3,
                     "iterates": "sites"}, wrap_channel=recorder.wrap)  # fmt: skip


def test_parties_that_disagree_on_iterates_are_refused_naming_both():
    from mpc_pca.floor import floor_public

    protocol = entry("pppca-randomized")
    parts = split(gapped_rows(40, 6, seed=12), [15, 25])
    holders = protocol.data_holders(2)
    data = dict(zip(holders, parts, strict=True))
    views = {}
    for name in protocol.layout(2):
        settings = protocol.settings(
            {"n_components": 2, "iterates": "sites" if name == "provider1" else "server"}
        )
        views[name] = {
            **floor_public(protocol.name, 2, name in data),
            **protocol.public(name, data.get(name), settings),
        }
    with pytest.raises(InputValidationError, match="the parties disagree on iterates") as caught:
        protocol.configure(views, 2)
    assert "'provider1': 'sites'" in str(caught.value) and "'provider0': 'server'" in str(caught.value)


def test_an_unknown_mode_is_refused_naming_it_and_the_choices():
    parts = split(gapped_rows(40, 6, seed=12), [15, 25])
    with pytest.raises(
        InputValidationError, match=r"iterates='shares' is not a mode .* \['server', 'sites'\]"
    ):
        run_protocol(entry("pppca-randomized"), parts, {"n_components": 2, "iterates": "shares"})


def test_the_estimator_runs_the_sites_mode_and_refuses_it_with_the_exact_solver():
    rows = gapped_rows(300, 40, seed=8)
    parts = split(rows, [100, 120, 80])
    fit = {"n_components": K, "random_state": 3, "iterated_power": 6}
    server = PPPCA(svd_solver="randomized", **fit).fit(parts)
    sites = PPPCA(svd_solver="randomized", iterates="sites", **fit).fit(parts)
    assert np.max(np.abs(sites.components_ - server.components_)) <= 1e-10
    assert sites.solver_report_ == server.solver_report_
    assert sites.model_.iterates == "sites" and server.model_.iterates == "server"
    # "auto" with iterates="sites" runs the randomized solver even for 40 columns, and says so
    with pytest.warns(SolverChoiceWarning, match=r"svd_solver='auto' chose 'randomized' .* iterates='sites'"):
        auto = PPPCA(iterates="sites", **fit).fit(parts)
    assert auto.svd_solver_ == "randomized" and np.array_equal(auto.components_, sites.components_)
    with pytest.raises(InputValidationError, match=r"iterates='sites' .* svd_solver='full' runs the exact"):
        PPPCA(svd_solver="full", iterates="sites", n_components=K).fit(parts)
    with pytest.raises(
        InputValidationError, match=r"iterates='shares' is not supported; choose one of \['server', 'sites'\]"
    ):
        PPPCA(svd_solver="randomized", iterates="shares", n_components=K).fit(parts)


def test_mpc_pca_run_with_iterates_sites(tmp_path):
    rows = gapped_rows(150, 40, seed=2)
    data = tmp_path / "rows.csv"
    np.savetxt(data, rows, delimiter=",", fmt="%.17g")
    argv = ["run", "--protocol", "pppca-ss", "--svd-solver", "randomized", "--data", str(data), "--no-header",
            "--parties", "3", "--n-components", "4", "--start-seed", "9", "--iterated-power", "5",
            "--n-oversamples", "3"]  # fmt: skip
    for mode in ("server", "sites"):
        assert main([*argv, "--iterates", mode, "--output", str(tmp_path / f"{mode}.json")]) == 0
    server, sites = (json.loads((tmp_path / f"{m}.json").read_text()) for m in ("server", "sites"))
    assert sites["iterates"] == "sites" and server["iterates"] == "server"
    assert sites["solver"] == server["solver"] and sites["solver"]["n_products"] == 6
    assert np.max(np.abs(np.asarray(sites["components"]) - np.asarray(server["components"]))) <= 1e-10
    ref = reference([rows], 4, seed=9, iterated_power=5, n_oversamples=3)
    assert np.max(np.abs(np.asarray(sites["components"]) - ref.components)) <= 1e-8


def test_two_sites_are_refused_since_provider0_would_learn_the_other_sites_products():
    parts = split(gapped_rows(60, 8, seed=5), [30, 30])
    with pytest.raises(
        InputValidationError, match=r"refused with 2 sites: provider0 would learn provider1's own"
    ):
        run_protocol(entry("pppca-randomized"), parts, {"n_components": 2, "iterates": "sites"})
    with pytest.raises(InputValidationError, match="refused with 2 sites"):
        PPPCA(svd_solver="randomized", iterates="sites", n_components=2).fit(parts)
    # the server mode runs with two sites, and the sites mode with three
    run_protocol(entry("pppca-randomized"), parts, {"n_components": 2, "iterates": "server"})
    run_protocol(entry("pppca-randomized"), split(gapped_rows(60, 8, seed=5), [20, 20, 20]),
                 {"n_components": 2, "iterates": "sites"})  # fmt: skip
