"""Noise calibrations of PPM and PPCA (each kills a measured surviving mutation).

Statistical tests use fixed seeds and the explicit level ``ALPHA``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from mpc_pca.dp.mechanism_baselines import ExponentialMechanismPCA, PrivatePowerMethodPCA

ALPHA = 0.001


def _parts():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 6)) / 4
    return np.array_split(x, 3)


@pytest.mark.parametrize("n_iter", [4, 9, 16])
def test_ppm_noise_is_calibrated_for_all_l_iterations(n_iter):
    """L noisy releases compose (zCDP): the per-iteration noise must grow as sqrt(L)."""
    once = PrivatePowerMethodPCA(2, epsilon=0.5, delta=1e-5, n_iter=1, random_state=0).fit(_parts())
    many = PrivatePowerMethodPCA(2, epsilon=0.5, delta=1e-5, n_iter=n_iter, random_state=0).fit(_parts())
    assert many.n_iter_ == n_iter
    assert many.noise_scale_ == pytest.approx(np.sqrt(n_iter) * once.noise_scale_, rel=1e-12)
    assert once.noise_scale_ > 0


def test_ppca_samples_with_exponent_half_epsilon_times_the_scatter():
    """d = 2, k = 1, X^T X = diag(s, 0): the angle theta of the sample has density
    proportional to exp((eps/2) s cos^2 theta), i.e. 2 theta is von Mises with
    kappa = eps s / 4 and E[cos^2 theta] = (1 + I1(kappa) / I0(kappa)) / 2.
    z-test of the mean of cos^2 theta over 1500 draws at ALPHA."""
    eps, s = 1.0, 4.0
    mechanism = ExponentialMechanismPCA(1, epsilon=eps, n_sweeps=10, inner_sweeps=2)._mechanism(1)
    n = 8
    A = np.diag([s / n, 0.0])  # the curator's second moment X^T X / N
    rng = np.random.default_rng(20)
    cos2 = np.array([mechanism(A, n, rng).components[0, 0] ** 2 for _ in range(1500)])
    kappa = eps * s / 4
    expected = (1 + special.i1(kappa) / special.i0(kappa)) / 2
    z = (cos2.mean() - expected) / (cos2.std() / np.sqrt(cos2.size))
    assert 2 * stats.norm.sf(abs(z)) > ALPHA, f"E[cos^2] = {cos2.mean():.4f}, expected {expected:.4f}"
