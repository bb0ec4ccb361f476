"""Calibration, seeding and no-noise contracts of :mod:`mpc_pca.dp.mechanisms`.

Properties covered:

* the private power method's refusal above its epsilon limit names epsilon,
  the limit and delta, and tells the user how to get back under it;
* ``spawn_generators``: ``None`` draws its 128-bit seed from :mod:`secrets`
  (the documented CSPRNG); a ``SeedSequence`` is used as given (same
  generators as its entropy passed as an int); a ``Generator`` seed keeps
  giving the recorded noise (pinned values: experiments recorded with a
  ``Generator`` as ``random_state`` stay reproducible);
* switching the noise off (``epsilon = inf``, scale 0) returns exact zeros
  and draws nothing from the generator, so the noise of every later release
  from the same generator is unchanged (a no-privacy comparison run differs
  from the private run only in the disabled release);
* SN (retracted): the default sensitivity is 1, ``epsilon = inf`` gives the
  ``d x d`` zero matrix for every ``d``, and the warning helper called on its
  own points at its caller's line.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mpc_pca import noise_seeds
from mpc_pca.dp import mechanisms
from mpc_pca.dp.mechanisms import (
    AnalyzeGauss,
    RetractedMechanismWarning,
    check_power_method_privacy,
    power_method_epsilon_limit,
    sn_wishart_scale_retracted_not_dp,
    spawn_generators,
    symmetric_gaussian_noise,
    warn_retracted_sn,
    wishart_noise_retracted_not_dp,
)
from protocols.errors import InputValidationError
from tests.helpers.warning_site import assert_points_at_caller


def first_draws(random_state, n=3):
    return [int(g.integers(0, 2**62)) for g in spawn_generators(random_state, n)]


# -- private power method ----------------------------------------------------------------


def test_power_method_refusal_names_the_limit_and_the_ways_out():
    delta = 1e-5
    limit = power_method_epsilon_limit(delta)
    with pytest.raises(InputValidationError) as info:
        check_power_method_privacy(30.0, delta)
    message = str(info.value)
    assert "epsilon=30.0 exceeds" in message
    assert f"= {limit:.6g} for delta=1e-05" in message
    assert "does not give (epsilon, delta)-DP" in message
    assert "Lower epsilon, lower delta, or pass epsilon=inf for no privacy" in message


# -- seeding ------------------------------------------------------------------------------------


def test_no_seed_draws_128_bits_from_the_secrets_csprng(monkeypatch):
    requested = []

    def fake_randbits(k):
        requested.append(k)
        return 2**127 + 12345

    monkeypatch.setattr(noise_seeds.secrets, "randbits", fake_randbits)  # spawn_generators' root (noise_root)
    assert first_draws(None) == first_draws(2**127 + 12345)
    assert requested == [128]


def test_a_seed_sequence_is_used_as_given():
    assert first_draws(np.random.SeedSequence(2024)) == first_draws(2024)
    assert first_draws(np.random.SeedSequence(2024)) != first_draws(2025)


def test_a_generator_seed_reproduces_the_recorded_noise():
    # Recorded with this code; a change breaks every experiment seeded with a Generator.
    assert first_draws(np.random.default_rng(7)) == [
        169997235333227494,
        4107137241010650439,
        1711521106821473360,
    ]
    assert first_draws(np.random.default_rng(9)) == [
        2291596891696166244,
        2132283768914124876,
        2563542413480240679,
    ]


# -- no noise draws nothing ---------------------------------------------------------------


def next_value(rng):
    return int(rng.integers(0, 2**62))


def test_zero_scale_noise_is_exactly_zero_and_leaves_the_generator_untouched():
    rng, reference = np.random.default_rng(11), np.random.default_rng(11)
    noise = symmetric_gaussian_noise(4, 0.0, rng)
    np.testing.assert_array_equal(noise, np.zeros((4, 4)))
    assert next_value(rng) == next_value(reference)


def test_analyze_gauss_without_privacy_returns_the_matrix_and_keeps_later_noise_unchanged():
    matrix = np.arange(9.0).reshape(3, 3)
    no_privacy = AnalyzeGauss(math.inf, 1e-5, 0.5)
    private = AnalyzeGauss(1.0, 1e-5, 0.5)
    rng, reference = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(no_privacy.perturb(matrix, rng), matrix)
    # the next private release gets the same noise as if the first had never happened
    np.testing.assert_array_equal(private.perturb(matrix, rng), private.perturb(matrix, reference))


@pytest.mark.parametrize("d", [0, 1, 4])
def test_sn_without_privacy_is_the_zero_matrix_and_draws_nothing(d):
    rng, reference = np.random.default_rng(3), np.random.default_rng(3)
    noise = wishart_noise_retracted_not_dp(d, math.inf, rng, warn=False)
    np.testing.assert_array_equal(noise, np.zeros((d, d)))
    assert next_value(rng) == next_value(reference)


# -- SN (retracted) -----------------------------------------------------------------------


def test_sn_scale_default_sensitivity_is_one():
    assert sn_wishart_scale_retracted_not_dp(2.0) == pytest.approx(0.25)
    assert sn_wishart_scale_retracted_not_dp(0.5) == pytest.approx(1.0)


def test_sn_warning_helper_points_at_its_caller_by_default():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_retracted_sn()
    assert len(caught) == 1
    assert caught[0].category is RetractedMechanismWarning
    assert "NOT differentially private" in str(caught[0].message)
    assert_points_at_caller(caught[0], __file__, mechanisms.__file__)
