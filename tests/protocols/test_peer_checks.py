"""Checks on what peers send, and the Paillier randomness: each kills a measured surviving mutation."""

from __future__ import annotations

import numpy as np
import pytest
from gmpy2 import mpz
from scipy import stats

from protocols.errors import ProtocolError
from protocols.messages import expect_real_array
from protocols.paillier.cipher import random_units
from protocols.paillier.keys import generate_keypair

#: Significance level of the statistical test below (fixed-size sample, no retries).
ALPHA = 1e-6


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_expect_real_array_refuses_non_finite_values_from_a_peer(bad, dtype):
    message = np.array([[1.0, 2.0], [bad, 4.0]], dtype=dtype)
    with pytest.raises(ProtocolError, match="'site3' sent the local mean with non-finite values"):
        expect_real_array(message, "site3", (2, 2), "the local mean")


def test_expect_real_array_accepts_finite_real_arrays_of_any_length_along_a_free_axis():
    out = expect_real_array(np.arange(6, dtype=np.int64).reshape(3, 2), "p", (None, 2))
    assert out.dtype == np.float64 and out.shape == (3, 2)
    with pytest.raises(ProtocolError, match="expected a real array of shape"):
        expect_real_array(np.ones((3, 3)), "p", (None, 2))


def test_paillier_randomness_is_uniform_over_the_whole_modulus():
    """``r`` must be uniform in Z_n^*, not confined to a few low bits.

    Kolmogorov-Smirnov test of ``r / n`` against U(0, 1) on 400 draws for a
    512-bit test modulus, at ``ALPHA = 1e-6`` (r comes from :mod:`secrets`, so
    the sample cannot be seeded; a 64-bit r puts every ``r / n`` below 1e-134).
    """
    keys = generate_keypair(512, allow_insecure_key_size=True)
    n = keys.public_key.n
    units = random_units(n, 400)
    assert all(0 < r < n for r in units)
    fractions = np.array([float(mpz(r) * 2**53 // n) / 2**53 for r in units])
    assert stats.kstest(fractions, "uniform").pvalue > ALPHA
    assert len(set(units)) == len(units)
