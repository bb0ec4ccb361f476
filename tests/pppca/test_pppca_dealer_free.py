"""PPPCA(reveal="components", dealer="providers"): the eigensolve's masks made by the providers (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.pppca.components import ComponentsSettings, components_settings
from mpc_pca.pppca.dealer_free import check_dealer
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.threads import run_protocol
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs


@pytest.fixture(scope="module")
def wine_split():
    rows = load_wine().data
    rng = np.random.default_rng(0)
    order = rng.permutation(rows.shape[0])
    train, held_out = rows[order[:150]], rows[order[150:]]
    return np.array_split(train, 3), held_out


@pytest.fixture(scope="module")
def runs(wine_split):
    parts, _ = wine_split
    out = {}
    for dealer in ("server", "providers"):
        protocol = PPPCADeployment(
            "pppca-ss", with_consumer=False, components=ComponentsSettings(dealer=dealer)
        )
        settings = {"n_components": 2, "backend": "additive", "reveal": "components", "dealer": dealer}
        # 60 s: shorter than the offline phase, which the leader's report after every item keeps alive
        out[dealer] = run_protocol(protocol, parts, settings, timeout=60)
    return out


@pytest.mark.slow
def test_held_out_projections_match_scikit_learn_within_1e4(runs, wine_split):
    parts, held_out = wine_split
    model = runs["providers"].output
    reference = PCA(2).fit(np.vstack(parts))
    components = align_signs(model.components, reference.components_)
    ours = (held_out - model.mean) @ components.T
    theirs = reference.transform(held_out)
    assert np.max(np.abs(ours - theirs)) <= 1e-4 * np.max(np.abs(theirs))
    errors = np.max(np.abs(components - reference.components_), axis=1)
    assert np.all(errors <= model.component_error_bounds)  # the fixed-point bound the fit reports
    assert np.allclose(model.explained_variance, reference.explained_variance_, rtol=1e-6)
    assert model.secure_eigensolve["dealer"] == "providers"


def test_the_estimator_announces_and_runs_its_dealer():
    """``PPPCA(dealer=...)`` reaches both the announcement (agreed) and the eigensolve's settings."""
    model = PPPCA(2, reveal="components", dealer="providers")
    assert model._settings()["dealer"] == "providers"
    assert model._protocol()._components.dealer == "providers"
    assert PPPCA(2, reveal="components")._protocol()._components.dealer == "server"


@pytest.mark.slow
def test_the_online_phase_takes_no_more_rounds_than_with_the_dealer(runs):
    dealer, providers = runs["server"].run, runs["providers"].run
    for name in ("provider0", "provider1", "provider2"):
        offline = providers.outputs[name]["offline_phase"]
        assert offline["rounds"] > 0 and offline["bytes_sent"] > 0
        online = providers.reports[name].rounds - offline["rounds"]
        # the same online protocol, less the dealer's seeds and holder 0's rotation (made offline now)
        assert online <= dealer.reports[name].rounds
        assert online >= dealer.reports[name].rounds - 3
        assert "offline_phase" not in dealer.outputs[name]
    # the server deals nothing: it only receives the mean phase's sums and the outputs
    assert providers.reports["server"].bytes_sent < dealer.reports["server"].bytes_sent / 10


@pytest.mark.slow
def test_both_dealers_give_the_same_components(runs, wine_split):
    a, b = runs["server"].output, runs["providers"].output
    reference = PCA(2).fit(np.vstack(wine_split[0]))
    for model in (a, b):  # each within the fit's own fixed-point bound of scikit-learn
        errors = np.max(
            np.abs(align_signs(model.components, reference.components_) - reference.components_), axis=1
        )
        assert np.all(errors <= model.component_error_bounds)
    assert (a.secure_eigensolve["dealer"], b.secure_eigensolve["dealer"]) == ("server", "providers")


def test_a_dealer_setting_out_of_place_is_refused_before_anything_is_sent():
    with pytest.raises(InputValidationError, match="dealer='nobody' is not one of"):
        components_settings({"dealer": "nobody"}, "components")
    with pytest.raises(InputValidationError, match="reveal='covariance' has no dealer"):
        check_dealer("providers", reveal="covariance")
    with pytest.raises(InputValidationError, match="eigensolver='krylov'"):
        components_settings({"dealer": "providers", "eigensolver": "krylov"}, "components")
    with pytest.raises(InputValidationError, match="crypten engine still needs the server"):
        check_dealer("providers", reveal="components", engine="crypten")
    assert components_settings({"dealer": "providers"}, "components").dealer == "providers"
    assert components_settings({"dealer": "providers"}, "spectrum").dealer == "providers"
    assert components_settings({}, "components").dealer == "server"
    with pytest.raises(InputValidationError, match="dealer"):
        PPPCA(2, reveal="components", dealer="somebody").fit(np.array_split(load_wine().data, 3))
    with pytest.raises(InputValidationError, match="reveal='covariance' has no dealer"):
        PPPCA(2, dealer="providers").fit(np.array_split(load_wine().data, 3))


@pytest.mark.slow
def test_spectrum_mode_without_a_dealer_matches_scikit_learn(wine_split):
    """The server sees ``Q C Q^T`` for a ``Q`` that is the product of one rotation per provider."""
    parts, _ = wine_split
    model = PPPCA(2, reveal="spectrum", dealer="providers", timeout=600).fit(parts)
    reference = PCA(2).fit(np.vstack(parts))
    errors = np.max(
        np.abs(align_signs(model.components_, reference.components_) - reference.components_), axis=1
    )
    assert np.all(errors <= model.component_error_bounds_)
    assert np.allclose(model.explained_variance_, reference.explained_variance_, rtol=1e-6)
    solve = model.model_.secure_eigensolve
    assert solve["dealer"] == "providers" and solve["reveal"] == "spectrum"


def test_the_server_refuses_an_offline_report_out_of_order():
    from mpc_pca.pppca.dealer_free import await_offline_phase
    from protocols.errors import ProtocolError
    from protocols.runtime import run_inprocess

    def leader(party):
        for done in (1, 3):  # skips item 2
            party.send("server", np.array([float(done), 4.0]))

    def server(party):
        await_offline_phase(party, "leader", 4)

    with pytest.raises(ProtocolError, match="'leader' reported offline item 3 of 4; expected 2 of 4"):
        run_inprocess({"leader": leader, "server": server}, timeout=10)
