"""Mechanisms: neighbour relations, sensitivities, calibration, SN's retraction warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mpc_pca.dp.mechanisms import (
    AnalyzeGauss,
    Neighbour,
    RetractedMechanismWarning,
    check_delta,
    check_epsilon,
    check_power_method_privacy,
    gaussian_noise_scale,
    gram_sensitivity,
    parse_neighbour,
    power_method_epsilon_limit,
    power_method_noise_scale,
    second_moment_sensitivity,
    spawn_generators,
    symmetric_gaussian_noise,
    wishart_noise_retracted_not_dp,
)
from protocols.errors import InputValidationError


def upper_norm(m: np.ndarray) -> float:
    rows, cols = np.triu_indices(m.shape[0])
    return float(np.linalg.norm(m[rows, cols]))


def test_parse_neighbour_accepts_names_and_members():
    assert parse_neighbour("replace-one") is Neighbour.REPLACE_ONE
    assert parse_neighbour("add_remove") is Neighbour.ADD_REMOVE
    assert parse_neighbour(Neighbour.ADD_REMOVE) is Neighbour.ADD_REMOVE
    with pytest.raises(InputValidationError, match="neighbour"):
        parse_neighbour("swap")


def test_gram_sensitivities_are_the_documented_bounds():
    assert gram_sensitivity("replace-one") == pytest.approx(math.sqrt(2))
    assert gram_sensitivity("add-remove") == 1.0
    assert gram_sensitivity("add-remove", row_norm_bound=2.0) == 4.0
    assert second_moment_sensitivity(400, "replace-one") == pytest.approx(math.sqrt(2) / 400)
    assert second_moment_sensitivity(400, "add-remove") == pytest.approx(1 / 400)


def test_replace_one_bound_is_attained_by_orthogonal_rows():
    x, x2 = np.eye(4)[0], np.eye(4)[1]
    diff = np.outer(x, x) - np.outer(x2, x2)
    assert upper_norm(diff) == pytest.approx(gram_sensitivity("replace-one"))


unit_rows = arrays(np.float64, 6, elements=st.floats(-1, 1, allow_nan=False)).filter(
    lambda v: np.linalg.norm(v) > 1e-6
)


@given(unit_rows, unit_rows, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_no_pair_of_rows_exceeds_the_sensitivity(x, y, a, b):
    x = a * x / np.linalg.norm(x)  # norms in [0, 1]
    y = b * y / np.linalg.norm(y)
    gx, gy = np.outer(x, x), np.outer(y, y)
    assert upper_norm(gx - gy) <= gram_sensitivity("replace-one") + 1e-12
    assert np.linalg.norm(gx - gy) <= gram_sensitivity("replace-one") + 1e-12
    assert upper_norm(gx) <= gram_sensitivity("add-remove") + 1e-12


def test_gaussian_noise_scale_formula_and_infinite_epsilon():
    assert gaussian_noise_scale(0.01, 0.5, 1e-5, "classical") == pytest.approx(
        0.01 * math.sqrt(2 * math.log(1.25e5)) / 0.5
    )
    assert gaussian_noise_scale(0.01, 2.0, 1e-5) == pytest.approx(0.01 * 1.99381244564, rel=1e-9)
    with pytest.raises(InputValidationError, match="noise_calibration='analytic'"):
        gaussian_noise_scale(0.01, 2.0, 1e-5, "classical")
    assert gaussian_noise_scale(0.01, math.inf, 1e-5) == 0.0
    assert power_method_noise_scale(1.0, math.inf, 0.1, 3) == 0.0


@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-12])
def test_power_method_limit_is_where_the_zcdp_conversion_reaches_epsilon(delta):
    """rho = eps^2 / (8 ln(1/delta)) converts to rho + 2 sqrt(rho ln(1/delta)): equal to eps at the limit."""
    log_inv = math.log(1 / delta)

    def converted(eps: float) -> float:
        rho = eps**2 / (8 * log_inv)
        return rho + 2 * math.sqrt(rho * log_inv)

    limit = power_method_epsilon_limit(delta)
    assert converted(limit) == pytest.approx(limit, rel=1e-12)
    assert converted(0.99 * limit) < 0.99 * limit
    assert converted(1.01 * limit) > 1.01 * limit
    assert limit / log_inv == pytest.approx(2.343, abs=1e-3)


def test_power_method_rejects_epsilon_above_the_limit():
    limit = power_method_epsilon_limit(1e-4)
    assert check_power_method_privacy(limit, 1e-4) == (limit, 1e-4)
    assert check_power_method_privacy(math.inf, 1e-4) == (math.inf, 1e-4)
    with pytest.raises(
        InputValidationError, match=r"epsilon=25\.0 exceeds .* limit .*21\.58.* delta=0\.0001"
    ):
        power_method_noise_scale(1.0, 25.0, 1e-4, 3)
    with pytest.raises(InputValidationError, match="sensitivity"):
        power_method_noise_scale(-1.0, 1.0, 1e-4, 3)
    with pytest.raises(InputValidationError, match="delta"):
        power_method_epsilon_limit(1.0)


@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), "1", True])
def test_bad_epsilon_is_rejected(epsilon):
    with pytest.raises(InputValidationError, match="epsilon"):
        check_epsilon(epsilon)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1, float("nan"), float("inf")])
def test_bad_delta_is_rejected(delta):
    with pytest.raises(InputValidationError, match="delta"):
        check_delta(delta)


def test_symmetric_noise_shape_and_zero_scale():
    rng = np.random.default_rng(0)
    noise = symmetric_gaussian_noise(7, 0.3, rng)
    assert np.array_equal(noise, noise.T)
    assert np.all(symmetric_gaussian_noise(3, 0.0, rng) == 0)
    with pytest.raises(InputValidationError):
        symmetric_gaussian_noise(3, -1.0, rng)


def test_analyze_gauss_rejects_non_square_input():
    mech = AnalyzeGauss(1.0, 1e-3, 0.01)
    with pytest.raises(InputValidationError, match="square"):
        mech.perturb(np.zeros((2, 3)), np.random.default_rng(0))


def test_spawn_generators_reproducible_and_independent():
    a = [g.normal() for g in spawn_generators(42, 3)]
    b = [g.normal() for g in spawn_generators(42, 3)]
    assert a == b
    assert len(set(a)) == 3
    c = [g.normal() for g in spawn_generators(None, 3)]
    d = [g.normal() for g in spawn_generators(None, 3)]
    assert c != d  # seeded from secrets
    for bad in (-1, 1.5, "seed", True):
        with pytest.raises(InputValidationError, match="random_state"):
            spawn_generators(bad, 1)


def test_sn_warns_that_it_is_retracted_and_not_dp():
    with pytest.warns(RetractedMechanismWarning, match="retracted.*NOT differentially private"):
        noise = wishart_noise_retracted_not_dp(4, 1.0, np.random.default_rng(0))
    assert np.all(np.linalg.eigvalsh(noise) >= -1e-12)  # Z Z^T is positive semi-definite
    assert issubclass(RetractedMechanismWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wishart_noise_retracted_not_dp(4, 1.0, np.random.default_rng(0), warn=False)
