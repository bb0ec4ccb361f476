"""capePCA (Imtiaz & Sarwate JSTSP 2018, Alg. 1 with CAPE): protocol, estimator, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mpc_pca.threads as threads_module
from mpc_pca.dp.baselines import AnalyzeGaussPCA, PooledPCA
from mpc_pca.dp.cape import (
    cape_weights,
    effective_epsilon,
    joint_view_factor,
    zero_sum_noise,
)
from mpc_pca.dp.cape_deploy import CapeDeployment
from mpc_pca.dp.cape_estimator import CapePCA
from mpc_pca.threads import ThreadsRun, run_protocol
from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError


def projector(components: np.ndarray) -> np.ndarray:
    return components.T @ components


def make_parts(sizes=(150, 400, 250), d=10, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.r_[[3.0, 2.0, 1.5], np.full(d - 3, 0.3)]
    X = rng.normal(size=(sum(sizes), d)) * scales
    X /= np.linalg.norm(X, axis=1).max()
    return np.split(X, np.cumsum(sizes)[:-1])


def capepca_threads(parts, n_components, epsilon, delta, *, random_state) -> ThreadsRun:
    """capePCA's parties as threads (:func:`mpc_pca.threads.run_protocol`); role outputs in ``.run.outputs``."""
    settings = {"n_components": n_components, "epsilon": epsilon, "delta": delta}
    return run_protocol(CapeDeployment("capepca"), parts, settings, random_state=random_state)


def test_infinite_epsilon_gives_exactly_the_pooled_second_moment():
    parts = make_parts()
    result = capepca_threads(parts, 3, math.inf, 1e-3, random_state=0)
    pooled = sum(p.T @ p for p in parts) / sum(p.shape[0] for p in parts)
    assert np.allclose(result.output.second_moment, pooled, atol=1e-15)
    reference = PooledPCA(3).fit(parts)
    model = CapePCA(3, epsilon=math.inf).fit(parts)
    assert np.allclose(projector(model.components_), projector(reference.components_), atol=1e-10)


def test_huge_epsilon_recovers_the_pooled_subspace():
    parts = make_parts()
    reference = PooledPCA(3).fit(parts)
    model = CapePCA(3, epsilon=1e9, random_state=1).fit(parts)
    assert np.linalg.norm(projector(model.components_) - projector(reference.components_), 2) < 1e-4


def test_paper_calibration_weights_and_aggregate_scale_equal_the_pooled_ag():
    parts = make_parts()
    model = CapePCA(
        2, epsilon=0.7, delta=1e-4, neighbour="add-remove", calibration="paper", random_state=2
    ).fit(parts)
    assert np.allclose(model.weights_, np.array([150, 400, 250]) / 800)
    pooled = AnalyzeGaussPCA(2, epsilon=0.7, delta=1e-4, neighbour="add-remove", random_state=2).fit(parts)
    assert model.noise_scale_ == pytest.approx(pooled.noise_scale_, rel=1e-12)
    assert np.allclose(model.weights_ * model.site_noise_scales_, pooled.noise_scale_, rtol=1e-12)
    # the guarantee against the aggregator's joint view is weaker than the nominal epsilon
    sigma = analytic_gaussian_sigma(1.0, 0.7, 1e-4)
    expected = analytic_gaussian_epsilon(sigma / math.sqrt(6 / 4), 1.0, 1e-4)
    assert model.effective_epsilon_ == pytest.approx(expected, rel=1e-9)
    assert model.effective_epsilon_ > 0.7
    classical = CapePCA(
        2, epsilon=0.7, delta=1e-4, neighbour="add-remove", calibration="paper", noise_calibration="classical"
    ).fit(parts)
    assert classical.effective_epsilon_ == pytest.approx(0.7 * math.sqrt(6 / 4), rel=1e-12)


def test_joint_calibration_is_the_default_and_scales_every_noise_term():
    parts = make_parts()
    model = CapePCA(2, epsilon=0.7, delta=1e-4, neighbour="add-remove", random_state=2).fit(parts)
    assert model.calibration == "joint"
    pooled = AnalyzeGaussPCA(2, epsilon=0.7, delta=1e-4, neighbour="add-remove").fit(parts)
    factor = math.sqrt(2 * 3 / (3 + 1))
    assert joint_view_factor(3) == pytest.approx(factor, rel=1e-15)
    assert model.noise_scale_ == pytest.approx(factor * pooled.noise_scale_, rel=1e-12)
    assert np.allclose(model.weights_ * model.site_noise_scales_, factor * pooled.noise_scale_, rtol=1e-12)
    assert model.effective_epsilon_ == 0.7
    # classical calibration (sigma proportional to 1/epsilon): pooled AG at epsilon / factor
    # has the same aggregate noise
    classical = CapePCA(
        2, epsilon=0.7, delta=1e-4, neighbour="add-remove", random_state=2, noise_calibration="classical"
    ).fit(parts)
    slower = AnalyzeGaussPCA(
        2, epsilon=0.7 / factor, delta=1e-4, neighbour="add-remove", noise_calibration="classical"
    ).fit(parts)
    assert classical.noise_scale_ == pytest.approx(slower.noise_scale_, rel=1e-12)


def test_effective_epsilon_values():
    assert effective_epsilon(1.0, 1, "paper") == 1.0
    assert effective_epsilon(1.0, 10, "paper") == pytest.approx(math.sqrt(20 / 11), rel=1e-15)
    assert effective_epsilon(2.0, 10, "joint") == 2.0
    assert effective_epsilon(math.inf, 10, "paper") == math.inf
    assert joint_view_factor(1) == 1.0
    with pytest.raises(InputValidationError, match="calibration='pooled'"):
        effective_epsilon(1.0, 3, "pooled")


def test_sites_receive_the_released_subspace_and_traffic_is_reported():
    parts = make_parts()
    result = capepca_threads(parts, 2, 1.0, 1e-3, random_state=3)
    for site in ("provider0", "provider1", "provider2"):
        assert np.array_equal(result.run.outputs[site], result.output.components)
    reports = result.run.reports
    assert set(reports) == {"provider0", "provider1", "provider2", "aggregator", "noise-generator"}
    assert reports["noise-generator"].messages_sent == 3
    assert reports["noise-generator"].messages_received == 3
    assert reports["aggregator"].messages_received == 6  # counts, then releases
    triangle_bytes = 8 * 10 * 11 // 2
    assert reports["provider1"].bytes_sent >= triangle_bytes


def test_single_site_has_no_correlated_noise():
    noise = zero_sum_noise([0.5], [1.0], 4, np.random.default_rng(0))
    assert len(noise) == 1
    assert np.all(noise[0] == 0)
    for calibration in ("joint", "paper"):  # S = 1: no correlation, both calibrations coincide
        model = CapePCA(2, epsilon=1.0, calibration=calibration, random_state=0).fit([make_parts()[1]])
        assert model.noise_scale_ == pytest.approx(model.site_noise_scales_[0])
        assert model.effective_epsilon_ == 1.0
    plain = AnalyzeGaussPCA(2, epsilon=1.0).fit([make_parts()[1]])
    assert model.noise_scale_ == pytest.approx(plain.noise_scale_, rel=1e-12)


def test_zero_sum_noise_needs_constant_weighted_scales():
    with pytest.raises(InputValidationError, match="mu_s"):
        zero_sum_noise([1.0, 1.0], [0.25, 0.75], 3, np.random.default_rng(0))
    with pytest.raises(InputValidationError, match="one scale and one weight"):
        zero_sum_noise([1.0], [0.5, 0.5], 3, np.random.default_rng(0))
    assert np.allclose(cape_weights([1, 3]), [0.25, 0.75])


def test_reproducible_with_a_seed():
    parts = make_parts()
    a = CapePCA(2, epsilon=1.0, random_state=9).fit(parts).components_
    b = CapePCA(2, epsilon=1.0, random_state=9).fit(parts).components_
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.2}, "delta"),
        ({"n_components": 11}, "n_components"),
        ({"neighbour": "other"}, "neighbour"),
        ({"calibration": "pooled"}, r"calibration='pooled'.*\['joint', 'paper'\]"),
    ],
)
def test_bad_parameters_fail_before_any_party_sends(monkeypatch, kwargs, match):
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    params = {"n_components": 2, "epsilon": 1.0, "delta": 1e-3} | kwargs
    with pytest.raises(InputValidationError, match=match):
        CapePCA(**params).fit(make_parts())


def test_bad_rows_fail_before_any_party_sends(monkeypatch):
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    parts = make_parts()
    parts[0] = parts[0] * 3
    with pytest.raises(InputValidationError, match="norm"):
        CapePCA(2, row_norm="error").fit(parts)
    with pytest.raises(InputValidationError, match="features"):
        CapePCA(2).fit([parts[1], parts[2][:, :4]])
