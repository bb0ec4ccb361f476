"""Privacy budget and noise scales of (cape)AGN (Imtiaz & Sarwate, JSTSP 2018, §5 eqs. 4-5).

The budget ``(epsilon, delta)`` is split between the two releases:
``(rho epsilon, rho delta)`` for ``M2`` and ``((1 - rho) epsilon, (1 - rho) delta)``
for the whitened ``M3``, ``rho = budget_split`` (the paper uses halves,
``rho = 1/2``). By basic composition the two Gaussian releases together are
``(epsilon, delta)``-DP. Each release is a Gaussian mechanism calibrated analytically (Balle & Wang 2018, the default;
:mod:`protocols.dp.calibration`) or classically,
``tau = Delta sqrt(2 ln(1.25 / delta_i)) / epsilon_i`` as in the paper, with
``Delta = Delta2`` for ``M2`` and ``||W||_2^3 Delta3`` for ``M3(W, W, W)``
(:mod:`mpc_pca.dp.moments`).

``W`` comes from the noisy ``M2``, i.e. it is already public when the second
release is calibrated, so calibrating on it is adaptive composition, not a
data-dependent sensitivity. The paper states the tensor noise in terms of
``Delta3`` of the unwhitened ``M3`` while adding it to the whitened
``K x K x K`` tensor; that is only enough when ``||W||_2 <= 1``, which fails
whenever the ``K``-th eigenvalue of ``M2`` is below 1 (always, for unit-norm
data and topic models). This package always includes ``||W||_2^3``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.mechanisms import Neighbour, check_calibration, gaussian_noise_scale
from mpc_pca.dp.moments import moment_sensitivities, whitened_sensitivity
from protocols.errors import InputValidationError


def check_budget_split(value: object) -> float:
    """``rho``, the share of ``epsilon`` and ``delta`` spent on ``M2``: a number in ``(0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) < 1.0:
        raise InputValidationError(f"budget_split={value!r} must lie strictly between 0 and 1")
    return float(value)


def check_release_calibration(noise_calibration: object, epsilon: float, delta: float, split: float) -> str:
    """Check the Gaussian calibration against both releases' ``(epsilon_i, delta_i)``.

    ``"classical"`` is refused when either release's ``epsilon_i >= 1``
    (:func:`protocols.dp.calibration.gaussian_sigma`), before any site starts.
    """
    mode = check_calibration(noise_calibration)
    for share in (split, 1.0 - split):
        gaussian_noise_scale(1.0, share * epsilon, share * delta, mode)
    return mode


@dataclass(frozen=True)
class AGNBudget:
    """What fixes the per-site Gaussian noise of the two releases (before any CAPE factor)."""

    model: str
    n_features: int
    sigma: float | None
    epsilon: float
    delta: float
    neighbour: Neighbour
    budget_split: float = 0.5
    noise_calibration: str = "analytic"

    @property
    def m2_privacy(self) -> tuple[float, float]:
        """``(epsilon_2, delta_2) = (rho epsilon, rho delta)``."""
        return self.budget_split * self.epsilon, self.budget_split * self.delta

    @property
    def m3_privacy(self) -> tuple[float, float]:
        """``(epsilon_3, delta_3) = ((1 - rho) epsilon, (1 - rho) delta)``."""
        rest = 1.0 - self.budget_split
        return rest * self.epsilon, rest * self.delta

    def sensitivities(self, n_samples: int) -> tuple[float, float]:
        """``(Delta2, Delta3)`` of a site with ``n_samples`` rows."""
        return moment_sensitivities(self.model, n_samples, self.n_features, self.sigma, self.neighbour)

    def m2_scale(self, n_samples: int) -> float:
        """Gaussian-mechanism scale of ``M2`` for ``n_samples`` rows (0 when ``epsilon = inf``)."""
        eps, dlt = self.m2_privacy
        return gaussian_noise_scale(self.sensitivities(n_samples)[0], eps, dlt, self.noise_calibration)

    def m3_scale(self, n_samples: int, whitening: NDArray[np.float64]) -> float:
        """Gaussian-mechanism scale of ``M3(W, W, W)``: sensitivity ``||W||_2^3 Delta3``."""
        eps, dlt = self.m3_privacy
        if math.isinf(eps):
            return 0.0
        return gaussian_noise_scale(
            whitened_sensitivity(self.sensitivities(n_samples)[1], whitening),
            eps,
            dlt,
            self.noise_calibration,
        )
