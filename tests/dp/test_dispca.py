"""DPdisPCA (Imtiaz & Sarwate ICASSP 2018, Alg. 1): protocol, estimator, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mpc_pca.threads as threads_module
from mpc_pca.dp.baselines import PooledPCA
from mpc_pca.dp.dispca import DPdisPCA, partial_square_root
from mpc_pca.dp.dispca_deploy import DisPCADeployment
from mpc_pca.dp.metrics import captured_energy_ratio, second_moment
from mpc_pca.threads import run_protocol
from protocols.errors import InputValidationError
from protocols.runtime import RunResult


def projector(components: np.ndarray) -> np.ndarray:
    return components.T @ components


def make_parts(sizes=(300, 300, 300), d=12, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.r_[[3.0, 2.5, 2.0], np.full(d - 3, 0.3)]
    X = rng.normal(size=(sum(sizes), d)) * scales
    X /= np.linalg.norm(X, axis=1).max()
    return np.split(X, np.cumsum(sizes)[:-1])


def dispca_run(
    parts, n_components, epsilon, delta, *, full=False, random_state=None, **settings
) -> RunResult:
    """DPdisPCA's protocol object run as threads (the aggregator's and sites' outputs in ``outputs``)."""
    protocol = DisPCADeployment("dispca-full" if full else "dispca")
    given = {"n_components": n_components, "epsilon": epsilon, "delta": delta, **settings}
    return run_protocol(protocol, parts, given, random_state=random_state).run


def test_partial_square_root_keeps_the_largest_magnitudes():
    rng = np.random.default_rng(1)
    q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    values = np.array([3.0, -2.5, 1.0, 0.5, -0.2, 0.1])
    m = q @ np.diag(values) @ q.T
    p = partial_square_root(m, 2)
    expected = q[:, :2] @ np.diag(np.abs(values[:2])) @ q[:, :2].T
    assert np.allclose(p @ p.T, expected)
    psd = partial_square_root(m, 2, "psd")
    assert np.allclose(psd @ psd.T, q[:, [0, 2]] @ np.diag([3.0, 1.0]) @ q[:, [0, 2]].T)
    low_rank = q[:, :2] @ np.diag([2.0, 1.0]) @ q[:, :2].T
    assert np.allclose(partial_square_root(low_rank, 3) @ partial_square_root(low_rank, 3).T, low_rank)


@pytest.mark.parametrize("full", [False, True])
def test_infinite_epsilon_recovers_the_pooled_subspace(full):
    parts = make_parts(sizes=(200, 350, 450))
    reference = PooledPCA(3).fit(parts)
    # R = D keeps everything, and N_s / N weights make A_c the pooled A exactly
    model = DPdisPCA(3, epsilon=math.inf, intermediate_dim=12, full=full, weights="samples").fit(parts)
    assert np.allclose(projector(model.components_), projector(reference.components_), atol=1e-9)
    assert np.allclose(model.explained_variance_, reference.explained_variance_, rtol=1e-9)
    # R = 2K (the paper's choice) still captures the top subspace when the spectrum has a gap
    for factor in ("svd", "psd"):
        model = DPdisPCA(3, epsilon=math.inf, site_factor=factor).fit(parts)
        assert captured_energy_ratio(second_moment(parts), model.components_) > 0.999


def test_huge_epsilon_recovers_the_pooled_subspace():
    parts = make_parts()
    reference = PooledPCA(3).fit(parts)
    model = DPdisPCA(3, epsilon=1e9, delta=1e-6, random_state=0).fit(parts)
    assert np.linalg.norm(projector(model.components_) - projector(reference.components_), 2) < 1e-3


def test_fitted_attributes_and_transform():
    parts = make_parts()
    model = DPdisPCA(3, epsilon=2.0, delta=1e-3, random_state=3).fit(parts)
    assert model.components_.shape == (3, 12)
    assert np.allclose(model.components_ @ model.components_.T, np.eye(3), atol=1e-10)
    pivots = np.argmax(np.abs(model.components_), axis=1)
    assert np.all(model.components_[np.arange(3), pivots] > 0)
    assert np.all(model.mean_ == 0)
    assert model.intermediate_dim_ == 6
    assert model.n_samples_ == 900
    assert model.noise_scales_.shape == (3,)
    X = parts[0][:5]
    assert np.allclose(model.transform(X), X @ model.components_.T)
    assert set(model.report_) == {"provider0", "provider1", "provider2", "aggregator"}


def test_same_seed_same_result_different_seed_different_result():
    parts = make_parts()
    a = DPdisPCA(3, epsilon=1.0, random_state=7).fit(parts).components_
    b = DPdisPCA(3, epsilon=1.0, random_state=7).fit(parts).components_
    c = DPdisPCA(3, epsilon=1.0, random_state=8).fit(parts).components_
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)


def test_proxy_traffic_is_d_times_r_and_full_is_the_triangle():
    parts = make_parts(d=12)
    run = dispca_run(parts, 2, 1.0, 1e-3, intermediate_dim=4, random_state=0)
    run_full = dispca_run(parts, 2, 1.0, 1e-3, full=True, random_state=0)
    proxy = run.reports["provider0"].bytes_sent
    full = run_full.reports["provider0"].bytes_sent
    assert 8 * 12 * 4 <= proxy < 8 * 12 * 4 + 200
    assert 8 * 78 <= full < 8 * 78 + 200
    assert run.reports["aggregator"].messages_received == 3


def test_row_norm_clip_equals_clipping_first():
    parts = [p * 5 for p in make_parts()]
    clipped = [p / np.maximum(1.0, np.linalg.norm(p, axis=1))[:, None] for p in parts]
    a = DPdisPCA(2, epsilon=1.0, random_state=1).fit(parts).components_
    b = DPdisPCA(2, epsilon=1.0, random_state=1, row_norm="error").fit(clipped).components_
    assert np.allclose(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -2.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"n_components": 13}, "n_components"),
        ({"n_components": 4, "intermediate_dim": 3}, "R=3 is smaller than n_components K=4"),
        ({"intermediate_dim": 13}, "exceeds the number of features"),
        ({"neighbour": "nearby"}, "neighbour"),
        ({"weights": "votes"}, "weights"),
        ({"site_factor": "qr"}, "site_factor"),
        ({"row_norm": "ignore"}, "row_norm"),
    ],
)
def test_bad_parameters_fail_before_any_party_sends(monkeypatch, kwargs, match):
    def forbidden(*args, **kw):
        raise AssertionError("the protocol started")

    monkeypatch.setattr(threads_module, "run_inprocess", forbidden)
    params = {"n_components": 2, "epsilon": 1.0, "delta": 1e-3} | kwargs
    with pytest.raises(InputValidationError, match=match):
        DPdisPCA(**params).fit(make_parts())


def test_bad_data_fails_before_any_party_sends(monkeypatch):
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    parts = make_parts()
    nan = [p.copy() for p in parts]
    nan[1][3, 2] = np.nan
    with pytest.raises(InputValidationError, match="non-finite"):
        DPdisPCA(2).fit(nan)
    with pytest.raises(InputValidationError, match="features"):
        DPdisPCA(2).fit([parts[0], parts[1][:, :5]])
    big = [p.copy() for p in parts]
    big[2][7] *= 10
    with pytest.raises(InputValidationError, match="part 2 row 7 has Euclidean norm"):
        DPdisPCA(2, row_norm="error").fit(big)


def test_params_roundtrip():
    model = DPdisPCA(2, epsilon=0.5)
    assert model.get_params()["epsilon"] == 0.5
    model.set_params(full=True)
    assert model.full is True
    with pytest.raises(InputValidationError):
        model.set_params(sigma=1.0)


def test_the_protocol_object_takes_the_weights_and_factor_and_refuses_others():
    parts = make_parts(sizes=(200, 350, 450))
    protocol = DisPCADeployment("dispca", weights="samples", site_factor="psd")
    run = run_protocol(protocol, parts, {"n_components": 3, "epsilon": 1.0, "delta": 1e-3}, random_state=0)
    assert np.allclose(run.output.weights, [0.2, 0.35, 0.45])
    assert run.config.config.site_factor == "psd"
    with pytest.raises(InputValidationError, match="weights='votes'"):
        DisPCADeployment("dispca", weights="votes")
    with pytest.raises(InputValidationError, match="site_factor='qr'"):
        DisPCADeployment("dispca-full", site_factor="qr")
