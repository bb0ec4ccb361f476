"""capePCA: distributed DP PCA with correlated noise (Imtiaz & Sarwate, JSTSP 2018, Alg. 1 / CAPE).

Roles (S sites, an untrusted aggregator, a trusted noise generator):

1. site ``s`` announces its row count ``N_s`` to the aggregator and the noise
   generator (CAPE assumes the aggregator knows every ``tau_s`` and weight).
2. noise generator: symmetric ``e_s`` with ``sum_s mu_s e_s = 0`` and
   ``Var(e_s) = (1 - 1/S) tau_s^2`` entry-wise; sends ``e_s`` to site ``s``.
3. aggregator: symmetric ``f_s`` with ``Var(f_s) = tau_s^2 / S``; sends it to
   site ``s`` and keeps it.
4. site: local symmetric ``g_s`` with ``Var(g_s) = tau_s^2 / S`` and releases
   ``Â_s = A_s + e_s + f_s + g_s``, ``A_s = X_s^T X_s / N_s``.
5. aggregator: ``Â = sum_s mu_s (Â_s - f_s) = A + sum_s mu_s g_s``; the top-``K``
   eigenvectors of ``Â`` are released to the sites.

``tau_s = c sigma(Delta_s, epsilon, delta)`` (the analytic Gaussian calibration
of Balle & Wang 2018 by default, the paper's ``Delta_s sqrt(2 ln(1.25/delta)) /
epsilon`` with ``noise_calibration="classical"``) with ``Delta_s`` the
sensitivity of ``A_s`` (``sqrt(2)/N_s`` replace-one, ``1/N_s`` add-remove; see
:mod:`mpc_pca.dp.mechanisms`) and ``c`` set by the calibration (below). All
variances are those of the paper in units of ``tau_s`` (§3, eq. 2, confirmed
against the authors' code).

Calibration (derivation in ``docs/cape_joint_privacy.md``)
----------------------------------------------------------
The aggregator knows every ``f_t``, so its view is all sites' ``A_t + e_t + g_t``
together, and the ``e_t`` are correlated through the zero-sum constraint:
against that joint view the paper's calibration gives each site only
``(epsilon sqrt(2S/(S+1)), delta)``. ``calibration="joint"`` (default) scales
every party's noise by ``c = sqrt(2S/(S+1))`` so the joint view is
``(epsilon, delta)``-DP for every site, whatever the ``N_s``;
``calibration="paper"`` (``c = 1``) reproduces the paper, whose aggregate
noise equals pooled Analyze Gauss, and reports ``effective_epsilon_``. Weights
are ``mu_s = N_s / N``. Neither calibration protects at level ``epsilon``
against sites colluding with the aggregator (the joint one gives
``epsilon sqrt((S + h)/(2h))`` with ``h`` honest sites left).

Trust: the noise generator is trusted and does not collude with the
aggregator (it knows every ``e_s``). ``N_s`` is sent in the clear.

Seeds: ``random_state`` derives the aggregator's ``f_s``, the noise
generator's ``e_s`` and the sites' ``g_s`` from one seed; it is for
reproducible experiments only, and a run with a known seed is not private
(see :mod:`mpc_pca.dp.mechanisms`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.common import (
    AGGREGATOR,
    NOISE_GENERATOR,
    expect_count,
    expect_symmetric,
)
from mpc_pca.dp.mechanisms import (
    Neighbour,
    check_epsilon,
    gaussian_noise_scale,
    second_moment_sensitivity,
    symmetric_gaussian_noise,
)
from mpc_pca.linalg import top_eigenpairs, upper_triangle
from mpc_pca.roles import provider_names
from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

CALIBRATIONS = ("joint", "paper")


def joint_view_factor(n_sites: int) -> float:
    """``sqrt(2S / (S + 1))``: how much less private the aggregator's joint view is than one release.

    With the paper's variances the aggregator's view of site ``s`` is a
    Gaussian mechanism with noise ``tau_s sqrt((S + 1) / (2S))`` (module
    docstring); 1 for ``S = 1``, tending to ``sqrt(2)``.
    """
    if isinstance(n_sites, bool) or not isinstance(n_sites, int) or n_sites < 1:
        raise InputValidationError(f"n_sites={n_sites!r} must be a positive integer")
    return math.sqrt(2.0 * n_sites / (n_sites + 1.0))


def check_calibration(calibration: object) -> str:
    """Validate the capePCA calibration name (``"joint"`` or ``"paper"``)."""
    if not isinstance(calibration, str) or calibration not in CALIBRATIONS:
        raise InputValidationError(
            f"calibration={calibration!r} is not supported; choose one of {list(CALIBRATIONS)}"
        )
    return calibration


def effective_epsilon(
    epsilon: float,
    n_sites: int,
    calibration: str,
    delta: float | None = None,
    noise_calibration: str = "classical",
) -> float:
    """``epsilon`` of each site against the aggregator's joint view of all releases.

    ``epsilon`` for ``"joint"``. For ``"paper"`` the joint view is a Gaussian
    mechanism whose noise is ``1 / sqrt(2S / (S + 1))`` times the calibrated
    one: under the classical formula (``sigma`` proportional to
    ``1/epsilon``) that is ``epsilon sqrt(2S / (S + 1))``; under the analytic
    one (pass ``delta`` and ``noise_calibration="analytic"``) it is the
    ``epsilon'`` at which the analytic Gaussian mechanism with that smaller
    noise meets ``delta`` (:func:`protocols.dp.calibration.analytic_gaussian_epsilon`).
    ``inf`` stays ``inf``.
    """
    eps = check_epsilon(epsilon)
    if check_calibration(calibration) == "joint" or math.isinf(eps):
        return eps
    factor = joint_view_factor(n_sites)
    if factor == 1.0:
        return eps
    if noise_calibration == "classical" or delta is None:
        return eps * factor
    sigma = analytic_gaussian_sigma(1.0, eps, delta)
    return analytic_gaussian_epsilon(sigma / factor, 1.0, delta)


@dataclass(frozen=True)
class CapeConfig:
    """What every party agrees on before a capePCA run."""

    n_parties: int
    n_features: int
    n_components: int
    epsilon: float
    delta: float
    neighbour: Neighbour
    calibration: str = "joint"
    noise_calibration: str = "analytic"

    @property
    def sites(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)

    @property
    def scale_factor(self) -> float:
        """``c``: ``sqrt(2S / (S + 1))`` under ``"joint"``, 1 under ``"paper"``."""
        return joint_view_factor(self.n_parties) if self.calibration == "joint" else 1.0

    def site_scale(self, n_samples: int) -> float:
        """``tau_s = c sigma(Delta_s, epsilon, delta)`` for a site with ``n_samples`` rows.

        ``sigma`` is the analytic Gaussian calibration (default) or the paper's
        ``Delta_s sqrt(2 ln(1.25/delta)) / epsilon`` (``noise_calibration="classical"``).
        """
        base = gaussian_noise_scale(
            second_moment_sensitivity(n_samples, self.neighbour),
            self.epsilon,
            self.delta,
            self.noise_calibration,
        )
        return self.scale_factor * base


@dataclass(kw_only=True)
class CapeModel:
    """What the aggregator computes and holds.

    ``site_releases`` are the ``Â_s`` it received and ``site_views`` the
    ``Â_s - f_s`` it combines (kept for inspection; the aggregator knows both).
    """

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    second_moment: NDArray[np.float64]
    site_samples: list[int]
    weights: NDArray[np.float64]
    site_scales: NDArray[np.float64]
    site_releases: list[NDArray[np.float64]]
    site_views: list[NDArray[np.float64]]
    calibration: str = "joint"
    effective_epsilon: float = math.nan

    @property
    def noise_scale(self) -> float:
        """Standard deviation of the aggregate noise ``sum_s mu_s g_s``."""
        s = len(self.site_samples)
        return float(math.sqrt(np.sum(self.weights**2 * self.site_scales**2) / s))


def cape_weights(counts: Sequence[int]) -> NDArray[np.float64]:
    """Aggregator weights ``mu_s = N_s / N`` (see the module docstring for why)."""
    arr = np.asarray(counts, dtype=np.float64)
    return arr / arr.sum()


def zero_sum_noise(
    scales: Sequence[float], weights: Sequence[float] | NDArray[np.float64], d: int, rng: np.random.Generator
) -> list[NDArray[np.float64]]:
    """CAPE's correlated noise: symmetric ``e_s`` with ``sum_s mu_s e_s = 0``.

    ``e_s = tau_s (z_s - mean z)``, ``z_s`` standard symmetric Gaussian
    (upper triangle i.i.d.), so ``Var(e_s) = (1 - 1/S) tau_s^2`` entry-wise
    (:func:`zero_sum_from_draws`).

    Raises
    ------
    InputValidationError
        If the lengths differ or ``mu_s tau_s`` is not constant.
    """
    n_sites = len(scales)
    draws = [symmetric_gaussian_noise(d, 1.0, rng) for _ in range(n_sites)]
    return zero_sum_from_draws(draws, scales, weights)


def zero_sum_from_draws(
    draws: Sequence[NDArray[np.float64]],
    scales: Sequence[float] | NDArray[np.float64],
    weights: Sequence[float] | NDArray[np.float64],
) -> list[NDArray[np.float64]]:
    """CAPE's zero-sum combination of i.i.d. standard draws ``z_s`` of any (common) shape.

    ``e_s = tau_s (z_s - mean_r z_r)``, so ``Var(e_s) = (1 - 1/S) tau_s^2`` for
    every entry whose ``z_s`` entry has unit variance, and
    ``sum_s mu_s e_s = 0`` because ``mu_s tau_s`` is the same for every site,
    which is checked. The last array is set to minus the weighted sum of the
    others, so equal weights give ``sum_s e_s == 0`` exactly. capePCA draws
    symmetric matrices (:func:`zero_sum_noise`); capeAGN draws the unique
    entries of symmetric tensors.

    Raises
    ------
    InputValidationError
        If the lengths differ or ``mu_s tau_s`` is not constant.
    """
    taus = np.asarray(scales, dtype=np.float64)
    mus = np.asarray(weights, dtype=np.float64)
    if taus.shape != mus.shape or taus.ndim != 1 or taus.size == 0 or len(draws) != taus.size:
        raise InputValidationError("zero-sum noise needs one draw, one scale and one weight per site")
    products = mus * taus
    if not np.allclose(products, products[0], rtol=1e-9, atol=0.0):
        raise InputValidationError("zero-sum noise needs mu_s * tau_s to be the same for every site")
    s = taus.size
    z = np.stack([np.asarray(draw, dtype=np.float64) for draw in draws])
    centred = z - z.mean(axis=0)
    noise = [taus[i] * centred[i] for i in range(s - 1)]
    ratios = mus[:-1] / mus[-1]
    if s == 1:
        last = np.zeros(z.shape[1:])
    elif np.all(ratios == 1.0):
        last = -np.sum(np.stack(noise), axis=0)
    else:
        last = -np.sum(np.stack([r * e for r, e in zip(ratios, noise, strict=True)]), axis=0)
    noise.append(last)
    return noise


# -- role functions -----------------------------------------------------------------------


def _collect_counts(party: Party, config: CapeConfig) -> list[int]:
    return [expect_count(party.recv(site), site) for site in config.sites]


def noise_generator_role(
    party: Party, config: CapeConfig, rng: np.random.Generator
) -> list[NDArray[np.float64]]:
    """Trusted noise generator (Alg. 1): draw the zero-sum ``e_s``, send each to its site."""
    counts = _collect_counts(party, config)
    scales = [config.site_scale(n) for n in counts]
    noise = zero_sum_noise(scales, cape_weights(counts), config.n_features, rng)
    for site, e_s in zip(config.sites, noise, strict=True):
        party.send(site, upper_triangle(e_s))
    return noise


def site_role(
    party: Party, data: NDArray[np.float64], config: CapeConfig, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Site ``s`` (Alg. 1): release ``Â_s = A_s + e_s + f_s + g_s``; return the released ``V_K``."""
    d = config.n_features
    if data.ndim != 2 or data.shape[1] != d:
        raise InputValidationError(f"{party.name} holds data of shape {data.shape}, expected (n, {d})")
    n_s = int(data.shape[0])
    party.send(NOISE_GENERATOR, n_s)
    party.send(AGGREGATOR, n_s)
    e_s = expect_symmetric(party.recv(NOISE_GENERATOR), NOISE_GENERATOR, d)
    f_s = expect_symmetric(party.recv(AGGREGATOR), AGGREGATOR, d)
    tau = config.site_scale(n_s)
    g_s = symmetric_gaussian_noise(d, tau / math.sqrt(config.n_parties), rng)
    release = data.T @ data / n_s + e_s + f_s + g_s
    party.send(AGGREGATOR, upper_triangle(release))
    return expect_real_array(party.recv(AGGREGATOR), AGGREGATOR, (config.n_components, d))


def aggregator_role(party: Party, config: CapeConfig, rng: np.random.Generator) -> CapeModel:
    """Aggregator (Alg. 1): send ``f_s``, remove it, average with ``mu_s``, release ``V_K``."""
    d = config.n_features
    s = config.n_parties
    counts = _collect_counts(party, config)
    scales = np.array([config.site_scale(n) for n in counts])
    weights = cape_weights(counts)
    masks = [symmetric_gaussian_noise(d, tau / math.sqrt(s), rng) for tau in scales]
    for site, f_s in zip(config.sites, masks, strict=True):
        party.send(site, upper_triangle(f_s))
    releases = [expect_symmetric(party.recv(site), site, d) for site in config.sites]
    views = [release - f_s for release, f_s in zip(releases, masks, strict=True)]
    combined = np.zeros((d, d))
    for mu, view in zip(weights, views, strict=True):
        combined += mu * view
    if not np.all(np.isfinite(combined)):
        raise ProtocolError("the combined second-moment matrix is not finite")
    values, components, _ = top_eigenpairs(combined, config.n_components)
    for site in config.sites:
        party.send(site, components)
    return CapeModel(
        components=components,
        explained_variance=values,
        second_moment=combined,
        site_samples=counts,
        weights=weights,
        site_scales=scales,
        site_releases=releases,
        site_views=views,
        calibration=config.calibration,
        effective_epsilon=effective_epsilon(
            config.epsilon, s, config.calibration, config.delta, config.noise_calibration
        ),
    )
