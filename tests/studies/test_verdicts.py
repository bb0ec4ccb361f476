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
