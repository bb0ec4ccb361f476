"""capeAGN (Imtiaz & Sarwate JSTSP 2018 §5): protocol, estimator, baselines, validation."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

from mpc_pca import CapeAGN
from mpc_pca.data.latent import make_gaussian_mixture, make_topic_model
from mpc_pca.dp.agn_baselines import fit_agn_baseline
from mpc_pca.dp.agn_privacy import AGNBudget
from mpc_pca.dp.cape import joint_view_factor
from mpc_pca.dp.capeagn_deploy import CapeAGNDeployment
from mpc_pca.dp.mechanisms import Neighbour
from mpc_pca.dp.moments import (
    ShortDocumentsWarning,
    mog_second_moment,
    stm_second_moment,
    stm_whitened_third_moment,
)
from mpc_pca.dp.recovery import recovery_error
from mpc_pca.threads import ThreadsRun, run_protocol
from protocols.dp.calibration import analytic_gaussian_sigma
from protocols.errors import InputValidationError

SIZES = (1_000, 10_000, 100_000)
SITES = ("provider0", "provider1", "provider2", "provider3")


def capeagn_threads(parts, n_components, *, random_state=None, calibration="joint", **settings) -> ThreadsRun:
    """capeAGN's parties as threads (:func:`mpc_pca.threads.run_protocol`); role outputs in ``.run.outputs``."""
    given = {"n_components": n_components, "cape_calibration": calibration, **settings}
    return run_protocol(CapeAGNDeployment("capeagn"), parts, given, random_state=random_state)


def nonprivate_errors(model: str) -> list[float]:
    errors = []
    for n in SIZES:  # the same seed gives the same parameters for every n
        if model == "stm":
            sample = make_topic_model(n, n_sites=3, rng=np.random.default_rng(7))
            fitted = CapeAGN(3, model="stm", epsilon=math.inf, random_state=0).fit(sample.parts)
        else:
            sample = make_gaussian_mixture(n, n_sites=3, sigma=0.08, rng=np.random.default_rng(7))
            fitted = CapeAGN(3, model="mog", sigma=0.08, epsilon=math.inf, random_state=0).fit(sample.parts)
        errors.append(recovery_error(sample.components, sample.weights, fitted.components_, fitted.weights_))
    return [e.component_error for e in errors]


@pytest.mark.parametrize("model", ["stm", "mog"])
def test_nonprivate_recovery_error_falls_with_n(model):
    """epsilon = inf, K = 3, 3 sites, seed 7. STM: D = 30 words, 10 words/document;
    MOG: D = 10, |mu| = 0.5, sigma = 0.08. Measured relative component errors for
    N = 1e3, 1e4, 1e5: STM 0.028, 0.013, 0.0025; MOG 0.028, 0.0096, 0.0022."""
    errors = nonprivate_errors(model)
    assert errors[0] < 0.05
    assert errors[1] < 0.7 * errors[0]
    assert errors[2] < 0.5 * errors[1]
    assert errors[2] < 0.005


def test_infinite_epsilon_combines_exactly_the_pooled_moments_and_whitens_them():
    sample = make_topic_model(3_000, n_words=12, n_sites=4, rng=np.random.default_rng(1))
    result = capeagn_threads(sample.parts, 3, model="stm", epsilon=math.inf, random_state=0)
    pooled = np.vstack(sample.parts)
    model = result.output
    np.testing.assert_allclose(model.second_moment, stm_second_moment(pooled), atol=1e-15)
    w = model.whitening
    np.testing.assert_allclose(w.T @ stm_second_moment(pooled) @ w, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(model.whitened_third_moment, stm_whitened_third_moment(pooled, w), atol=1e-12)
    for site in SITES:
        components, weights = result.run.outputs[site]
        np.testing.assert_array_equal(components, model.components)
        np.testing.assert_array_equal(weights, model.weights)
    np.testing.assert_allclose(model.components.sum(axis=1), 1.0)


def test_whitening_of_mog_without_noise_is_exact():
    sample = make_gaussian_mixture(2_000, n_sites=2, sigma=0.05, rng=np.random.default_rng(2))
    model = CapeAGN(3, model="mog", sigma=0.05, epsilon=math.inf, random_state=0).fit(sample.parts)
    m2 = mog_second_moment(np.vstack(sample.parts), 0.05)
    np.testing.assert_allclose(model.whitening_.T @ m2 @ model.whitening_, np.eye(3), atol=1e-10)


def test_classical_calibration_is_the_papers_formula_and_is_refused_per_release():
    sample = make_topic_model(2_000, n_words=12, n_sites=3, rng=np.random.default_rng(4))
    n = sum(p.shape[0] for p in sample.parts)
    model = capeagn_threads(
        sample.parts,
        3,
        epsilon=1.8,
        delta=1e-4,
        calibration="paper",
        noise_calibration="classical",
        random_state=1,
    ).output
    # sqrt(2)/N * sqrt(2 ln(1.25/delta2)) / epsilon2 with (epsilon2, delta2) = (0.9, 5e-5)
    expected = math.sqrt(2) / n * math.sqrt(2 * math.log(1.25 / 5e-5)) / 0.9
    assert model.aggregate_scale(2) == pytest.approx(expected, rel=1e-12)
    # each release spends epsilon/2 = 1: outside the classical formula's proof, refused before any site runs
    with pytest.raises(InputValidationError, match="classical"):
        capeagn_threads(sample.parts, 3, epsilon=2.0, noise_calibration="classical")
    with pytest.raises(InputValidationError, match="laplace"):
        CapeAGN(3, noise_calibration="laplace").fit(sample.parts)


def test_cape_noise_is_zero_sum_and_the_paper_calibration_gives_pooled_scales():
    sample = make_topic_model(4_000, n_words=15, n_sites=4, rng=np.random.default_rng(3))
    sizes = [p.shape[0] for p in sample.parts]
    result = capeagn_threads(
        sample.parts, 3, model="stm", epsilon=2.0, delta=1e-4, calibration="paper", random_state=5
    )
    model = result.output
    mus = np.asarray(sizes) / sum(sizes)
    for stage in ("m2", "m3"):
        zero_sum = result.run.outputs["noise-generator"][stage]
        total = sum(mu * e for mu, e in zip(mus, zero_sum, strict=True))
        assert np.max(np.abs(total)) < 1e-12
    budget = AGNBudget("stm", 15, None, 2.0, 1e-4, Neighbour.REPLACE_ONE, 0.5)
    n = sum(sizes)
    assert model.aggregate_scale(2) == pytest.approx(budget.m2_scale(n), rel=1e-12)
    assert model.aggregate_scale(3) == pytest.approx(budget.m3_scale(n, model.whitening), rel=1e-12)
    # the pooled-data scale of M2 is the analytic Gaussian sigma for Delta2 = sqrt(2)/N at (epsilon2, delta2)
    expected = analytic_gaussian_sigma(math.sqrt(2) / n, 1.0, 5e-5)
    assert model.aggregate_scale(2) == pytest.approx(expected, rel=1e-9)
    assert model.effective_epsilon == pytest.approx(2.0 * joint_view_factor(4))
    joint = capeagn_threads(sample.parts, 3, model="stm", epsilon=2.0, delta=1e-4, random_state=5).output
    assert joint.aggregate_scale(2) == pytest.approx(
        joint_view_factor(4) * model.aggregate_scale(2), rel=1e-12
    )
    assert joint.effective_epsilon == 2.0


def test_conventional_noise_is_sqrt_s_times_pooled_and_capeagn_beats_it():
    """10 equal sites, N = 20000 documents, epsilon = 1, seeds 0..4: the aggregate M2 noise of
    conventional averaging is sqrt(S) times the pooled one, and capeAGN's mean recovery error is
    below conventional's (paper calibration: within 30% of pooled AGN)."""
    sample = make_topic_model(20_000, n_sites=10, rng=np.random.default_rng(4))
    pooled = fit_agn_baseline(sample.parts, 3, "pooled", epsilon=1.0, random_state=0)
    conventional = fit_agn_baseline(sample.parts, 3, "conventional", epsilon=1.0, random_state=0)
    assert conventional.m2_noise_scale == pytest.approx(math.sqrt(10) * pooled.m2_noise_scale, rel=1e-12)
    errors: dict[str, list[float]] = {"cape": [], "conventional": [], "pooled": []}
    for seed in range(5):
        fits = {
            "cape": CapeAGN(3, epsilon=1.0, calibration="paper", random_state=seed).fit(sample.parts),
            "conventional": fit_agn_baseline(sample.parts, 3, "conventional", epsilon=1.0, random_state=seed),
            "pooled": fit_agn_baseline(sample.parts, 3, "pooled", epsilon=1.0, random_state=seed),
        }
        for name, fit in fits.items():
            comps = getattr(fit, "components_", getattr(fit, "components", None))
            weights = getattr(fit, "weights_", getattr(fit, "weights", None))
            errors[name].append(
                recovery_error(sample.components, sample.weights, comps, weights).component_error
            )
    means = {name: float(np.mean(v)) for name, v in errors.items()}
    assert means["cape"] < 0.6 * means["conventional"]
    assert means["cape"] < 1.3 * means["pooled"]


def test_estimator_attributes_and_params():
    sample = make_gaussian_mixture(1_500, n_features=6, n_sites=3, sigma=0.1, rng=np.random.default_rng(6))
    model = CapeAGN(2, model="mog", sigma=0.1, epsilon=5.0, random_state=1)
    assert model.get_params()["sigma"] == 0.1
    model.fit(sample.parts)
    assert model.components_.shape == (2, 6) and model.whitening_.shape == (6, 2)
    assert model.weights_.sum() == pytest.approx(1.0)
    assert model.n_samples_ == 1_500 and model.n_features_in_ == 6 and model.n_components_ == 2
    assert set(model.report_) == {"provider0", "provider1", "provider2", "aggregator", "noise-generator"}
    assert model.m3_noise_scale_ > 0 and model.effective_epsilon_ == 5.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, r"epsilon.*0\.0"),
        ({"epsilon": -1.0}, r"epsilon.*-1\.0"),
        ({"delta": 1.0}, r"delta.*1\.0"),
        ({"delta": 0.0}, r"delta.*0\.0"),
        ({"n_components": 7}, r"n_components=7 is out of range; it must be between 1 and n_features=6"),
        ({"budget_split": 1.0}, r"budget_split=1\.0 must lie strictly between 0 and 1"),
        ({"calibration": "nope"}, r"calibration='nope'"),
        ({"model": "lda"}, r"model='lda' is not supported"),
        ({"sigma": None}, r"model='mog' needs sigma"),
        ({"row_norm": "error"}, r"norm 1\.5 > 1"),
    ],
)
def test_bad_inputs_are_refused_before_the_run(kwargs, message):
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(20, 6)) * 0.05 for _ in range(2)]
    parts[1][3] = 0.0
    parts[1][3, 0] = 1.5
    params = {
        "n_components": 2,
        "model": "mog",
        "sigma": 0.05,
        "epsilon": 1.0,
        "delta": 1e-5,
        "random_state": 0,
    }
    params.update(kwargs)
    with pytest.raises(InputValidationError, match=message):
        CapeAGN(**params).fit(parts)


def test_nan_and_bad_documents_are_refused():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(10, 4)) * 0.1 for _ in range(2)]
    parts[0][2, 1] = np.nan
    with pytest.raises(InputValidationError, match=r"part 0.*(NaN|finite)"):
        CapeAGN(2, model="mog", sigma=0.1, random_state=0).fit(parts)
    docs = [np.full((5, 4), 1.0), np.full((2, 4), 0.0)]
    docs[1][1] = [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(InputValidationError, match="part 1: none of its 2 documents has 3 words"):
        CapeAGN(2, model="stm", random_state=0).fit(docs)


def test_short_documents_change_nothing_without_noise():
    """Documents of < 3 words count in N and contribute zero: the moments scale by the usable share, which cancels.

    With ``epsilon=inf`` the components and weights fitted with 30 % short
    documents added (rows of zeros, one or two words) are those fitted without
    them; a short document mis-weighted (or N not counting it) would move them.
    """
    sample = make_topic_model(3000, n_words=12, n_topics=3, n_sites=2, rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    with_short = []
    for part in sample.parts:
        short = np.zeros((int(0.3 * part.shape[0]), part.shape[1]))
        for row in short:
            row[rng.integers(0, part.shape[1], size=rng.integers(0, 3))] += 1.0
        with_short.append(np.vstack([part, short]))
    fit = partial(CapeAGN, 3, model="stm", epsilon=math.inf, random_state=0)
    plain = fit().fit(sample.parts)
    with pytest.warns(ShortDocumentsWarning, match=r"part 0: \d+ of \d+ documents have fewer than 3 words"):
        padded = fit().fit(with_short)
    assert padded.n_samples_ == sum(p.shape[0] for p in with_short) > plain.n_samples_ == 3000
    np.testing.assert_allclose(padded.components_, plain.components_, atol=1e-8)
    np.testing.assert_allclose(padded.weights_, plain.weights_, atol=1e-8)


def test_aggregate_noise_has_the_pooled_variance_in_both_stages():
    """Measured, not configured: 120 runs (seeds 0..119) on fixed data, paper calibration, S = 4.

    Per unique entry the aggregator's noise (M2_hat - M2 and T_hat - M3(W, W, W))
    must have variance tau_pool^2 with tau3 = ||W||_2^3 Delta3 sqrt(2 ln(1.25/delta3)) / epsilon3.
    Chi-square test on the pooled standardised squares, two-sided, alpha = 0.01.
    """
    from scipy import stats

    from mpc_pca.dp.tensors import pack_symmetric3

    sample = make_topic_model(800, n_words=8, n_topics=2, n_sites=4, rng=np.random.default_rng(9))
    pooled = np.vstack(sample.parts)
    n, eps, dlt = 800, 30.0, 1e-4
    m2 = stm_second_moment(pooled)
    z2, z3 = [], []
    for seed in range(120):
        model = capeagn_threads(
            sample.parts, 2, model="stm", epsilon=eps, delta=dlt, calibration="paper", random_state=seed
        ).output
        tau2 = analytic_gaussian_sigma(math.sqrt(2) / n, eps / 2, dlt / 2)
        tau3 = np.linalg.norm(model.whitening, 2) ** 3 * tau2
        z2.append((model.second_moment - m2)[np.triu_indices(8)] / tau2)
        exact = stm_whitened_third_moment(pooled, model.whitening)
        z3.append(pack_symmetric3(model.whitened_third_moment - exact) / tau3)
    for z in (np.concatenate(z2), np.concatenate(z3)):
        low, high = stats.chi2.ppf([0.005, 0.995], z.size)
        assert low < np.sum(z**2) < high, np.mean(z**2)
