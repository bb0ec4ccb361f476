"""Analytic Gaussian calibration (Balle & Wang 2018) against an independent reference, and parameter checks."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from mpc_pca import AnalyzeGaussPCA, DPdisPCA, ExponentialMechanismPCA, RetractedSNPCA
from mpc_pca.dp.mechanisms import RetractedMechanismWarning, gaussian_noise_scale
from protocols.dp.calibration import (
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
)
from protocols.errors import InputValidationError


def reference_sigma(eps: float, delta: float) -> float:
    """Solve Balle & Wang's Thm 8 condition with brentq and scipy.stats.norm (independent of log_ndtr)."""

    def excess(sigma: float) -> float:
        return (
            stats.norm.cdf(0.5 / sigma - eps * sigma)
            - math.exp(eps) * stats.norm.cdf(-0.5 / sigma - eps * sigma)
            - delta
        )

    return optimize.brentq(excess, 1e-3, 1e4, xtol=1e-14, rtol=1e-13)


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
def test_analytic_sigma_equals_the_reference_root(eps, delta):
    assert analytic_gaussian_sigma(1.0, eps, delta) == pytest.approx(reference_sigma(eps, delta), rel=1e-9)
    # linear in the sensitivity
    assert analytic_gaussian_sigma(3.5, eps, delta) == pytest.approx(
        3.5 * reference_sigma(eps, delta), rel=1e-9
    )


def test_issue_values_and_analytic_beats_classical():
    assert analytic_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(7.03, abs=0.005)
    assert classical_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(9.69, abs=0.005)
    assert analytic_gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(3.73, abs=0.005)
    assert classical_gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(4.84, abs=0.01)
    for eps in np.linspace(0.01, 0.99, 30):
        for delta in (1e-3, 1e-6, 1e-10):
            assert analytic_gaussian_sigma(1.0, eps, delta) < classical_gaussian_sigma(1.0, eps, delta)


def test_the_calibrated_sigma_is_tight():
    sigma = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    assert gaussian_delta(sigma, 1.0, 1.0) <= 1e-5
    assert gaussian_delta(sigma * (1 - 1e-6), 1.0, 1.0) > 1e-5
    assert analytic_gaussian_epsilon(sigma, 1.0, 1e-5) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(
    ("eps", "delta"), [(1e-320, 1e-5), (1e308, 1e-5), (1.0, 1e-320), (5e-324, 5e-324), (1e308, 0.999)]
)
def test_extreme_parameters_give_a_result_or_a_clear_error(eps, delta):
    try:
        sigma = analytic_gaussian_sigma(1.0, eps, delta)
    except InputValidationError as exc:
        assert "epsilon" in str(exc)
        return
    assert math.isfinite(sigma) and sigma > 0
    # the result meets the condition (checked in log space: delta may be subnormal)
    assert gaussian_delta(sigma, 1.0, eps) <= delta * (1 + 1e-9)


def test_classical_is_refused_at_epsilon_one_and_above():
    with pytest.raises(InputValidationError, match=r"epsilon=1\.0 >= 1.*noise_calibration='analytic'"):
        gaussian_noise_scale(1.0, 1.0, 1e-5, "classical")
    with pytest.raises(InputValidationError, match="noise_calibration='exact'"):
        gaussian_noise_scale(1.0, 0.5, 1e-5, "exact")
    parts = [np.eye(4) / 2, np.eye(4) / 3]
    with pytest.raises(InputValidationError, match="noise_calibration='analytic'"):
        AnalyzeGaussPCA(2, epsilon=5.0, noise_calibration="classical").fit(parts)
    with pytest.raises(InputValidationError, match="noise_calibration='analytic'"):
        DPdisPCA(2, epsilon=2.0, noise_calibration="classical").fit(parts)


BAD = [
    (0.0, 1e-5, "epsilon=0.0"),
    (-1.0, 1e-5, "epsilon=-1.0"),
    (math.nan, 1e-5, "epsilon=nan"),
    (1.0, 0.0, "delta=0.0"),
    (1.0, 1.0, "delta=1.0"),
    (1.0, 1.5, "delta=1.5"),
    (1.0, -1.0, "delta=-1.0"),
    (1.0, math.nan, "delta=nan"),
]


@pytest.mark.parametrize(("eps", "delta", "named"), BAD)
def test_bad_privacy_parameters_name_the_value_and_the_limit(eps, delta, named):
    parts = [np.eye(4) / 2, np.eye(4) / 3]
    for make in (
        lambda: AnalyzeGaussPCA(2, epsilon=eps, delta=delta),
        lambda: DPdisPCA(2, epsilon=eps, delta=delta),
    ):
        with pytest.raises(InputValidationError, match=re.escape(named)) as info:
            make().fit(parts)
        assert ("> 0" in str(info.value)) or ("0 < delta < 1" in str(info.value))


@pytest.mark.parametrize(
    ("eps", "named"), [(0.0, "epsilon=0.0"), (-1.0, "epsilon=-1.0"), (math.nan, "epsilon=nan")]
)
def test_sn_and_ppca_check_epsilon(eps, named):
    parts = [np.eye(4) / 2, np.eye(4) / 3]
    with pytest.raises(InputValidationError, match=re.escape(named)):
        ExponentialMechanismPCA(2, epsilon=eps).fit(parts)
    with pytest.raises(InputValidationError, match=re.escape(named)):
        RetractedSNPCA(2, epsilon=eps).fit(parts)


@pytest.mark.parametrize("protocol", ["ag", "ppm", "capeagn", "pppca-dp"])
@pytest.mark.parametrize("delta", ["0", "1", "1.5", "-1", "nan"])
def test_cli_refuses_a_bad_delta(tmp_path, capsys, protocol, delta):
    from mpc_pca.cli import main

    out = tmp_path / "r.json"
    argv = ["run", "--protocol", protocol, "--data", "builtin:wine", "--parties", "2", "--n-components", "2"]
    assert main([*argv, "--delta", delta, "--output", str(out)]) == 3
    assert f"--delta {float(delta)!r} is invalid" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("protocol", ["sn", "ppca"])
def test_cli_pure_dp_protocols_refuse_delta(tmp_path, capsys, protocol):
    from mpc_pca.cli import main

    out = tmp_path / "r.json"
    argv = ["run", "--protocol", protocol, "--data", "builtin:wine", "--parties", "2", "--n-components", "2"]
    assert main([*argv, "--delta", "1e-5", "--output", str(out)]) == 3
    assert f"--delta does not apply to protocol {protocol!r}" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("eps", [1e-320, 1e308])
def test_sn_and_ppca_extreme_epsilon_give_a_result_or_a_clear_error(eps):
    parts = [np.eye(4) / 2, np.eye(4) / 3]
    for make in (
        lambda: ExponentialMechanismPCA(2, epsilon=eps, n_sweeps=2, random_state=0),
        lambda: RetractedSNPCA(2, epsilon=eps, random_state=0),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RetractedMechanismWarning)
                model = make().fit(parts)
        except InputValidationError as exc:
            assert f"epsilon={eps!r}" in str(exc)
            continue
        assert np.all(np.isfinite(model.components_))
