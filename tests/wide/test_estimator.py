"""``PPPCA(svd_solver="randomized")`` and ``"auto"``: the pppca-randomized protocol behind scikit-learn's parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.decomposition import PCA

import mpc_pca.fitting
from mpc_pca import PPPCA
from mpc_pca.pppca.randomized import AUTO_MIN_FEATURES, RANDOMIZED_BACKENDS, SolverChoiceWarning
from mpc_pca.wide.deployment import BACKENDS
from protocols.errors import InputValidationError
from tests.wide.helpers import SPIKES, gapped_rows, reference, split, subspace_sine

K = 5
SIZES = [70, 4, 126]


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    return gapped_rows(sum(SIZES), 60, seed=11)


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize(
    ("options", "solver"),
    [
        ({"iterated_power": 3, "n_oversamples": 4, "tol": 0.0}, {"iterated_power": 3, "n_oversamples": 4}),
        ({"iterated_power": "auto", "n_oversamples": 2, "tol": 1e-9}, {"n_oversamples": 2, "tol": 1e-9}),
    ],
)
def test_the_estimator_equals_the_plaintext_reference_on_the_pooled_rows(rows, standardize, options, solver):
    parts = split(rows, SIZES)
    fitted = PPPCA(K, svd_solver="randomized", random_state=17, standardize=standardize, **options).fit(parts)
    ref = reference([rows], K, standardize=standardize, seed=17, **solver)
    assert fitted.svd_solver_ == "randomized" and fitted.solver_report_["n_products"] == ref.n_products
    assert fitted.solver_report_["block_size"] == K + options["n_oversamples"]
    # the fixed-point rounding of the products alone (unstandardized); standardized, the pooled
    # standard deviations come from sums rounded to fixed point too (about 1e-9 relative)
    close = 1e-8 if standardize else 1e-10
    assert np.max(np.abs(fitted.components_ - ref.components)) <= close
    assert np.max(np.abs(fitted.explained_variance_ - ref.eigenvalues) / ref.eigenvalues) <= close
    # another start seed is another start block: a different (equally valid) answer after 4 products
    other = PPPCA(K, svd_solver="randomized", random_state=18, standardize=standardize, **options).fit(parts)
    assert np.max(np.abs(other.components_ - fitted.components_)) > 1e-8


@pytest.mark.parametrize("standardize", [False, True])
def test_within_the_stop_rule_bound_of_scikit_learns_exact_pca_on_a_gapped_spectrum(rows, standardize):
    fitted = PPPCA(K, svd_solver="randomized", tol=1e-9, iterated_power=60, standardize=standardize).fit(
        split(rows, SIZES)
    )
    pooled = (rows - rows.mean(axis=0)) / rows.std(axis=0) if standardize else rows
    exact = PCA(K, svd_solver="full").fit(pooled)
    assert fitted.solver_report_["stop"] == "tol"
    residuals = np.asarray(fitted.solver_report_["residuals"])
    values = np.concatenate([exact.explained_variance_, [PCA(K + 1).fit(pooled).explained_variance_[K]]])
    gaps = np.minimum(np.abs(np.diff(values))[:K], np.r_[np.inf, np.abs(np.diff(values))[: K - 1]])
    # some eigenvalue within each residual; each vector within r / gap of its eigenvector (Davis-Kahan);
    # plus the fixed-point rounding of the secure sums (standardized: of the pooled standard deviations,
    # about 1e-9 relative; unstandardized: product_error_bound_)
    rounding = (1e-9 * exact.explained_variance_[0]) if standardize else fitted.product_error_bound_
    assert np.all(np.abs(fitted.explained_variance_ - exact.explained_variance_) <= residuals + rounding)
    for j in range(K):
        sine = subspace_sine(fitted.components_[j : j + 1], exact.components_[j : j + 1])
        assert sine <= (residuals[j] + rounding) / gaps[j]
    # deterministic signs as scikit-learn's (largest-magnitude entry positive): the same vectors, not their negatives
    assert np.max(np.abs(fitted.components_ - exact.components_)) <= 1e-6
    # the server learnt the trace, so the ratios and the noise variance are scikit-learn's
    assert np.allclose(fitted.explained_variance_ratio_, exact.explained_variance_ratio_, rtol=1e-8, atol=0)
    assert fitted.noise_variance_ == pytest.approx(exact.noise_variance_, rel=1e-6)
    assert fitted.total_variance_ == pytest.approx(np.sum(PCA().fit(pooled).explained_variance_), rel=1e-8)
    assert fitted.mean_ == pytest.approx(rows.mean(axis=0), abs=1e-9)


def test_fit_transform_returns_each_sites_own_scores_in_row_order(rows):
    groups = np.tile([2, 0, 1], rows.shape[0] // 3 + 1)[: rows.shape[0]]
    model = PPPCA(K, svd_solver="randomized", iterated_power=60, tol=1e-12, whiten=True)
    scores = model.fit_transform(rows, groups=groups)
    assert scores.shape == (rows.shape[0], K)
    assert np.allclose(scores, model.transform(rows), atol=1e-9)
    exact = PCA(K, whiten=True).fit(rows)
    assert np.allclose(scores, exact.transform(rows), atol=1e-6)


def test_auto_picks_randomized_by_width_and_says_so():
    rng = np.random.default_rng(5)
    narrow = rng.normal(size=(60, AUTO_MIN_FEATURES - 1))
    wide = rng.normal(size=(60, AUTO_MIN_FEATURES))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolverChoiceWarning)
        assert PPPCA(3).fit([narrow[:30], narrow[30:]]).svd_solver_ == "covariance_eigh"
        # a setting randomized cannot run with keeps the exact path, silently (n_components=None: all)
        assert PPPCA().fit([wide[:30], wide[30:]]).svd_solver_ == "covariance_eigh"
    with pytest.warns(SolverChoiceWarning, match=rf"chose 'randomized'.*d={AUTO_MIN_FEATURES} >= "):
        model = PPPCA(3, random_state=2).fit([wide[:30], wide[30:]])
    assert model.svd_solver_ == "randomized" and model.model_.solver.block_size == 13
    explicit = PPPCA(3, svd_solver="randomized", random_state=2).fit([wide[:30], wide[30:]])
    assert np.array_equal(model.components_, explicit.components_)


@pytest.fixture
def nothing_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a protocol ran")

    monkeypatch.setattr(mpc_pca.fitting, "run_protocol", refuse)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"reveal": "spectrum"}, "reveal='spectrum'"),
        ({"reveal": "components"}, "reveal='components'"),
        ({"n_components": 0.9}, "n_components=0.9"),
        ({"n_components": "mle"}, "n_components='mle'"),
        ({"n_components": 41}, r"n_components=41 .*min\(N=40, d=50\)"),
        ({"backend": "paillier"}, "backend='paillier'"),
        ({"backend": "additive-masks", "dropout_threshold": 2}, "dropout_threshold=2"),
        ({"tol": 1.5}, "tol=1.5"),
    ],
)
def test_refused_combinations_name_both_values_before_anything_runs(params, named, nothing_runs):
    parts = np.array_split(np.random.default_rng(0).normal(size=(40, 50)), 2)
    model = PPPCA(**{"n_components": 3, "svd_solver": "randomized", **params})
    with pytest.raises(InputValidationError, match=named) as refused:
        model.fit(parts)
    assert "svd_solver='randomized'" in str(refused.value)
    assert not hasattr(model, "components_")


def test_n_components_none_is_min_n_d_as_scikit_learns_randomized_solver():
    rows = np.random.default_rng(4).normal(size=(12, 30))
    fitted = PPPCA(svd_solver="randomized", tol=0.0, iterated_power=3).fit([rows[:5], rows[5:]])
    assert fitted.n_components_ == 12
    assert np.allclose(
        fitted.explained_variance_[:11], PCA(svd_solver="full").fit(rows).explained_variance_[:11]
    )


def test_the_exact_path_keeps_mle_and_ratio_choices():
    rows = np.random.default_rng(6).normal(size=(80, 6)) * np.arange(1, 7)
    for n_components in ("mle", 0.8):
        ours = PPPCA(n_components).fit([rows[:30], rows[30:]])
        assert ours.svd_solver_ == "covariance_eigh"
        assert ours.n_components_ == PCA(n_components, svd_solver="full").fit(rows).n_components_


def test_sparse_rows_are_refused_by_randomized_and_fitted_exactly_by_auto(monkeypatch):
    rows = sp.random(80, 30, density=0.3, random_state=1, format="csr")
    with pytest.raises(InputValidationError, match="sparse rows: svd_solver='randomized'"):
        PPPCA(2, svd_solver="randomized").fit(rows)
    assert PPPCA(2).fit(rows).svd_solver_ == "covariance_eigh"


def test_parameters_clone_and_a_refit_with_the_other_solver(rows):
    model = PPPCA(K, svd_solver="randomized", iterated_power=2, n_oversamples=3, random_state=4, tol=0.0)
    twin = clone(model)
    assert twin.get_params() == model.get_params()
    parts = split(rows, SIZES)
    assert np.array_equal(twin.fit(parts).components_, model.fit(parts).components_)
    assert model.solver_report_["n_products"] == 3 and model.solver_report_["block_size"] == K + 3
    model.set_params(svd_solver="full").fit(parts)
    assert model.svd_solver_ == "covariance_eigh" and hasattr(model, "variance_error_bound_")
    assert not hasattr(model, "solver_report_") and not hasattr(model, "total_variance_")
    model.set_params(svd_solver="randomized").fit(parts)
    assert not hasattr(model, "variance_error_bound_")


def test_a_random_state_instance_draws_the_public_seed_reproducibly(rows):
    parts = split(rows, SIZES)
    fits = [
        PPPCA(K, svd_solver="randomized", iterated_power=1, random_state=np.random.RandomState(3)).fit(parts)
        for _ in range(2)
    ]
    assert np.array_equal(fits[0].components_, fits[1].components_)
    assert fits[0]._settings()["start_seed"] == fits[1]._settings()["start_seed"]


def test_float32_rows_give_float32_attributes(rows):
    fitted = PPPCA(K, svd_solver="randomized").fit(split(rows.astype(np.float32), SIZES))
    assert fitted.components_.dtype == np.float32 and fitted.explained_variance_ratio_.dtype == np.float32


def test_the_estimators_backend_list_is_the_protocols():
    assert RANDOMIZED_BACKENDS == BACKENDS
    assert SPIKES.size == K
