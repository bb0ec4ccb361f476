"""Exact contracts of the noise calibrations' helpers (each test kills mutants that survived mutmut).

Every bad value is refused with a message that names the parameter; the
boundary values are accepted; the Analyze Gauss perturbation is exactly the
input plus the noise drawn from the same generator.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mpc_pca.dp import mechanisms
from mpc_pca.dp.mechanisms import (
    AnalyzeGauss,
    RetractedMechanismWarning,
    check_epsilon,
    gram_sensitivity,
    power_method_noise_scale,
    second_moment_sensitivity,
    sn_wishart_scale_retracted_not_dp,
    spawn_generators,
    symmetric_gaussian_noise,
    wishart_noise_retracted_not_dp,
)
from protocols.errors import InputValidationError
from tests.helpers.warning_site import assert_points_at_caller


def test_bad_privacy_and_sensitivity_inputs_name_the_parameter():
    with pytest.raises(InputValidationError, match=r"^epsilon"):
        check_epsilon(-1.0)
    with pytest.raises(InputValidationError, match=r"^row_norm_bound"):
        gram_sensitivity("replace-one", 0.0)
    with pytest.raises(InputValidationError, match=r"n_samples=0 must be a positive integer"):
        second_moment_sensitivity(0, "replace-one")
    with pytest.raises(InputValidationError, match=r"n_samples=2\.5 must be a positive integer"):
        second_moment_sensitivity(2.5, "replace-one")  # type: ignore[arg-type]
    with pytest.raises(InputValidationError, match=r"n_iter=0 must be a positive integer"):
        power_method_noise_scale(1.0, 1.0, 1e-5, 0)
    with pytest.raises(InputValidationError, match=r"n_iter=2\.0 must be a positive integer"):
        power_method_noise_scale(1.0, 1.0, 1e-5, 2.0)  # type: ignore[arg-type]
    with pytest.raises(InputValidationError, match=r"noise scale -1\.0 must be finite"):
        symmetric_gaussian_noise(3, -1.0, np.random.default_rng(0))


def test_sensitivities_at_their_boundaries_and_with_a_row_bound():
    b = 3.0
    assert gram_sensitivity("replace-one", b) == pytest.approx(math.sqrt(2.0) * b**2)
    assert gram_sensitivity("add-remove", b) == pytest.approx(b**2)
    # one row is a valid data set; the row bound enters squared
    assert second_moment_sensitivity(1, "add-remove", b) == pytest.approx(b**2)
    assert second_moment_sensitivity(4, "replace-one", b) == pytest.approx(math.sqrt(2.0) * b**2 / 4)
    # zero sensitivity (a constant query) needs no noise and is not an error
    assert power_method_noise_scale(0.0, 1.0, 1e-5, 3) == 0.0


def test_generators_are_reproducible_from_a_generator_and_fresh_without_a_seed():
    def first_draws(state):
        return [g.integers(0, 2**62) for g in spawn_generators(state, 3)]

    assert first_draws(np.random.default_rng(7)) == first_draws(np.random.default_rng(7))
    assert first_draws(np.random.default_rng(7)) != first_draws(np.random.default_rng(8))
    assert first_draws(None) != first_draws(None)
    draws = first_draws(np.random.default_rng(7))
    assert len(set(draws)) == 3  # the parties' generators differ


def test_perturb_adds_exactly_the_mechanisms_noise_and_refuses_non_square_input():
    mech = AnalyzeGauss(1.0, 1e-5, 0.5)
    matrix = np.arange(16.0).reshape(4, 4)
    expected = matrix + mech.noise(4, np.random.default_rng(3))
    np.testing.assert_array_equal(mech.perturb(matrix, np.random.default_rng(3)), expected)
    assert mech.perturb(matrix.tolist(), np.random.default_rng(3)).dtype == np.float64
    for bad in (np.zeros(4), np.zeros((2, 2, 2)), np.zeros((3, 4))):
        with pytest.raises(InputValidationError, match=r"square matrix, got shape"):
            mech.perturb(bad, np.random.default_rng(0))


def test_noise_is_float64_and_symmetric():
    noise = symmetric_gaussian_noise(5, 2.0, np.random.default_rng(1))
    assert noise.dtype == np.float64
    np.testing.assert_array_equal(noise, noise.T)
    assert not np.any(symmetric_gaussian_noise(5, 0.0, np.random.default_rng(1)))


def test_retracted_sn_scale_uses_the_sensitivity_and_warns_at_the_callers_line():
    assert sn_wishart_scale_retracted_not_dp(math.inf, 5.0) == 0.0
    assert sn_wishart_scale_retracted_not_dp(2.0, 5.0) == pytest.approx(1.25)
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    z = rng_b.normal(0.0, 1.25, size=(3, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        noise = wishart_noise_retracted_not_dp(3, 2.0, rng_a, 5.0)
    np.testing.assert_allclose(noise, z @ z.T)
    assert caught and caught[0].category is RetractedMechanismWarning
    assert_points_at_caller(caught[0], __file__, mechanisms.__file__)
