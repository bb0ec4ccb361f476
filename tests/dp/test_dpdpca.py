import math

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA

import mpc_pca.threads as threads_module
from mpc_pca.dp.dpdpca import (
    PROXY,
    USER,
    DPDPCAConfig,
    centred_scatter_sensitivity,
    owner_role,
    proxy_role,
    user_role,
)
from mpc_pca.dp.dpdpca_estimator import DPDPCA
from mpc_pca.dp.mechanisms import Neighbour
from mpc_pca.validation import RowsClippedWarning
from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from tests.helpers.oracles import align_signs

FAST_KEY = {"key_bits": 1024, "allow_insecure_key_size": True}


@pytest.fixture(scope="module")
def unit_wine():
    X = load_wine().data
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X / np.linalg.norm(X, axis=1).max()


def centred_scatter(X):
    centred = X - X.mean(axis=0)
    return centred.T @ centred


def test_without_noise_the_user_gets_the_exact_centred_scatter(unit_wine):
    parts = np.array_split(unit_wine, 4)
    model = DPDPCA(n_components=3, epsilon=math.inf, random_state=0, **FAST_KEY).fit(parts)
    assert np.max(np.abs(model.noisy_scatter_ - centred_scatter(unit_wine))) < 1e-9
    reference = PCA(3).fit(unit_wine)
    assert (
        np.max(np.abs(align_signs(model.components_, reference.components_) - reference.components_)) < 1e-6
    )
    assert np.allclose(model.explained_variance_, reference.explained_variance_, rtol=1e-9)
    assert set(model.report_) == {"owner0", "owner1", "owner2", "owner3", PROXY, USER}


def test_noise_variance_matches_the_gaussian_mechanism(unit_wine):
    """G' = S' - S has i.i.d. N(0, sigma^2) upper-triangle entries (Alg. 2); chi-square, alpha = 0.001."""
    alpha = 0.001
    parts = np.array_split(unit_wine, 3)
    exact = centred_scatter(unit_wine)
    d = exact.shape[0]
    rows, cols = np.triu_indices(d)
    samples, sigma = [], None
    for seed in range(4):
        model = DPDPCA(n_components=2, epsilon=2.0, delta=1e-5, random_state=seed, **FAST_KEY).fit(parts)
        samples.append((model.noisy_scatter_ - exact)[rows, cols])
        sigma = model.noise_sigma_
    noise = np.concatenate(samples)
    expected_sigma = analytic_gaussian_sigma(4 * math.sqrt(2), 2.0, 1e-5)
    assert sigma == pytest.approx(expected_sigma)
    statistic = np.sum(noise**2) / sigma**2
    low, high = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], df=noise.size)
    assert low < statistic < high
    assert stats.normaltest(noise).pvalue > alpha
    # symmetric, as the user receives only the upper triangle
    assert np.array_equal(model.noisy_scatter_, model.noisy_scatter_.T)


def test_the_mask_hides_the_column_sums_from_the_user_and_cancels_exactly(unit_wine):
    parts = np.array_split(unit_wine, 2)
    config = DPDPCAConfig(
        n_owners=2, n_features=unit_wine.shape[1], n_components=2, epsilon=math.inf, delta=1e-5, **FAST_KEY
    )
    roles = {
        name: (lambda party, data=data: owner_role(party, data, config))
        for name, data in zip(config.owners, parts, strict=True)
    }
    roles[PROXY] = lambda party: proxy_role(party, config, np.random.default_rng(0))
    roles[USER] = lambda party: user_role(party, config)
    model = run_inprocess(roles).outputs[USER]
    true_sums = np.rint(unit_wine.sum(axis=0) * config.scale)
    masked = np.array([float(v) for v in model.masked_sums])
    # b_i is uniform on +-N s 2^128: every |b_i| below N s 2^100 would happen with probability < 2^-28 each
    assert np.all(np.abs(masked - true_sums) > unit_wine.shape[0] * config.scale * 2.0**100)
    # and yet eq. 22 removes the mask exactly: without DP noise the user gets the true scatter
    assert np.max(np.abs(model.noisy_scatter - centred_scatter(unit_wine))) < 1e-9
    assert model.n_samples == unit_wine.shape[0]


def test_sensitivities_are_explicit():
    assert centred_scatter_sensitivity("add-remove") == 4.0
    assert centred_scatter_sensitivity(Neighbour.REPLACE_ONE) == pytest.approx(4 * math.sqrt(2))
    with pytest.raises(InputValidationError, match="neighbour"):
        centred_scatter_sensitivity("swap")


def test_sensitivity_bound_covers_a_near_extremal_neighbour_pair():
    """Replace-one: N-1 copies of a unit vector a, and the last row -a versus b orthogonal to a.

    The change is ((N-1)/N)(u u^T - w w^T) with u = -2a, w = b - a, of Frobenius norm
    ((N-1)/N) sqrt(12) ~ 3.46: the bound 4 sqrt(2) must cover it, and a bound that
    ignored the centring (e.g. the paper's 1, or sqrt(2)) would not.
    """
    n, d = 50, 4
    a, b = np.eye(d)[0], np.eye(d)[1]
    X = np.tile(a, (n, 1))
    X[-1] = -a
    Y = X.copy()
    Y[-1] = b
    change = np.linalg.norm(centred_scatter(X) - centred_scatter(Y))
    assert change == pytest.approx((n - 1) / n * math.sqrt(12), rel=1e-12)
    assert math.sqrt(2) < change <= centred_scatter_sensitivity("replace-one")
    # add/remove: adding -a to N copies of a changes S by N/(N+1) * 4
    grown = np.vstack([np.tile(a, (n, 1)), -a])
    change = np.linalg.norm(centred_scatter(grown) - centred_scatter(np.tile(a, (n, 1))))
    assert change == pytest.approx(4 * n / (n + 1), rel=1e-12)
    assert change <= centred_scatter_sensitivity("add-remove")


def test_plaintext_budget_is_checked_before_anything_is_sent(no_run, unit_wine):
    with pytest.raises(InputValidationError, match=r"bits.*512-bit key holds signed values of at most 510"):
        DPDPCA(key_bits=512, allow_insecure_key_size=True, mask_bits=300).fit(np.array_split(unit_wine, 2))


def test_owners_refuse_a_public_key_of_the_wrong_size(unit_wine):
    from protocols.errors import WireFormatError

    config = DPDPCAConfig(n_owners=1, n_features=13, n_components=1, epsilon=1.0, delta=1e-5, **FAST_KEY)
    small = DPDPCAConfig(
        n_owners=1,
        n_features=13,
        n_components=1,
        epsilon=1.0,
        delta=1e-5,
        key_bits=512,
        allow_insecure_key_size=True,
    )
    roles = {
        "owner0": lambda party: owner_role(party, unit_wine, config),
        PROXY: lambda party: proxy_role(party, config, np.random.default_rng(0)),
        USER: lambda party: user_role(party, small),  # a user that hands out a weaker key
    }
    with pytest.raises(WireFormatError, match="1024-bit public key"):
        run_inprocess(roles, timeout=20)


@pytest.fixture
def no_run(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the protocol started although the input is invalid")

    monkeypatch.setattr(threads_module, "run_inprocess", forbidden)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": 0.0}, "epsilon=0.0"),
        ({"epsilon": -1.0}, "epsilon=-1.0"),
        ({"delta": 1.0}, "delta=1.0.*< 1"),
        ({"delta": 0.0}, "delta=0.0"),
        ({"n_components": 14}, "n_components=14"),
        ({"neighbour": "swap"}, "neighbour='swap'"),
        ({"key_bits": 1024, "allow_insecure_key_size": False}, "1024"),
        ({"frac_bits": 0}, "frac_bits=0"),
        ({"row_norm": "scale"}, "row_norm='scale'"),
    ],
)
def test_bad_parameters_rejected_before_any_send(no_run, unit_wine, params, match):
    kwargs = {**FAST_KEY, **params}
    with pytest.raises(InputValidationError, match=match):
        DPDPCA(**kwargs).fit(np.array_split(unit_wine, 2))


def test_rows_longer_than_one_are_an_error_or_clipped(no_run):
    X = np.ones((6, 3))
    with pytest.raises(InputValidationError, match=r"norm 1.73205 > 1"):
        DPDPCA(row_norm="error", **FAST_KEY).fit([X[:3], X[3:]])


def test_clipping_rows_lets_the_protocol_run():
    """The default, row_norm='clip' (as every DP estimator): each long row is clipped at its owner, with the count."""
    X = np.random.default_rng(3).normal(size=(40, 4)) * 5
    with pytest.warns(RowsClippedWarning, match=r"site 0: \d+ of 20 rows had norm > 1"):
        model = DPDPCA(n_components=2, epsilon=math.inf, random_state=1, **FAST_KEY).fit(np.array_split(X, 2))
    clipped = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    assert np.allclose(model.noisy_scatter_, centred_scatter(clipped), atol=1e-9)


def test_cli_runs_dpdpca_with_a_real_key_size(tmp_path):
    import json

    from mpc_pca.cli import main

    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 3)) * [3.0, 1.0, 0.2]
    X /= 2 * np.linalg.norm(X, axis=1).max()
    path = tmp_path / "rows.csv"
    np.savetxt(path, X, delimiter=",")
    out = tmp_path / "r.json"
    code = main(
        [
            "run",
            "--protocol",
            "dpdpca",
            "--data",
            str(path),
            "--parties",
            "2",
            "--n-components",
            "1",
            "--epsilon",
            "inf",
            "--row-norm",
            "error",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    reference = PCA(1).fit(X)
    assert abs(abs(np.dot(result["components"][0], reference.components_[0])) - 1) < 1e-9
    assert result["captured_energy_ratio"] == pytest.approx(1.0, abs=1e-9)
    assert {"owner0", "owner1", "proxy", "user"} == set(result["report"])


def test_paper_calibration_uses_delta_one_and_reports_the_weaker_epsilon(unit_wine):
    parts = np.array_split(unit_wine, 3)
    paper = DPDPCA(n_components=2, epsilon=1.0, delta=1e-5, calibration="paper", random_state=0, **FAST_KEY)
    paper.fit(parts)
    exact = DPDPCA(n_components=2, epsilon=1.0, delta=1e-5, random_state=0, **FAST_KEY).fit(parts)
    assert paper.noise_sigma_ == pytest.approx(analytic_gaussian_sigma(1.0, 1.0, 1e-5), rel=1e-12)
    assert exact.noise_sigma_ == pytest.approx(4 * math.sqrt(2) * paper.noise_sigma_, rel=1e-12)
    assert exact.effective_epsilon_ == pytest.approx(1.0, rel=1e-9)
    # noise 4 sqrt(2) times too small for the true sensitivity: a much larger epsilon
    assert paper.effective_epsilon_ == pytest.approx(
        analytic_gaussian_epsilon(paper.noise_sigma_, 4 * math.sqrt(2), 1e-5), rel=1e-12
    )
    assert paper.effective_epsilon_ > 4.0
    with pytest.raises(InputValidationError, match="calibration='joint'"):
        DPDPCA(n_components=2, calibration="joint", **FAST_KEY).fit(parts)


def test_the_protocol_object_takes_the_encoding_and_refuses_values_out_of_range():
    from mpc_pca.dp.dpdpca_deploy import MAX_ROWS, DPDPCADeployment

    protocol = DPDPCADeployment(frac_bits=8, mask_bits=40, calibration="paper", max_rows=100)
    assert (protocol.frac_bits, protocol.mask_bits, protocol.calibration, protocol.max_rows) == (
        8,
        40,
        "paper",
        100,
    )
    assert DPDPCADeployment().max_rows == MAX_ROWS
    for params, match in [
        ({"frac_bits": 0}, "frac_bits=0"),
        ({"mask_bits": 600}, "mask_bits=600"),
        ({"calibration": "joint"}, "calibration='joint'"),
        ({"max_rows": 0}, "max_rows=0"),
    ]:
        with pytest.raises(InputValidationError, match=match):
            DPDPCADeployment(**params)
