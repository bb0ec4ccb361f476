"""Centralized baselines, metrics, preprocessing and the DP command-line protocols."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import mpc_pca.threads as threads_module
from mpc_pca.cli import main
from mpc_pca.dp.baselines import AnalyzeGaussPCA, LocalPCA, PooledPCA
from mpc_pca.dp.mechanism_baselines import ExponentialMechanismPCA, PrivatePowerMethodPCA, RetractedSNPCA
from mpc_pca.dp.mechanisms import RetractedMechanismWarning, power_method_epsilon_limit
from mpc_pca.dp.metrics import captured_energy, captured_energy_ratio, optimal_captured_energy, second_moment
from mpc_pca.dp.power_method import default_power_iterations, private_power_method
from mpc_pca.dp.preprocessing import center_and_scale_non_private, check_row_norms, clip_rows
from mpc_pca.registry import entry, names
from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError

DP_PROTOCOLS = ("ag", "sn", "ppm", "ppca", "pooled", "local", "dispca", "dispca-full", "capepca")


def projector(components: np.ndarray) -> np.ndarray:
    return components.T @ components


def make_parts(sizes=(300, 500), d=8, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.r_[[3.0, 2.0], np.full(d - 2, 0.4)]
    X = rng.normal(size=(sum(sizes), d)) * scales
    X /= np.linalg.norm(X, axis=1).max()
    return np.split(X, np.cumsum(sizes)[:-1])


def top_subspace(A: np.ndarray, k: int) -> np.ndarray:
    values, vectors = np.linalg.eigh(A)
    return vectors[:, np.argsort(values)[::-1][:k]].T


def test_pooled_pca_is_the_svd_of_the_pooled_rows():
    parts = make_parts()
    X = np.vstack(parts)
    model = PooledPCA(2).fit(parts)
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    assert np.allclose(projector(model.components_), projector(vt[:2]), atol=1e-10)
    assert np.allclose(model.explained_variance_, s[:2] ** 2 / X.shape[0])
    assert set(model.report_) == {"provider0", "provider1", "curator"}


@pytest.mark.parametrize(
    "estimator",
    [
        AnalyzeGaussPCA(2, epsilon=math.inf),
        AnalyzeGaussPCA(2, epsilon=1e9, random_state=0),
        PrivatePowerMethodPCA(2, epsilon=math.inf, random_state=0),
        ExponentialMechanismPCA(2, epsilon=math.inf),
        ExponentialMechanismPCA(2, epsilon=1e7, random_state=0),
    ],
    ids=["ag-inf", "ag-huge", "ppm-inf", "ppca-inf", "ppca-huge"],
)
def test_huge_epsilon_recovers_the_non_private_subspace(estimator):
    parts = make_parts()
    reference = PooledPCA(2).fit(parts).components_
    estimator.fit(parts)
    assert np.linalg.norm(projector(estimator.components_) - projector(reference), 2) < 1e-3


def test_sn_is_labelled_warns_and_converges_for_huge_epsilon():
    parts = make_parts()
    assert "retracted" in (RetractedSNPCA.__doc__ or "").lower()
    assert "not differentially private" in (RetractedSNPCA.__doc__ or "").lower()
    with pytest.warns(RetractedMechanismWarning, match="NOT differentially private"):
        model = RetractedSNPCA(2, epsilon=1e9, random_state=0).fit(parts)
    reference = PooledPCA(2).fit(parts).components_
    assert np.linalg.norm(projector(model.components_) - projector(reference), 2) < 1e-3


def test_local_pca_uses_only_its_site():
    parts = make_parts()
    model = LocalPCA(2, epsilon=math.inf, site=1).fit(parts)
    local = top_subspace(parts[1].T @ parts[1], 2)
    assert np.allclose(projector(model.components_), projector(local), atol=1e-10)
    assert model.n_samples_ == 500
    assert model.report_["provider1"]["bytes_sent"] == 0
    noisy = LocalPCA(2, epsilon=1.0, delta=1e-3, site=0, neighbour="add-remove", random_state=0).fit(parts)
    assert noisy.noise_scale_ == pytest.approx(analytic_gaussian_sigma(1 / 300, 1.0, 1e-3), rel=1e-12)
    classical = LocalPCA(
        2, epsilon=0.5, delta=1e-3, neighbour="add-remove", random_state=0, noise_calibration="classical"
    ).fit(parts)
    assert classical.noise_scale_ == pytest.approx(math.sqrt(2 * math.log(1.25e3)) / 150)
    with pytest.raises(InputValidationError, match="site"):
        LocalPCA(2, site=2).fit(parts)
    with pytest.raises(InputValidationError, match="ordering"):
        LocalPCA(2, ordering="random").fit(parts)


def test_local_pca_magnitude_ordering_is_the_svd():
    rng = np.random.default_rng(4)
    part = rng.normal(size=(60, 6)) / 4
    model = LocalPCA(3, epsilon=0.05, delta=1e-3, ordering="magnitude", random_state=5).fit([part])
    same_noise = LocalPCA(6, epsilon=0.05, delta=1e-3, random_state=5).fit([part])
    noisy = same_noise.components_.T @ np.diag(same_noise.explained_variance_) @ same_noise.components_
    # rebuild the noisy matrix's SVD from an independent run with the same seed
    _, s, vt = np.linalg.svd(part.T @ part / 60 + _noise_of(5, 6, same_noise.noise_scale_))
    assert np.allclose(projector(model.components_), projector(vt[:3]), atol=1e-8)
    assert np.allclose(model.explained_variance_, s[:3])
    assert noisy.shape == (6, 6)


def _noise_of(seed: int, d: int, scale: float) -> np.ndarray:
    from mpc_pca.dp.mechanisms import spawn_generators, symmetric_gaussian_noise

    return symmetric_gaussian_noise(d, scale, spawn_generators(seed, 1)[0])


def test_ppm_iteration_count_does_not_read_the_data():
    a = PrivatePowerMethodPCA(2, epsilon=1.0, random_state=0).fit(make_parts(seed=1))
    b = PrivatePowerMethodPCA(2, epsilon=1.0, random_state=0).fit([p * 0.1 for p in make_parts(seed=2)])
    assert a.n_iter_ == b.n_iter_ == default_power_iterations(8)
    assert PrivatePowerMethodPCA(2, n_iter=4, random_state=0).fit(make_parts()).n_iter_ == 4
    with pytest.raises(InputValidationError, match="n_iter"):
        PrivatePowerMethodPCA(2, n_iter=0).fit(make_parts())


def test_ppm_small_noise_recovers_the_subspace():
    """The largest epsilon PPM accepts (delta = 1e-300) and a vanishing noise scale both converge."""
    parts = make_parts()
    reference = projector(PooledPCA(2).fit(parts).components_)
    top = PrivatePowerMethodPCA(2, epsilon=power_method_epsilon_limit(1e-300), delta=1e-300, random_state=0)
    assert np.linalg.norm(projector(top.fit(parts).components_) - reference, 2) < 0.05
    A = second_moment(parts)
    result = private_power_method(A, 2, 1e-12, 30, np.random.default_rng(0))
    assert np.linalg.norm(projector(result.components) - reference, 2) < 1e-6
    with pytest.raises(InputValidationError, match="noise_scale"):
        private_power_method(A, 2, -1.0, 3, np.random.default_rng(0))


def test_ppm_rejects_epsilon_beyond_the_zcdp_limit_before_sending(monkeypatch):
    delta = 1e-3
    limit = power_method_epsilon_limit(delta)
    assert limit == pytest.approx(8 * (1 - 1 / math.sqrt(2)) * math.log(1 / delta), rel=1e-15)
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    too_big = math.nextafter(limit, math.inf)
    with pytest.raises(InputValidationError, match=r"epsilon=16\.18.*limit.*= 16\.18\d*.*delta=0\.001"):
        PrivatePowerMethodPCA(2, epsilon=too_big, delta=delta).fit(make_parts())
    with pytest.raises(InputValidationError, match="epsilon=50"):
        PrivatePowerMethodPCA(2, epsilon=50.0, delta=0.01).fit(make_parts())
    monkeypatch.undo()
    # the limit itself and "no privacy" are accepted
    assert PrivatePowerMethodPCA(2, epsilon=limit, delta=delta, random_state=0).fit(make_parts()).n_iter_ > 0
    assert PrivatePowerMethodPCA(2, epsilon=math.inf, delta=delta, random_state=0).fit(make_parts())


def test_ppca_releases_only_the_subspace():
    model = ExponentialMechanismPCA(2, epsilon=5.0, n_sweeps=10, random_state=0).fit(make_parts())
    assert np.allclose(model.components_ @ model.components_.T, np.eye(2), atol=1e-10)
    assert np.all(np.isnan(model.explained_variance_))
    with pytest.raises(InputValidationError, match="n_sweeps"):
        ExponentialMechanismPCA(2, n_sweeps=0).fit(make_parts())


def test_privacy_parameters_are_validated():
    for bad in (
        AnalyzeGaussPCA(2, epsilon=0.0),
        PrivatePowerMethodPCA(2, delta=1.0),
        ExponentialMechanismPCA(2, epsilon=-1),
    ):
        with pytest.raises(InputValidationError):
            bad.fit(make_parts())


# -- metrics and preprocessing ----------------------------------------------------------------------


def test_captured_energy_of_the_top_subspace_is_optimal():
    parts = make_parts()
    A = second_moment(parts)
    assert np.allclose(A, np.vstack(parts).T @ np.vstack(parts) / 800)
    top = top_subspace(A, 3)
    assert captured_energy(A, top) == pytest.approx(optimal_captured_energy(A, 3))
    assert captured_energy_ratio(A, top) == pytest.approx(1.0)
    other = np.linalg.qr(np.random.default_rng(0).normal(size=(8, 3)))[0].T
    assert 0.0 <= captured_energy_ratio(A, other) < 1.0
    with pytest.raises(InputValidationError, match="orthonormal"):
        captured_energy(A, 2 * top)


def test_clip_rows_handles_huge_and_tiny_rows_without_overflow():
    X = np.array(
        [
            [1e200, 1e200],
            [-1.7e308, 1.7e308],  # the norm itself exceeds the largest float
            [3e-200, -4e-200],  # squares underflow: must stay untouched
            [0.0, 0.0],
        ]
    )
    clipped, n = clip_rows(X)
    assert n == 2
    half = 1 / math.sqrt(2)
    assert np.allclose(clipped[:2], [[half, half], [-half, half]], rtol=1e-15, atol=0)
    assert np.all(np.abs(np.linalg.norm(clipped[:2], axis=1) - 1) < 1e-15)
    assert np.array_equal(clipped[2:], X[2:])
    with pytest.raises(InputValidationError, match=r"row 0 has Euclidean norm 1\.41421e\+200"):
        check_row_norms(X[[0, 2, 3]], 0)
    with pytest.raises(InputValidationError, match="row 0 has Euclidean norm inf"):
        check_row_norms(X[1:], 1)
    with pytest.raises(InputValidationError, match="bound=0"):
        clip_rows(X, 0)


def test_clip_and_check_row_norms():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    clipped, n = clip_rows(X)
    assert n == 1
    assert np.allclose(clipped, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    with pytest.raises(InputValidationError, match="part 4 row 0 has Euclidean norm 5"):
        check_row_norms(X, 4)
    scaled = center_and_scale_non_private(X)
    assert np.allclose(scaled.mean(axis=0), 0)
    assert np.linalg.norm(scaled, axis=1).max() == pytest.approx(1.0)


# -- command line -------------------------------------------------------------------------------------


def test_every_dp_protocol_is_in_the_table():
    assert set(DP_PROTOCOLS) <= set(names())


@pytest.mark.parametrize("protocol", DP_PROTOCOLS)
def test_cli_runs_each_dp_protocol(tmp_path, protocol, capsys):
    out = tmp_path / "result.json"
    argv = ["run", "--protocol", protocol, "--data", "builtin:wine", "--parties", "3", "--n-components", "2"]
    argv += ["--row-norm", "scale", "--output", str(out)]
    uses = entry(protocol).options  # options a protocol does not use are refused
    argv += ["--epsilon", "4", "--noise-seed", "1"] if "epsilon" in uses else []
    argv += ["--delta", "0.001"] if "delta" in uses else []
    assert main(argv) == 0
    err = capsys.readouterr().err
    result = json.loads(out.read_text())
    # --row-norm scale (the papers' preprocessing) and a noise seed: the run says it is not private
    assert result["private"] is False
    assert err.count("mpc-pca: warning: row norms scaled by the pooled data") == 1
    assert any("--row-norm scale" in reason for reason in result["privacy_leaks"])
    if protocol == "sn":  # the retracted mechanism's warning is one of the causes, printed once
        assert err.count("mpc-pca: warning: SN (Wishart noise") == 1
        assert any("retracted" in reason for reason in result["privacy_leaks"])
    assert {"components", "explained_variance", "mean", "report", "epsilon", "delta"} <= set(result)
    if protocol == "pooled":  # not private: the JSON claims no privacy parameter
        assert result["epsilon"] is None and result["delta"] is None and result["neighbour"] is None
    else:
        assert result["epsilon"] == (4.0 if "epsilon" in uses else 1.0)
        assert result["delta"] == (0.001 if "delta" in uses else 1e-5)
    assert np.asarray(result["components"]).shape == (2, 13)
    assert 0.0 < result["captured_energy_ratio"] <= 1.0 + 1e-12


def test_cli_rejects_bad_privacy_parameters(capsys):
    argv = ["run", "--protocol", "capepca", "--data", "builtin:iris", "--epsilon", "0"]
    assert main(argv) == 3
    assert "epsilon" in capsys.readouterr().err
    argv = [
        "run",
        "--protocol",
        "dispca",
        "--data",
        "builtin:iris",
        "--n-components",
        "3",
        "--intermediate-dim",
        "2",
    ]
    assert main(argv) == 3
    assert "R=2" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "calibration", "factor"),
    [([], "joint", 1.0), (["--cape-calibration", "paper"], "paper", math.sqrt(6 / 4))],
)
def test_cli_capepca_calibration(tmp_path, flag, calibration, factor):
    out = tmp_path / "result.json"
    argv = ["run", "--protocol", "capepca", "--data", "builtin:wine", "--parties", "3", "--n-components", "2"]
    argv += ["--epsilon", "4", "--delta", "0.01", "--noise-seed", "1", "--output", str(out), *flag]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["calibration"] == calibration
    # the joint view's noise is 1/factor of the analytic sigma at epsilon = 4
    expected = analytic_gaussian_epsilon(analytic_gaussian_sigma(1.0, 4.0, 0.01) / factor, 1.0, 0.01)
    assert result["effective_epsilon"] == pytest.approx(expected, rel=1e-9)
    assert (result["effective_epsilon"] > 4.0) == (calibration == "paper")
    assert result["noise_scale"] > 0
