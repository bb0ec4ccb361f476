"""The verdict tests: three-valued, seeded, and they say what they tested."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.studies import verdicts
from protocols.errors import InputValidationError


def test_sign_test_is_three_valued():
    a = np.arange(10.0)
    assert verdicts.sign_test(a + 1, a).holds is True
    assert verdicts.sign_test(a - 1, a).holds is False
    mixed = verdicts.sign_test(a + np.r_[1, -1].repeat(5), a)
    assert mixed.holds is None and "5 wins, 5 losses" in mixed.evidence and "alpha 0.05" in mixed.evidence


def test_sign_test_needs_enough_pairs_for_alpha():
    # 4 wins out of 4: p = 1/16 > 0.05, so undecided; 5 of 5: p = 1/32 < 0.05
    assert verdicts.sign_test([1.0] * 4, [0.0] * 4).holds is None
    assert verdicts.sign_test([1.0] * 5, [0.0] * 5).holds is True


def test_sign_test_margin_drops_near_ties():
    v = verdicts.sign_test([1.001] * 8, [1.0] * 8, margin=0.01)
    assert v.holds is None and "no informative pair" in v.evidence


def test_trend_direction():
    xs = [1.0, 2.0, 3.0]
    assert verdicts.trend(xs, [[0.1, 0.2], [0.4, 0.5], [0.8, 0.9]]).holds is True
    assert verdicts.trend(xs, [[0.8, 0.9], [0.4, 0.5], [0.1, 0.2]]).holds is False
    assert verdicts.trend([1.0], [[0.3, 0.4]]).holds is None


def test_equivalence_and_ratio_are_seeded_and_three_valued():
    rng = np.random.default_rng(0)
    a = 1.0 + 0.01 * rng.normal(size=30)
    b = 1.0 + 0.01 * rng.normal(size=30)
    first = verdicts.equivalent(a, b, margin=0.05, seed=3)
    assert first == verdicts.equivalent(a, b, margin=0.05, seed=3)
    assert first.holds is True
    assert verdicts.equivalent(a * 1.5, b, margin=0.05).holds is False
    assert verdicts.ratio_above(a * 2, b, threshold=1.0).holds is True
    assert verdicts.ratio_above(a, b * 2, threshold=1.0).holds is False
    wide = verdicts.equivalent([0.5, 1.5], [1.0, 1.0], margin=0.05)
    assert wide.holds is None


def test_bad_parameters_raise():
    with pytest.raises(InputValidationError):
        verdicts.sign_test([1.0], [1.0, 2.0])
    with pytest.raises(InputValidationError):
        verdicts.sign_test([1.0], [0.0], alpha=0.7)
    with pytest.raises(InputValidationError):
        verdicts.equivalent([1.0], [1.0], margin=1.5)


def test_paired_bootstrap_drops_failed_runs_pairwise():
    a = [1.0, 1.01, np.nan, 0.99, 1.0, 1.02]
    b = [1.0, 1.0, 5.0, 1.0, 1.01, 1.0]
    v = verdicts.equivalent(a, b, margin=0.05, paired=True)
    assert v.holds is True  # b's 5.0 went with a's failed run
    with pytest.raises(InputValidationError, match="one length"):
        verdicts.equivalent([1.0, 2.0], [1.0], margin=0.1, paired=True)


def _timed_rounds(growth: float, noise_sd: float, rounds: int, seed: int) -> list[list[float]]:
    """Synthetic interleaved timing rounds at 2, 3, 4 parties: 0.3 s * (1 + growth)^(m - 2), log-normal noise."""
    rng = np.random.default_rng(seed)
    base = 0.3 * (1 + growth) ** np.arange(3)
    return [list(base * np.exp(noise_sd * rng.normal(size=3))) for _ in range(rounds)]


def test_growth_per_step_recovers_a_known_growth():
    exact = verdicts.growth_per_step([2, 3, 4], [[1.0, 1.1, 1.21], [2.0, 2.2, 2.42]])
    np.testing.assert_allclose(exact, [0.1, 0.1])
    # a round with a failed (NaN) or non-positive run is dropped, not averaged in
    assert verdicts.growth_per_step([2, 3, 4], [[1.0, np.nan, 1.0], [1.0, 0.0, 1.0]]).size == 0
    with pytest.raises(InputValidationError, match="2 distinct"):
        verdicts.growth_per_step([3, 3], [[1.0, 1.0]])
    with pytest.raises(InputValidationError, match="3 swept values"):
        verdicts.growth_per_step([2, 3, 4], [[1.0, 1.0]])


def test_grows_at_least_decides_by_the_margin_not_by_zero():
    xs = [2, 3, 4]
    # the paper's SS growth (+8.4 % per party) measured with 5 % noise over 12 rounds: growth of >= 5 %
    assert verdicts.grows_at_least(xs, _timed_rounds(0.084, 0.05, 12, 1), margin=0.05).holds is True
    # clearly no growth of that size: the interval lies below the margin
    flat = verdicts.grows_at_least(xs, _timed_rounds(-0.05, 0.05, 12, 2), margin=0.05)
    assert flat.holds is False and "minimum effect of +5.0 %" in flat.evidence
    # a real but small growth (+2 %) that a test against zero would call significant is not "at least 5 %"
    small = verdicts.grows_at_least(xs, _timed_rounds(0.02, 0.005, 12, 3), margin=0.05)
    assert small.holds is False
    assert verdicts.grows_at_least(xs, _timed_rounds(0.1, 0.05, 1, 4), margin=0.05).holds is None


@pytest.mark.slow  # about 6 s: 20-80 bootstrap verdicts
def test_noisy_no_effect_never_says_reproduced():
    """Noise as large as measured on shared cores (log sd 0.25) around no growth: never 'grows by >= 5 %'.

    Fixed seeds 0-39, 12 rounds each. At this noise the interval is mostly wider than the margin on each
    side, so the verdict is "too noisy to decide" (35 of the 40 seeds; 3 more straddle the margin, the
    last two say "no growth of 5 %", which is true) instead of landing on either side by chance.
    """
    xs = [2, 3, 4]
    verdicts_ = [verdicts.grows_at_least(xs, _timed_rounds(0.0, 0.25, 12, s), margin=0.05) for s in range(40)]
    holds = [v.holds for v in verdicts_]
    assert True not in holds and holds.count(None) >= 36
    assert sum("too noisy to decide" in v.evidence for v in verdicts_) >= 33
    # quiet cores (log sd 0.03), same lack of growth: decided, and always the same way
    quiet = [
        verdicts.grows_at_least(xs, _timed_rounds(0.0, 0.03, 12, s), margin=0.05).holds for s in range(40)
    ]
    assert quiet == [False] * 40


def test_flat_within_is_an_equivalence_band():
    xs = [2, 3, 4]
    assert verdicts.flat_within(xs, _timed_rounds(0.01, 0.02, 12, 5), margin=0.05).holds is True
    assert verdicts.flat_within(xs, _timed_rounds(0.3, 0.02, 12, 6), margin=0.05).holds is False
    assert verdicts.flat_within(xs, _timed_rounds(-0.3, 0.02, 12, 7), margin=0.05).holds is False
    assert verdicts.flat_within(xs, _timed_rounds(0.0, 0.4, 12, 8), margin=0.05).holds is None
    # clearly growing but measured too noisily to resolve the band: not decided
    noisy = verdicts.flat_within(xs, _timed_rounds(0.3, 0.6, 12, 10), margin=0.05)
    assert noisy.holds is None and "too noisy" in noisy.evidence
    with pytest.raises(InputValidationError, match="margin"):
        verdicts.flat_within(xs, _timed_rounds(0.0, 0.1, 3, 9), margin=1.5)


@pytest.mark.slow  # about 6 s: 20-80 bootstrap verdicts
def test_a_margin_far_below_the_effect_decides_the_same_way_in_every_run():
    """Table 3's design: +8 % growth per party with 10 % noise per run over 36 rounds (fixed seeds 0-19).

    Against a 5 % margin, which the intervals straddle, the verdict depends on the run (13 say "grows",
    7 cannot decide). Against a 2 % margin with a separate 5 % resolution every run says "grows"; with
    the resolution tied to the 2 % margin most runs are "too noisy". The ±3 % flatness band: 19 of 20
    runs say "not flat" and none says "flat".
    """
    xs = [2, 3, 4]
    runs = [_timed_rounds(0.08, 0.10, 36, s) for s in range(20)]
    at_five = [verdicts.grows_at_least(xs, r, margin=0.05).holds for r in runs]
    assert at_five.count(True) < 20 and False not in at_five  # the verdict flips between runs
    far = [verdicts.grows_at_least(xs, r, margin=0.02, resolution=0.05).holds for r in runs]
    assert far == [True] * 20
    tight = [verdicts.grows_at_least(xs, r, margin=0.02) for r in runs]
    assert sum("too noisy" in v.evidence for v in tight) >= 10
    flat = [verdicts.flat_within(xs, r, margin=0.03, resolution=0.05).holds for r in runs]
    assert True not in flat and flat.count(False) >= 18
    with pytest.raises(InputValidationError, match="resolution"):
        verdicts.grows_at_least(xs, runs[0], margin=0.02, resolution=0.0)
