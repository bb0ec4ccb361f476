"""capeAGN: distributed DP orthogonal tensor decomposition with CAPE noise (Imtiaz & Sarwate, JSTSP 2018, §5).

Learns a single topic model (``model="stm"``) or a mixture of spherical
Gaussians (``model="mog"``) from the moments of :mod:`mpc_pca.dp.moments`,
with S sites, an untrusted aggregator and a trusted noise generator, as
capePCA (:mod:`mpc_pca.dp.cape`):

1. site ``s`` sends its row count ``N_s`` to the aggregator and the noise
   generator.
2. ``M2`` stage (capePCA's protocol on ``M2_s``): the noise generator sends
   zero-sum symmetric ``e_s`` (``Var = (1 - 1/S) tau2_s^2``), the aggregator
   sends symmetric ``f_s`` (``Var = tau2_s^2 / S``, kept), the site adds its own
   ``g_s`` (``Var = tau2_s^2 / S``) and releases ``M2_s + e_s + f_s + g_s``.
   The aggregator forms ``M2_hat = sum_s mu_s (release_s - f_s)``,
   ``mu_s = N_s / N``, whose noise has the pooled-data variance.
3. The aggregator computes ``W = U_K Lambda_K^(-1/2)`` from the top-``K``
   eigenpairs of ``M2_hat`` (:mod:`mpc_pca.dp.agn_core`) and sends it to the
   sites and the noise generator.
4. ``M3`` stage: the same three noise terms, now symmetric ``K x K x K``
   tensors built from their ``C(K + 2, 3)`` unique entries
   (:mod:`mpc_pca.dp.tensors`), scale ``tau3_s`` calibrated to
   ``||W||_2^3 Delta3`` (:mod:`mpc_pca.dp.agn_privacy`); the site releases
   ``M3_s(W, W, W) + E_s + F_s + G_s`` (packed unique entries, never ``D^3``).
5. The aggregator combines ``T_hat = sum_s mu_s (release_s - F_s)``, runs the
   robust tensor power method with deflation, un-whitens, and sends the
   components ``mu_k`` (``K x D``) and weights ``w_k`` to the sites.

Calibration and the joint view. The argument of :mod:`mpc_pca.dp.cape`
(``docs/cape_joint_privacy.md``) applies to each stage unchanged: for each
entry (matrix entry in stage 2, unique tensor entry in stage 4) the
aggregator, who knows every ``f_s``, sees ``A_t + e_t + g_t`` for all sites
``t`` with covariance ``T M T``, and a neighbour of site ``s`` moves only
site ``s``'s mean by at most its sensitivity. So

* ``calibration="joint"`` (default) multiplies ``tau2_s`` and ``tau3_s`` (all
  three noise terms of both stages) by ``c = sqrt(2S / (S + 1))``: each stage
  is ``(epsilon_i, delta_i)``-DP for every site against the aggregator's joint
  view, and the two stages compose to ``(epsilon, delta)``;
* ``calibration="paper"`` uses the paper's variances (``c = 1``): each
  release alone is ``(epsilon_i, delta_i)``-DP and the aggregate carries
  exactly the pooled-data noise, but against the joint view each stage is
  ``(c epsilon_i, delta_i)``-DP, so ``effective_epsilon_ = c epsilon``.

Colluding sites weaken both, as for capePCA. The stage-4 scales depend on
``W``; ``W`` is a DP output of stage 2, so this is adaptive composition. The
zero-sum construction needs ``mu_s tau3_s`` constant across sites, which
holds because ``tau3_s`` is proportional to ``1/N_s`` for a common ``W``.

Trust: the noise generator is trusted and does not collude with the
aggregator. ``N_s`` and ``W`` are public. ``random_state`` is for
reproducible experiments only (see :mod:`mpc_pca.dp.mechanisms`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.dp.agn_core import PowerMethodOptions, decompose_whitened, whitening_from_second_moment
from mpc_pca.dp.agn_privacy import AGNBudget, check_budget_split, check_release_calibration
from mpc_pca.dp.cape import (
    check_calibration,
    effective_epsilon,
    joint_view_factor,
    zero_sum_from_draws,
)
from mpc_pca.dp.common import AGGREGATOR, NOISE_GENERATOR, check_privacy, expect_count, expect_symmetric
from mpc_pca.dp.mechanisms import Neighbour, symmetric_gaussian_noise
from mpc_pca.dp.moments import check_documents, check_model, check_sigma, second_moment, whitened_third_moment
from mpc_pca.dp.preprocessing import bound_rows
from mpc_pca.dp.tensors import (
    expect_symmetric3,
    n_unique_entries,
    pack_symmetric3,
    symmetric_gaussian_tensor,
    unpack_symmetric3,
)
from mpc_pca.linalg import upper_triangle
from mpc_pca.roles import provider_names
from mpc_pca.validation import check_n_components, check_parts
from protocols.errors import InputValidationError
from protocols.messages import expect_real_array
from protocols.party import Party


def prepare_agn_parts(
    parts: Sequence[ArrayLike], n_components: object, model: str, row_norm: str
) -> tuple[list[NDArray[np.float64]], int]:
    """Validate the sites' data for ``model`` before anything is sent.

    ``"stm"``: non-negative integer word counts; a document of fewer than 3
    words contributes nothing (:mod:`mpc_pca.dp.moments`), a site with no
    longer one is refused.
    ``"mog"``: rows of norm ``<= 1``, enforced by ``row_norm`` (``"clip"`` or
    ``"error"``). Both: finite values, equal feature counts,
    ``1 <= n_components <= D``.
    """
    arrays = check_parts(parts, min_total_rows=1)
    k = check_n_components(n_components, arrays[0].shape[1])
    if n_components is None:
        raise InputValidationError(
            "n_components=None: capeAGN needs the number of topics / mixture components"
        )
    if model == "stm":
        if row_norm != "clip":  # the default; word counts are bounded by their length, not clipped
            raise InputValidationError(
                f"row_norm={row_norm!r} applies to model='mog' only; model='stm' rows are word "
                "counts, checked as such (leave row_norm at its default, clip)"
            )
        return [check_documents(arr, i) for i, arr in enumerate(arrays)], k
    return bound_rows(arrays, row_norm), k


@dataclass(frozen=True)
class AGNConfig:
    """What every party agrees on before a capeAGN run."""

    n_parties: int
    n_features: int
    n_components: int
    budget: AGNBudget
    calibration: str = "joint"
    power: PowerMethodOptions = field(default_factory=PowerMethodOptions)

    @property
    def sites(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)

    @property
    def scale_factor(self) -> float:
        """``c``: ``sqrt(2S / (S + 1))`` under ``"joint"``, 1 under ``"paper"``."""
        return joint_view_factor(self.n_parties) if self.calibration == "joint" else 1.0

    def m2_scale(self, n_samples: int) -> float:
        """``tau2_s``, including the calibration factor."""
        return self.scale_factor * self.budget.m2_scale(n_samples)

    def m3_scale(self, n_samples: int, whitening: NDArray[np.float64]) -> float:
        """``tau3_s`` for the public ``W``, including the calibration factor."""
        return self.scale_factor * self.budget.m3_scale(n_samples, whitening)


@dataclass
class AGNModel:
    """What the aggregator computes and holds."""

    components: NDArray[np.float64]
    weights: NDArray[np.float64]
    whitening: NDArray[np.float64]
    tensor_eigenvalues: NDArray[np.float64]
    second_moment: NDArray[np.float64]
    whitened_third_moment: NDArray[np.float64]
    site_samples: list[int]
    site_weights: NDArray[np.float64]
    m2_scales: NDArray[np.float64]
    m3_scales: NDArray[np.float64]
    whitening_floored: bool
    calibration: str
    effective_epsilon: float

    def aggregate_scale(self, stage: int) -> float:
        """Standard deviation of the aggregate noise ``sum_s mu_s g_s`` per entry of stage 2 or 3."""
        scales = self.m2_scales if stage == 2 else self.m3_scales
        return float(math.sqrt(np.sum(self.site_weights**2 * scales**2) / len(self.site_samples)))


def _collect_counts(party: Party, config: AGNConfig) -> list[int]:
    return [expect_count(party.recv(site), site) for site in config.sites]


def _expect_whitening(message: Any, config: AGNConfig) -> NDArray[np.float64]:
    return expect_real_array(message, AGGREGATOR, (config.n_features, config.n_components), "the whitening W")


# -- role functions -----------------------------------------------------------------------


def noise_generator_role(party: Party, config: AGNConfig, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Trusted noise generator: zero-sum ``e_s`` for ``M2``, then zero-sum ``E_s`` for ``M3(W, W, W)``."""
    d, k = config.n_features, config.n_components
    counts = _collect_counts(party, config)
    mus = np.asarray(counts, dtype=np.float64) / sum(counts)
    m2_scales = [config.m2_scale(n) for n in counts]
    draws2 = [symmetric_gaussian_noise(d, 1.0, rng) for _ in counts]
    e2 = zero_sum_from_draws(draws2, m2_scales, mus)
    for site, e_s in zip(config.sites, e2, strict=True):
        party.send(site, upper_triangle(e_s))
    whitening = _expect_whitening(party.recv(AGGREGATOR), config)
    m3_scales = [config.m3_scale(n, whitening) for n in counts]
    draws3 = [rng.normal(size=n_unique_entries(k)) for _ in counts]
    e3 = zero_sum_from_draws(draws3, m3_scales, mus)
    for site, e_s in zip(config.sites, e3, strict=True):
        party.send(site, e_s)
    return {"m2": e2, "m3": [unpack_symmetric3(e, k) for e in e3]}


def site_role(
    party: Party, data: NDArray[np.float64], config: AGNConfig, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Site ``s``: the two CAPE releases; returns the released ``(components, weights)``."""
    d, k, s = config.n_features, config.n_components, config.n_parties
    budget = config.budget
    n_s = int(data.shape[0])
    party.send(NOISE_GENERATOR, n_s)
    party.send(AGGREGATOR, n_s)
    e2 = expect_symmetric(party.recv(NOISE_GENERATOR), NOISE_GENERATOR, d)
    f2 = expect_symmetric(party.recv(AGGREGATOR), AGGREGATOR, d)
    g2 = symmetric_gaussian_noise(d, config.m2_scale(n_s) / math.sqrt(s), rng)
    release2 = second_moment(budget.model, data, budget.sigma) + e2 + f2 + g2
    party.send(AGGREGATOR, upper_triangle(release2))
    whitening = _expect_whitening(party.recv(AGGREGATOR), config)
    e3 = expect_symmetric3(party.recv(NOISE_GENERATOR), NOISE_GENERATOR, k)
    f3 = expect_symmetric3(party.recv(AGGREGATOR), AGGREGATOR, k)
    g3 = symmetric_gaussian_tensor(k, config.m3_scale(n_s, whitening) / math.sqrt(s), rng)
    release3 = whitened_third_moment(budget.model, data, whitening, budget.sigma) + e3 + f3 + g3
    party.send(AGGREGATOR, pack_symmetric3(release3))
    components = expect_real_array(party.recv(AGGREGATOR), AGGREGATOR, (k, d), "the components")
    weights = expect_real_array(party.recv(AGGREGATOR), AGGREGATOR, (k,), "the weights")
    return components, weights


def aggregator_role(party: Party, config: AGNConfig, rng: np.random.Generator) -> AGNModel:
    """Untrusted aggregator: remove its masks, combine, whiten, decompose, un-whiten."""
    d, k, s = config.n_features, config.n_components, config.n_parties
    counts = _collect_counts(party, config)
    mus = np.asarray(counts, dtype=np.float64) / sum(counts)
    m2_scales = np.array([config.m2_scale(n) for n in counts])
    masks2 = [symmetric_gaussian_noise(d, tau / math.sqrt(s), rng) for tau in m2_scales]
    for site, f_s in zip(config.sites, masks2, strict=True):
        party.send(site, upper_triangle(f_s))
    releases2 = [expect_symmetric(party.recv(site), site, d) for site in config.sites]
    m2 = sum(mu * (r - f) for mu, r, f in zip(mus, releases2, masks2, strict=True))
    white = whitening_from_second_moment(np.asarray(m2), k)
    for name in (*config.sites, NOISE_GENERATOR):
        party.send(name, white.matrix)
    m3_scales = np.array([config.m3_scale(n, white.matrix) for n in counts])
    masks3 = [symmetric_gaussian_tensor(k, tau / math.sqrt(s), rng) for tau in m3_scales]
    for site, f_s in zip(config.sites, masks3, strict=True):
        party.send(site, pack_symmetric3(f_s))
    releases3 = [expect_symmetric3(party.recv(site), site, k) for site in config.sites]
    m3 = sum(mu * (r - f) for mu, r, f in zip(mus, releases3, masks3, strict=True))
    components, weights, lambdas = decompose_whitened(
        np.asarray(m3), white, config.budget.model, rng, config.power
    )
    for site in config.sites:
        party.send(site, components)
        party.send(site, weights)
    return AGNModel(
        components=components,
        weights=weights,
        whitening=white.matrix,
        tensor_eigenvalues=lambdas,
        second_moment=np.asarray(m2),
        whitened_third_moment=np.asarray(m3),
        site_samples=counts,
        site_weights=mus,
        m2_scales=m2_scales,
        m3_scales=m3_scales,
        whitening_floored=white.floored,
        calibration=config.calibration,
        effective_epsilon=effective_epsilon(config.budget.epsilon, s, config.calibration),
    )


# -- pre-flight ------------------------------------------------------------------------------


def make_agn_config(
    parts: Sequence[ArrayLike],
    n_components: object,
    *,
    model: str,
    epsilon: float,
    delta: float,
    sigma: float | None,
    neighbour: Neighbour | str,
    calibration: str,
    budget_split: float,
    row_norm: str,
    power: PowerMethodOptions,
    noise_calibration: str = "analytic",
) -> tuple[list[NDArray[np.float64]], AGNConfig]:
    """Every pre-flight check of capeAGN; returns the prepared parts and the shared config."""
    kind = check_model(model)
    eps, dlt, relation = check_privacy(epsilon, delta, neighbour)
    mode = check_calibration(calibration)
    split = check_budget_split(budget_split)
    check_release_calibration(noise_calibration, eps, dlt, split)
    scale = check_sigma(kind, sigma)
    arrays, k = prepare_agn_parts(parts, n_components, kind, row_norm)
    d = arrays[0].shape[1]
    budget = AGNBudget(kind, d, scale, eps, dlt, relation, split, noise_calibration)
    return arrays, AGNConfig(len(arrays), d, k, budget, mode, power)
