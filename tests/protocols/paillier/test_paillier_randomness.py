"""The Paillier randomness (:mod:`protocols.paillier.cipher`): kills a measured surviving mutation."""

from __future__ import annotations

import numpy as np
from gmpy2 import mpz
from scipy import stats

from protocols.paillier.cipher import random_units
from protocols.paillier.keys import generate_keypair

#: Significance level of the statistical test below (fixed-size sample, no retries).
ALPHA = 1e-6


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
