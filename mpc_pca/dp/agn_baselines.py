"""Baselines for capeAGN (JSTSP 2018 §6 compares against these): non-private, pooled, conventional, local.

All run the same pipeline as capeAGN (``M2`` -> whitening -> whitened ``M3`` ->
tensor power method -> un-whitening, :mod:`mpc_pca.dp.agn_core`) with the
same budget split and sensitivities (:mod:`mpc_pca.dp.agn_privacy`); only the
noise differs:

``"non-private"``
    pooled moments, no noise (``epsilon = inf``).
``"pooled"``
    a trusted curator holding all ``N`` rows runs AGN: Gaussian noise with the
    pooled scale ``tau(N)`` on ``M2`` and on ``M3(W, W, W)``. capeAGN with
    ``calibration="paper"`` has exactly this aggregate noise.
``"conventional"``
    every site releases its moments with **independent** Gaussian noise of its
    own scale ``tau(N_s)`` (each release ``(epsilon_i, delta_i)``-DP against
    anyone), the aggregator averages with ``mu_s = N_s / N``; the aggregate
    noise variance is ``sum_s mu_s^2 tau(N_s)^2``, ``S`` times the pooled one
    for equal sites.
``"local"``
    site 0 alone runs AGN on its own rows with ``tau(N_0)``.

These are simulations of the centralised computations (no message passing):
they exist to be compared with the protocol in the study.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.dp.agn_core import PowerMethodOptions, decompose_whitened, whitening_from_second_moment
from mpc_pca.dp.agn_privacy import AGNBudget, check_budget_split, check_release_calibration
from mpc_pca.dp.capeagn import prepare_agn_parts
from mpc_pca.dp.common import check_privacy
from mpc_pca.dp.mechanisms import Neighbour, RandomState, spawn_generators, symmetric_gaussian_noise
from mpc_pca.dp.moments import check_model, check_sigma, second_moment, whitened_third_moment
from mpc_pca.dp.tensors import symmetric_gaussian_tensor
from protocols.errors import InputValidationError

SCHEMES = ("non-private", "pooled", "conventional", "local")


@dataclass
class AGNFit:
    """Result of a baseline: components (``K x D``), weights, whitening, aggregate noise scales."""

    components: NDArray[np.float64]
    weights: NDArray[np.float64]
    whitening: NDArray[np.float64]
    tensor_eigenvalues: NDArray[np.float64]
    m2_noise_scale: float
    m3_noise_scale: float


def _groups(scheme: str, arrays: list[NDArray[np.float64]]) -> list[NDArray[np.float64]]:
    if scheme in ("non-private", "pooled"):
        return [np.vstack(arrays)]
    if scheme == "local":
        return [arrays[0]]
    return arrays


def fit_agn_baseline(
    parts: Sequence[ArrayLike],
    n_components: int,
    scheme: str,
    *,
    model: str = "stm",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    sigma: float | None = None,
    neighbour: Neighbour | str = Neighbour.REPLACE_ONE,
    budget_split: float = 0.5,
    row_norm: str = "clip",
    power: PowerMethodOptions | None = None,
    random_state: RandomState = None,
    noise_calibration: str = "analytic",
) -> AGNFit:
    """Run one baseline ``scheme`` (see the module docstring) on the sites' rows.

    Raises
    ------
    InputValidationError
        For an unknown scheme or any input capeAGN itself would refuse.
    """
    if scheme not in SCHEMES:
        raise InputValidationError(f"scheme={scheme!r} is not supported; choose one of {list(SCHEMES)}")
    kind = check_model(model)
    eps, dlt, relation = check_privacy(epsilon, delta, neighbour)
    if scheme == "non-private":
        eps = math.inf
    split = check_budget_split(budget_split)
    check_release_calibration(noise_calibration, eps, dlt, split)
    scale = check_sigma(kind, sigma)
    arrays, k = prepare_agn_parts(parts, n_components, kind, row_norm)
    d = arrays[0].shape[1]
    budget = AGNBudget(kind, d, scale, eps, dlt, relation, split, noise_calibration)
    groups = _groups(scheme, arrays)
    counts = np.array([g.shape[0] for g in groups], dtype=np.float64)
    mus = counts / counts.sum()
    noise_rng, power_rng = spawn_generators(random_state, 2)
    m2_scales = np.array([budget.m2_scale(int(n)) for n in counts])
    m2 = sum(
        mu * (second_moment(kind, g, scale) + symmetric_gaussian_noise(d, tau, noise_rng))
        for mu, g, tau in zip(mus, groups, m2_scales, strict=True)
    )
    white = whitening_from_second_moment(np.asarray(m2), k)
    m3_scales = np.array([budget.m3_scale(int(n), white.matrix) for n in counts])
    m3 = sum(
        mu
        * (whitened_third_moment(kind, g, white.matrix, scale) + symmetric_gaussian_tensor(k, tau, noise_rng))
        for mu, g, tau in zip(mus, groups, m3_scales, strict=True)
    )
    components, weights, lambdas = decompose_whitened(
        np.asarray(m3), white, kind, power_rng, power or PowerMethodOptions()
    )
    return AGNFit(
        components,
        weights,
        white.matrix,
        lambdas,
        float(np.sqrt(np.sum(mus**2 * m2_scales**2))),
        float(np.sqrt(np.sum(mus**2 * m3_scales**2))),
    )
