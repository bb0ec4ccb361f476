"""pppca-dp: DP noise added by the providers inside the secure sum.

The providers' noise comes from :mod:`secrets`; for reproducible tests the
sampler's uniform source is replaced by a seeded ``random.Random``. Every
statistical check uses significance level ALPHA.
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from scipy import stats

from mpc_pca import PPPCADP, AnalyzeGaussPCA
from mpc_pca.pppca.dp_sum import DPSumPlan, IntegerStatistics
from mpc_pca.validation import RowsClippedWarning
from protocols.backends import make_backend
from protocols.dp import discrete_gaussian as dg
from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError

ALPHA = 1e-3


@pytest.fixture
def seeded(monkeypatch):
    monkeypatch.setattr(dg, "_randbelow", random.Random(7).randrange)


def unit_rows(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(1.0, 0.2, d)
    return X / (1.01 * np.linalg.norm(X, axis=1).max())


def exact_integer_stats(parts, row_bits):
    stats_ = [IntegerStatistics.of(p, row_bits) for p in parts]
    return sum(s.sums for s in stats_), sum(s.gram_triangle for s in stats_)


def chi2_in_range(z: np.ndarray) -> bool:
    low, high = stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], df=z.size)
    return bool(low < np.sum(z**2) < high)


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(
    ("backend", "min_honest"), [("additive", None), ("additive-masks", 1), ("paillier", 2)]
)
def test_server_matrix_minus_exact_has_the_calibrated_variance(backend, min_honest):
    d = 24
    parts = [unit_rows(300, d, s) for s in range(3)]
    noise = []
    for _ in range(2 if backend == "paillier" else 4):
        model = PPPCADP(
            3, epsilon=1.0, delta=1e-5, min_honest=min_honest, backend=make_backend(backend, frac_bits=32)
        ).fit(parts)
        plan = model.plan_
        scale = 2.0**plan.frac_bits
        sums, triangle = exact_integer_stats(parts, plan.row_bits)
        rows, cols = np.triu_indices(d)
        gram_noise = model.model_.noisy_gram[rows, cols] * scale - triangle  # ring units, exact integers
        assert np.allclose(gram_noise, np.rint(gram_noise))
        noise.append(gram_noise / plan.server_std(plan.gram_sigma))
        sums_noise = model.model_.noisy_sums * scale - sums * 2**plan.row_bits
        assert chi2_in_range(sums_noise / plan.server_std(plan.sums_sigma))
    z = np.concatenate(noise)
    assert chi2_in_range(z)
    assert stats.kstest(z, "norm").pvalue > ALPHA
    # the guaranteed (h honest providers') noise equals the analytic Gaussian for the joint sensitivity
    u = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    assert plan.gram_sigma == pytest.approx(plan.gram_sensitivity * u / math.sqrt(0.9), rel=1e-12)
    h = 3 if min_honest is None else min_honest
    assert model.gram_noise_std_ == pytest.approx(plan.gram_sigma * math.sqrt(3 / h) / scale, rel=1e-12)


@pytest.mark.usefixtures("seeded")
def test_without_centring_the_noise_is_pooled_analyze_gauss():
    parts = [unit_rows(400, 10, s) for s in range(4)]
    model = PPPCADP(2, epsilon=0.8, delta=1e-6, centre=False).fit(parts)
    pooled = AnalyzeGaussPCA(2, epsilon=0.8, delta=1e-6, random_state=0).fit(parts)
    # pooled AG: sigma = sqrt(2)/N * u on A = X^T X / N; pppca-dp adds the rounding slack of B^2 / 2^(2r)
    slack = (1 + math.sqrt(10) / 2 / 2**16) ** 2
    assert model.noise_std_ == pytest.approx(pooled.noise_scale_ * slack, rel=1e-12)
    assert np.all(model.mean_ == 0)


def test_no_noise_matches_the_exact_covariance_on_every_backend():
    parts = [unit_rows(200, 6, s) for s in range(3)]
    X = np.vstack(parts)
    for name in ("additive", "additive-masks", "paillier"):
        model = PPPCADP(6, epsilon=math.inf, backend=name).fit(parts)
        assert np.allclose(model.model_.matrix, np.cov(X.T), atol=1e-4)
        assert np.allclose(model.mean_, X.mean(axis=0), atol=1e-4)


def test_collusion_epsilons():
    plan = DPSumPlan(5, 8, 1.0, 1e-5, 32, 2)
    eps = [plan.epsilon_with_colluders(c) for c in range(6)]
    assert eps[:4] == [1.0, 1.0, 1.0, 1.0]  # up to M - h = 3 colluders
    u = plan.unit_sigma
    assert eps[4] == pytest.approx(analytic_gaussian_epsilon(u * math.sqrt(1 / 2), 1.0, 1e-5), rel=1e-12)
    assert eps[4] > 1.0 and eps[5] == math.inf
    with pytest.raises(InputValidationError, match="colluders=6"):
        plan.epsilon_with_colluders(6)


def test_clipping_warns_at_the_site_with_the_count():
    parts = [unit_rows(50, 4, 0), unit_rows(50, 4, 1)]
    parts[1][[3, 7]] *= 5.0
    with pytest.warns(RowsClippedWarning, match=r"provider1: 2 of 50 rows had norm > 1"):
        PPPCADP(2, epsilon=1.0).fit(parts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RowsClippedWarning)
        PPPCADP(2, epsilon=1.0).fit([unit_rows(50, 4, 0), unit_rows(50, 4, 1)])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon=0.0"),
        ({"epsilon": -2.0}, "epsilon=-2.0"),
        ({"delta": 1.0}, "delta=1.0 is invalid; it must satisfy 0 < delta < 1"),
        ({"delta": math.nan}, "delta=nan"),
        ({"min_honest": 0}, "min_honest=0 must be an integer from 1 to the number of providers 2"),
        ({"min_honest": 3}, "min_honest=3"),
        ({"mean_share": 1.0}, "mean_share=1.0 must satisfy 0 < mean_share < 1"),
        ({"epsilon": 2.0, "noise_calibration": "classical"}, "noise_calibration='analytic'"),
        ({"backend": make_backend("additive", frac_bits=21)}, "frac_bits=21 is odd"),
        ({"backend": "crypten"}, "backend 'crypten'"),
    ],
)
def test_bad_parameters_are_refused_before_anything_is_sent(kwargs, match):
    with pytest.raises(InputValidationError, match=match):
        PPPCADP(2, **kwargs).fit([unit_rows(30, 4, 0), unit_rows(30, 4, 1)])


def test_cli_pppca_dp_writes_the_guarantee(tmp_path, capsys):
    import json

    from mpc_pca.cli import main

    out = tmp_path / "r.json"
    argv = [
        "run",
        "--protocol",
        "pppca-dp",
        "--data",
        "builtin:digits",
        "--parties",
        "3",
        "--n-components",
        "3",
    ]
    argv += ["--epsilon", "2", "--delta", "1e-6", "--min-honest", "2", "--backend", "additive-masks"]
    assert main([*argv, "--output", str(out)]) == 0
    err = capsys.readouterr().err  # digits rows have norms far above 1: each provider says so, once
    for i in range(3):
        assert err.count(f"mpc-pca: warning: provider{i}: ") == 1
        assert f"provider{i}: 599 of 599 rows had norm > 1" in err
    assert "more than 10%" in err and "--row-norm" not in err  # pppca-dp always clips
    result = json.loads(out.read_text())
    assert result["private"] is True and result["privacy_leaks"] == []
    assert result["min_honest"] == 2 and result["backend"] == "additive-masks"
    assert result["epsilon_by_colluders"][:2] == [2.0, 2.0]
    assert result["epsilon_by_colluders"][2] > 2.0
    assert np.array(result["components"]).shape == (3, 64)
