"""Statistical calibration tests: every mechanism's empirical noise matches its formula.

All tests use fixed seeds and the explicit significance level ``ALPHA``; a
test with several simultaneous checks splits ``ALPHA`` among them
(Bonferroni). No test retries. With the seeds fixed the outcomes are
deterministic; the level says how unlikely a failure would be for a correct
implementation under fresh seeds.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import integrate, special, stats

from mpc_pca.dp.baselines import AnalyzeGaussPCA
from mpc_pca.dp.bingham import bingham_pair_sweeps, sample_matrix_bingham
from mpc_pca.dp.cape_deploy import CapeDeployment
from mpc_pca.dp.dispca_deploy import DisPCADeployment
from mpc_pca.dp.mechanisms import (
    AnalyzeGauss,
    gaussian_noise_scale,
    power_method_noise_scale,
    second_moment_sensitivity,
    symmetric_gaussian_noise,
    wishart_noise_retracted_not_dp,
)
from mpc_pca.dp.power_method import private_power_method
from mpc_pca.threads import run_protocol

ALPHA = 0.001


def upper(m: np.ndarray) -> np.ndarray:
    rows, cols = np.triu_indices(m.shape[-1])
    return m[..., rows, cols]


def assert_zero_mean_variance(samples: np.ndarray, variance: float, alpha: float = ALPHA) -> None:
    """Two-sided chi-square test of ``Var = variance`` for i.i.d. zero-mean normal samples.

    ``sum x^2 / variance ~ chi2(n)``; also rejects a wrong mean, which inflates the statistic.
    """
    x = np.ravel(samples)
    statistic = float(np.sum(x**2) / variance)
    p_value = 2.0 * min(stats.chi2.cdf(statistic, x.size), stats.chi2.sf(statistic, x.size))
    ratio = np.mean(x**2) / variance
    assert p_value > alpha, f"empirical/nominal variance = {ratio:.4f} (n={x.size}), p = {p_value:.2e}"


def assert_mean(samples: np.ndarray, mean: float, sd: float, alpha: float = ALPHA) -> None:
    """Two-sided z-test of the sample mean against a known mean and standard deviation."""
    x = np.ravel(samples)
    z = (x.mean() - mean) / (sd / np.sqrt(x.size))
    p_value = 2.0 * stats.norm.sf(abs(z))
    assert p_value > alpha, f"mean {x.mean():.6g} vs {mean:.6g} (z = {z:.2f}, p = {p_value:.2e})"


# -- Analyze Gauss ------------------------------------------------------------------


def test_analyze_gauss_entries_have_the_calibrated_variance():
    mech = AnalyzeGauss(
        epsilon=0.7,
        delta=1e-4,
        sensitivity=second_moment_sensitivity(500, "replace-one"),
        calibration="classical",
    )
    expected = np.sqrt(2) / 500 * np.sqrt(2 * np.log(1.25 / 1e-4)) / 0.7
    assert mech.scale == pytest.approx(expected, rel=1e-12)
    rng = np.random.default_rng(11)
    draws = np.stack([mech.noise(30, rng) for _ in range(10)])
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    diag = np.diagonal(draws, axis1=1, axis2=2)
    rows, cols = np.triu_indices(30, 1)
    off = draws[:, rows, cols]
    assert_zero_mean_variance(diag, mech.scale**2, ALPHA / 2)
    assert_zero_mean_variance(off, mech.scale**2, ALPHA / 2)


def test_analyze_gauss_entries_are_uncorrelated():
    rng = np.random.default_rng(12)
    draws = np.stack([symmetric_gaussian_noise(4, 1.0, rng) for _ in range(4000)])
    # two entries sharing a row, and a diagonal with an off-diagonal entry: correlation 0
    for a, b in (((0, 1), (0, 2)), ((1, 1), (1, 3))):
        r = np.corrcoef(draws[:, a[0], a[1]], draws[:, b[0], b[1]])[0, 1]
        z = np.arctanh(r) * np.sqrt(draws.shape[0] - 3)
        assert 2 * stats.norm.sf(abs(z)) > ALPHA / 2, f"correlation {r:.4f}"


def test_pooled_ag_estimator_uses_the_pooled_sensitivity():
    rng = np.random.default_rng(13)
    parts = [rng.normal(size=(n, 5)) / 10 for n in (100, 250)]
    model = AnalyzeGaussPCA(2, epsilon=0.5, delta=1e-3, neighbour="add-remove", random_state=0).fit(parts)
    assert model.noise_scale_ == pytest.approx(gaussian_noise_scale(1 / 350, 0.5, 1e-3), rel=1e-12)


# -- DPdisPCA ---------------------------------------------------------------------------


def dispca_outputs(parts, n_components, epsilon, delta, *, full=False, random_state=None, **settings):
    """DPdisPCA's protocol object run as threads: its parties' outputs by name."""
    protocol = DisPCADeployment("dispca-full" if full else "dispca")
    given = {"n_components": n_components, "epsilon": epsilon, "delta": delta, **settings}
    return run_protocol(protocol, parts, given, random_state=random_state).run.outputs


def test_dispca_site_noise_matches_tau_s():
    rng = np.random.default_rng(14)
    sizes = (80, 200, 500)
    parts = [rng.normal(size=(n, 25)) / 8 for n in sizes]
    eps, delta = 0.8, 1e-3
    residuals: dict[int, list[np.ndarray]] = {n: [] for n in sizes}
    for seed in range(6):
        outputs = dispca_outputs(parts, 3, eps, delta, random_state=seed)
        sites = [outputs[f"provider{i}"] for i in range(len(parts))]
        for part, site in zip(parts, sites, strict=True):
            residuals[part.shape[0]].append(upper(site.noisy_second_moment - part.T @ part / part.shape[0]))
    for n in sizes:
        tau = gaussian_noise_scale(np.sqrt(2) / n, eps, delta)
        assert_zero_mean_variance(np.stack(residuals[n]), tau**2, ALPHA / len(sizes))


def test_dispca_full_average_has_s_times_the_pooled_variance():
    """Conventional averaging of S noisy A_s: variance tau_s^2 / S, S times the pooled tau_s^2 / S^2."""
    s, n_s, d = 4, 300, 20
    parts = [np.zeros((n_s, d)) for _ in range(s)]
    tau = gaussian_noise_scale(second_moment_sensitivity(n_s, "add-remove"), 1.0, 1e-2)
    noise = [
        upper(
            dispca_outputs(parts, 2, 1.0, 1e-2, full=True, neighbour="add-remove", random_state=seed)[
                "aggregator"
            ].second_moment
        )
        for seed in range(8)
    ]
    assert_zero_mean_variance(np.stack(noise), tau**2 / s)


# -- capePCA ------------------------------------------------------------------------------


def _zero_parts(sizes: tuple[int, ...], d: int) -> list[np.ndarray]:
    return [np.zeros((n, d)) for n in sizes]


def _single_site_scales(sizes: tuple[int, ...], eps: float, delta: float) -> np.ndarray:
    """``tau_s`` of the plain single-site Gaussian mechanism for ``A_s`` (replace-one)."""
    return np.array([gaussian_noise_scale(np.sqrt(2) / n_s, eps, delta) for n_s in sizes])


def _capepca_threads(parts, eps, delta, calibration, seed):
    """capePCA's parties as threads, K = 2: the aggregator's model and the noise generator's zero-sum ``e_s``."""
    settings = {"n_components": 2, "epsilon": eps, "delta": delta, "cape_calibration": calibration}
    run = run_protocol(CapeDeployment("capepca"), parts, settings, random_state=seed)
    return run.output, run.run.outputs["noise-generator"]


@pytest.mark.parametrize("calibration", ["paper", "joint"])
@pytest.mark.parametrize("sizes", [(250, 250, 250, 250), (100, 300, 600)])
def test_cape_noise_terms_have_the_papers_variances(sizes, calibration):
    """Paper: Var(e_s) = (1 - 1/S) tau_s^2, Var(f_s) = tau_s^2 / S, site view tau_s^2, aggregate tau_pool^2.

    Joint: every term times c^2 = 2S / (S + 1).
    """
    d, eps, delta = 24, 0.6, 1e-3
    s = len(sizes)
    n = sum(sizes)
    c = np.sqrt(2 * s / (s + 1)) if calibration == "joint" else 1.0
    taus = c * _single_site_scales(sizes, eps, delta)
    tau_pool = c * gaussian_noise_scale(np.sqrt(2) / n, eps, delta)
    e = {i: [] for i in range(s)}
    f = {i: [] for i in range(s)}
    view = {i: [] for i in range(s)}
    aggregate = []
    for seed in range(8):
        model, zero_sum = _capepca_threads(_zero_parts(sizes, d), eps, delta, calibration, seed)
        assert np.allclose(model.site_scales, taus, rtol=1e-12)
        assert model.noise_scale == pytest.approx(tau_pool, rel=1e-12)
        aggregate.append(upper(model.second_moment))
        for i in range(s):
            e[i].append(upper(zero_sum[i]))
            f[i].append(upper(model.site_releases[i] - model.site_views[i]))
            view[i].append(upper(model.site_views[i]))
    checks = 3 * s + 1
    for i in range(s):
        assert_zero_mean_variance(np.stack(e[i]), (1 - 1 / s) * taus[i] ** 2, ALPHA / checks)
        assert_zero_mean_variance(np.stack(f[i]), taus[i] ** 2 / s, ALPHA / checks)
        # what the aggregator holds of site i after removing f_i: e_i + g_i, variance tau_i^2
        assert_zero_mean_variance(np.stack(view[i]), taus[i] ** 2, ALPHA / checks)
    # the aggregate noise: tau^2 / S^2 for equal sites, the pooled-data AG variance in general
    assert_zero_mean_variance(np.stack(aggregate), tau_pool**2, ALPHA / checks)
    if len(set(sizes)) == 1:
        assert tau_pool**2 == pytest.approx(taus[0] ** 2 / s**2, rel=1e-12)


def precision_p_value(samples: np.ndarray, site: int, precision: float) -> float:
    """Two-sided exact test of ``[Sigma^-1]_ss = precision`` from zero-mean Gaussian vectors.

    ``samples`` is ``(n, S)``, rows i.i.d. ``N(0, Sigma)``. With
    ``W = samples^T samples ~ Wishart_S(Sigma, n)``, the Schur complement
    ``1 / [W^-1]_ss`` is ``chi2(n - S + 1) / [Sigma^-1]_ss`` (Muirhead 1982,
    Thm. 3.2.10), so ``precision / [W^-1]_ss ~ chi2(n - S + 1)`` under the
    hypothesis.
    """
    n, s = samples.shape
    w_inv = np.linalg.inv(samples.T @ samples)
    statistic = precision / w_inv[site, site]
    dof = n - s + 1
    return float(2.0 * min(stats.chi2.cdf(statistic, dof), stats.chi2.sf(statistic, dof)))


@pytest.mark.parametrize("sizes", [(250, 250, 250, 250), (100, 300, 600)])
def test_cape_joint_view_precision_matches_the_single_site_mechanism(sizes):
    """The aggregator sees Y_t = e_t + g_t of every site (zero data); its cross-site precision decides privacy.

    A neighbour of site s shifts only Y_s, so the joint view is a Gaussian
    mechanism with noise [Sigma^-1]_ss^(-1/2). "joint" must give exactly the
    single-site scale tau_s ((epsilon, delta) per site); "paper" gives
    2S / ((S + 1) tau_s^2), and the single-site hypothesis is rejected for it.
    """
    d, eps, delta = 24, 0.6, 1e-3
    s = len(sizes)
    taus = _single_site_scales(sizes, eps, delta)
    views: dict[str, np.ndarray] = {}
    for calibration in ("joint", "paper"):
        rows = []
        for seed in range(8):
            model, _ = _capepca_threads(_zero_parts(sizes, d), eps, delta, calibration, 100 + seed)
            rows.append(np.stack([upper(v) for v in model.site_views], axis=1))
        views[calibration] = np.concatenate(rows)  # (8 * d (d + 1) / 2, S): one row per matrix entry
    # the views are correlated across sites: corr(Y_0, Y_1) = -1/S under both calibrations
    # (Fisher z-test against arctanh(-1/S))
    checks = 2 * s + 2
    for calibration in ("joint", "paper"):
        x = views[calibration]
        r = np.sum(x[:, 0] * x[:, 1]) / np.sqrt(np.sum(x[:, 0] ** 2) * np.sum(x[:, 1] ** 2))
        z = (np.arctanh(r) - np.arctanh(-1 / s)) * np.sqrt(x.shape[0] - 3)
        assert 2 * stats.norm.sf(abs(z)) > ALPHA / checks, f"{calibration}: corr {r:.4f} vs {-1 / s:.4f}"
    for i in range(s):
        single_site = 1 / taus[i] ** 2
        joint_p = precision_p_value(views["joint"], i, single_site)
        assert joint_p > ALPHA / checks, f"joint: site {i} precision != 1/tau_s^2 (p = {joint_p:.2e})"
        paper_p = precision_p_value(views["paper"], i, 2 * s / (s + 1) * single_site)
        assert paper_p > ALPHA / checks, (
            f"paper: site {i} precision != 2S/((S+1) tau_s^2) (p = {paper_p:.2e})"
        )
        # power: under the paper's calibration the single-site guarantee is refuted
        assert precision_p_value(views["paper"], i, single_site) < ALPHA / checks


@pytest.mark.parametrize("calibration", ["paper", "joint"])
def test_cape_zero_sum_noise_is_exactly_zero_for_equal_sites(calibration):
    _, noise = _capepca_threads(_zero_parts((50, 50, 50, 50, 50), 9), 1.0, 1e-3, calibration, 5)
    assert np.all(np.sum(np.stack(noise), axis=0) == 0.0)
    assert np.all(functools.reduce(np.add, noise) == 0.0)
    assert all(np.any(e != 0) for e in noise)


@pytest.mark.parametrize("calibration", ["paper", "joint"])
def test_cape_weighted_zero_sum_for_unequal_sites(calibration):
    sizes = (40, 90, 370)
    _, noise = _capepca_threads(_zero_parts(sizes, 7), 1.0, 1e-3, calibration, 6)
    weights = np.array(sizes) / sum(sizes)
    weighted = sum(w * e for w, e in zip(weights, noise, strict=True))
    scale = max(np.abs(e).max() for e in noise)
    assert np.max(np.abs(weighted)) <= 1e-14 * scale


# -- SN (retracted) -----------------------------------------------------------------------


def test_sn_wishart_moments_match_the_wishart_distribution():
    d, eps = 5, 0.8
    sigma = 1.0 / (2 * eps)
    p = d + 1
    rng = np.random.default_rng(15)
    draws = np.stack([wishart_noise_retracted_not_dp(d, eps, rng, warn=False) for _ in range(3000)])
    # E_ii = sigma^2 chi2(p), independent over i: sum / sigma^2 ~ chi2(p * count)
    diag = np.diagonal(draws, axis1=1, axis2=2)
    statistic = diag.sum() / sigma**2
    dof = p * diag.size
    p_value = 2 * min(stats.chi2.cdf(statistic, dof), stats.chi2.sf(statistic, dof))
    assert p_value > ALPHA / 2
    # one off-diagonal entry per draw: E[E_01^2] = p sigma^4, Var(E_01^2) = (2p^2 + 6p) sigma^8
    off = draws[:, 0, 1] ** 2
    assert_mean(off, p * sigma**4, np.sqrt(2 * p * p + 6 * p) * sigma**4, ALPHA / 2)


# -- PPM --------------------------------------------------------------------------------------


def test_power_method_noise_matches_its_scale():
    scale = power_method_noise_scale(second_moment_sensitivity(1000, "replace-one"), 0.5, 1e-4, 7)
    assert scale == pytest.approx(np.sqrt(2) / 1000 * np.sqrt(4 * 7 * np.log(1e4)) / 0.5, rel=1e-12)
    rng = np.random.default_rng(16)
    zero = np.zeros((40, 40))
    products = [private_power_method(zero, 5, scale, 7, rng).last_product for _ in range(10)]
    assert_zero_mean_variance(np.stack(products), scale**2)


# -- PPCA: the Bingham Gibbs sampler --------------------------------------------------------------


def bingham_second_moments(lam: np.ndarray) -> np.ndarray:
    """``E[y_i^2]`` under ``exp(sum lam_i y_i^2)`` on the sphere S^2, by 1-D quadrature.

    ``theta = y_i^2`` has density ``theta^{-1/2} exp(theta lam_i)`` times the
    average over the circle of the other two coordinates, which is
    ``exp((1 - theta)(a + b)/2) I_0((1 - theta)(a - b)/2)``.
    """
    out = []
    for i in range(3):
        a, b = np.delete(lam, i)

        def density(t: float, power: int, a: float = a, b: float = b, li: float = lam[i]) -> float:
            return (
                t ** (power - 0.5)
                * np.exp(t * li + (1 - t) * (a + b) / 2)
                * special.i0((1 - t) * (a - b) / 2)
            )

        norm = integrate.quad(density, 0, 1, args=(0,))[0]
        out.append(integrate.quad(density, 0, 1, args=(1,))[0] / norm)
    return np.array(out)


def test_vector_bingham_gibbs_matches_the_exact_moments():
    lam = np.array([2.0, 0.5, -1.5])
    expected = bingham_second_moments(lam)
    assert expected.sum() == pytest.approx(1.0, abs=1e-8)
    rng = np.random.default_rng(17)
    start = rng.normal(size=(20000, 3))
    start /= np.linalg.norm(start, axis=1, keepdims=True)
    y2 = bingham_pair_sweeps(lam, start, 30, rng) ** 2  # independent chains: i.i.d. draws
    for i in range(3):
        assert_mean(y2[:, i], expected[i], y2[:, i].std(), ALPHA / 3)


def test_matrix_bingham_gibbs_matches_the_exact_moments():
    """k = 2 in d = 3: the normal n = v1 x v2 has density exp(tr B - n^T B n), Bingham with -B."""
    lam = np.array([2.0, 0.5, -1.5])
    rotation = np.linalg.qr(np.random.default_rng(18).normal(size=(3, 3)))[0]
    B = rotation @ np.diag(lam) @ rotation.T
    expected = bingham_second_moments(-lam)
    rng = np.random.default_rng(19)
    normals = []
    for _ in range(300):
        v = sample_matrix_bingham(B, 2, rng, n_sweeps=15, inner_sweeps=2)
        normals.append(rotation.T @ np.cross(v[:, 0], v[:, 1]))
    n2 = np.array(normals) ** 2
    for i in range(3):
        assert_mean(n2[:, i], expected[i], n2[:, i].std(), ALPHA / 3)
