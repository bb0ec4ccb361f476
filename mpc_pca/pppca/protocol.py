"""PPPCA: privacy-preserving PCA for horizontally partitioned data.

Liu et al., "Privacy Preserving PCA for Multiparty Modeling", AAAI 2020.
Algorithm 2 (secret sharing) and Algorithm 1 (homomorphic encryption) share one
flow; only the secure-sum backend differs, so both are the role functions
below run with a different :class:`~protocols.backends.base.SecureSumBackend`.

Roles and messages (M providers, a server, a data consumer):

1. providers -> server, secure sum of ``[column sums, row count]`` (Alg. 2
   steps 1-3; Alg. 1 steps 2-4). The server learns the pooled mean and N.
2. server -> providers: the mean (step 3/4). Providers centre locally (step 4/5).
3. providers -> server, secure sum of the centred Gram matrix
   ``X_i^T X_i`` (steps 5-7/6-8). Only its upper triangle is summed.
4. server: ``C = sum / (N - 1)``, eigendecomposition, ``T`` = top-k
   eigenvectors, sent to providers (step 8).
5. optional: providers -> consumer, ``X_i T`` (steps 9-10).

Deviation from the paper, same result: the paper scales each
``X_i^T X_i`` by ``1/(n-1)`` before sharing; here the server divides the
reconstructed sum, which keeps ``log2(N)`` more bits of the fixed-point
resolution for the same ring.

Trust model: honest-but-curious parties; the server does not collude with any
provider. The server learns the mean, N and the covariance matrix; providers
learn the mean, N and T; the consumer learns the projected rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.linalg import top_eigenpairs
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import SecureSumBackend
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party
from protocols.runtime import RunResult, check_timeout, map_parties, run_inprocess
from protocols.secure_sum import secure_sum_symmetric

STATS_NAME = "column sums and row count"
GRAM_NAME = "centred Gram matrix X_i^T X_i"


@dataclass(frozen=True)
class PPPCAConfig:
    """What every party agrees on before a PPPCA run."""

    n_parties: int
    n_features: int
    n_components: int
    with_consumer: bool = False

    @property
    def providers(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)


@dataclass
class PPPCAModel:
    """What the server computes in step 8."""

    mean: NDArray[np.float64]
    n_samples: int
    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    total_variance: float
    variance_error_bound: float
    component_error_bounds: NDArray[np.float64]

    @property
    def explained_variance_ratio(self) -> NDArray[np.float64]:
        """Share of the total variance each kept component explains."""
        if self.total_variance <= 0:
            return np.zeros_like(self.explained_variance)
        return self.explained_variance / self.total_variance

    def result_fields(self) -> dict[str, Any]:
        """The JSON fields ``mpc-pca run`` writes for this model."""
        return {
            "components": self.components.tolist(),
            "explained_variance": self.explained_variance.tolist(),
            "explained_variance_ratio": self.explained_variance_ratio.tolist(),
            "mean": self.mean.tolist(),
            "n_samples": self.n_samples,
            "variance_error_bound": self.variance_error_bound,
            "component_error_bounds": self.component_error_bounds.tolist(),
        }


# -- role functions -------------------------------------------------------------

#: Phases of a run, as parties log them and announce them to their peers.
PHASE_MEAN = "mean secure sum"
PHASE_GRAM = "Gram secure sum"
PHASE_PROJECTION = "projection"


def provider_role(
    party: Party,
    data: NDArray[np.float64],
    config: PPPCAConfig,
    backend: SecureSumBackend,
    stats: LocalStatistics | None = None,
) -> NDArray[np.float64] | None:
    """Data provider (Alg. 2 steps 1, 2, 4, 5, 6, 9; Alg. 1 steps 2, 5, 6, 9).

    Parameters
    ----------
    party : Party
    data : ndarray of shape (n_i, d)
        This provider's rows; they never leave the provider.
    config : PPPCAConfig
    backend : SecureSumBackend
    stats : LocalStatistics, optional
        Precomputed statistics of ``data`` (the estimator computes them during
        its pre-flight checks); computed here when omitted.

    Returns
    -------
    ndarray or None
        This provider's projected rows ``(X_i - mean) T`` (also sent to the
        consumer) when a consumer takes part, else ``None``.
    """
    if data.ndim != 2 or data.shape[1] != config.n_features:
        raise InputValidationError(
            f"{party.name} holds data of shape {data.shape}, expected (n, {config.n_features})"
        )
    stats = LocalStatistics.of(data) if stats is None else stats
    with party.phase(PHASE_MEAN):
        backend.secure_sum(
            party, stats.sums_and_count(), contributors=config.providers, receiver=SERVER, name=STATS_NAME
        )
        mean = expect_real_array(party.recv(SERVER), SERVER, (config.n_features,), "the mean")
    with party.phase(PHASE_GRAM):
        secure_sum_symmetric(
            party,
            stats.centred_gram(mean),
            contributors=config.providers,
            receiver=SERVER,
            backend=backend,
            name=GRAM_NAME,
        )
        transfer = expect_real_array(party.recv(SERVER), SERVER, (config.n_features, config.n_components), "T")
    if not config.with_consumer:
        return None
    with party.phase(PHASE_PROJECTION):
        projected = (data - mean) @ transfer
        party.send(CONSUMER, projected)
    return projected


def server_role(party: Party, config: PPPCAConfig, backend: SecureSumBackend) -> PPPCAModel:
    """Server (Alg. 2 steps 3, 7, 8; Alg. 1 steps 4, 8): reveal mean, eigendecompose."""
    d = config.n_features
    with party.phase(PHASE_MEAN):
        stats = backend.secure_sum(party, None, contributors=config.providers, receiver=SERVER, name=STATS_NAME)
    if stats.shape != (d + 1,):
        raise ProtocolError(f"the summed {STATS_NAME} have shape {stats.shape}, expected ({d + 1},)")
    n_samples = round(float(stats[-1]))
    if abs(float(stats[-1]) - n_samples) > 1e-3:
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not a whole number")
    if n_samples < 2:
        raise ProtocolError(f"the providers hold {n_samples} row(s) in total; PCA needs at least 2")
    mean = stats[:d] / n_samples
    for provider in config.providers:
        party.send(provider, mean)
    with party.phase(PHASE_GRAM):
        gram = secure_sum_symmetric(
            party, None, contributors=config.providers, receiver=SERVER, backend=backend, name=GRAM_NAME
        )
    if gram.shape != (d, d):
        raise ProtocolError(f"the summed Gram matrix has shape {gram.shape}, expected {(d, d)}")
    try:
        check_precision(float(np.max(np.diag(gram))), config.n_parties, backend)
    except InputValidationError as exc:
        raise ProtocolError(str(exc)) from exc
    covariance = gram / (n_samples - 1)
    if config.n_components > min(d, n_samples):
        raise ProtocolError(
            f"n_components={config.n_components} exceeds min(n_features={d}, n_samples={n_samples})"
        )
    values, components, all_values = top_eigenpairs(covariance, config.n_components)
    transfer = np.ascontiguousarray(components.T)
    for provider in config.providers:
        party.send(provider, transfer)
    eta, bounds = rounding_error_bounds(all_values, config.n_components, config.n_parties, n_samples, backend)
    return PPPCAModel(mean, n_samples, components, values, float(all_values.sum()), eta, bounds)


def rounding_error_bounds(
    eigenvalues: NDArray[np.float64], k: int, n_parties: int, n_samples: int, backend: SecureSumBackend
) -> tuple[float, NDArray[np.float64]]:
    """How far fixed-point rounding can move the eigenvalues and the top-k eigenvectors.

    Every entry of the summed Gram matrix is off by at most ``M 2^-(f+1)``, so
    the covariance error ``E`` has spectral norm ``eta <= d M 2^-(f+1) / (N - 1)``.
    Eigenvalues move by at most ``eta`` (Weyl); eigenvector ``i`` turns by
    ``sin(theta_i) <= 2 eta / gap_i`` (Davis-Kahan, Yu-Wang-Samworth form) with
    ``gap_i`` its distance to the nearest other eigenvalue, so after sign
    alignment its entries differ by at most ``sqrt(2) sin(theta_i)``.
    """
    d = eigenvalues.shape[0]
    eta = d * n_parties * backend.codec.resolution / 2 / (n_samples - 1)
    bounds = np.empty(k)
    for i in range(k):
        others = np.delete(eigenvalues, i)
        gap = float(np.min(np.abs(others - eigenvalues[i]))) if others.size else np.inf
        bounds[i] = min(np.sqrt(2.0), np.sqrt(2.0) * 2 * eta / gap) if gap > 0 else np.sqrt(2.0)
    return eta, bounds


def consumer_role(party: Party, config: PPPCAConfig) -> NDArray[np.float64]:
    """Data consumer (steps 10): stack the providers' projected rows in provider order."""
    blocks = []
    with party.phase(PHASE_PROJECTION):
        for provider in config.providers:
            blocks.append(expect_real_array(party.recv(provider), provider, (None, config.n_components), "X_i T"))
    return np.vstack(blocks)


# -- validation before the run ----------------------------------------------------


def check_ring_range(stats: Sequence[LocalStatistics], backend: SecureSumBackend) -> None:
    """Check, before anything is sent, that no provider's payload can overflow the ring.

    The first payload ``[s_i, n_i]`` is checked exactly. For the centred Gram
    matrix, ``|G_jk| <= max_j G_jj`` (Cauchy-Schwarz), so its diagonal, which
    each provider gets from its local statistics in O(d), bounds every entry.
    """
    m = len(stats)
    n_samples = sum(s.n_rows for s in stats)
    mean = sum(s.column_sums for s in stats) / n_samples
    for i, st in enumerate(stats):
        backend.check_input(st.sums_and_count(), m, f"{STATS_NAME} of provider{i}")
        backend.check_input(st.centred_gram_diagonal(mean), m, f"{GRAM_NAME} (diagonal) of provider{i}")


#: Significant bits the pooled Gram matrix must keep after fixed-point rounding.
MIN_SIGNIFICANT_BITS = 20


def check_precision(largest_variance_sum: float, n_parties: int, backend: SecureSumBackend) -> None:
    """Refuse data so small that fixed-point rounding would swamp the covariance.

    Each Gram entry of the pooled sum carries a rounding error of at most
    ``M 2^-(f+1)``; relative to the largest diagonal entry ``G_max`` of the
    pooled centred Gram matrix this must stay below ``2^-MIN_SIGNIFICANT_BITS``
    (about 1e-6), i.e. ``G_max >= M 2^(MIN_SIGNIFICANT_BITS - 1 - f)``.
    PCA is scale-equivariant, so rescaling the data (or more fractional bits)
    fixes it.
    """
    f = backend.codec.frac_bits
    needed = n_parties * 2.0 ** (MIN_SIGNIFICANT_BITS - 1 - f)
    if largest_variance_sum >= needed:
        return
    suggestion = f + int(np.ceil(np.log2(needed / max(largest_variance_sum, np.finfo(float).tiny))))
    raise InputValidationError(
        f"the pooled centred Gram matrix has largest diagonal entry {largest_variance_sum:.3g}, below "
        f"{needed:.3g}: with {f} fractional bits and {n_parties} parties the fixed-point rounding would "
        f"leave fewer than {MIN_SIGNIFICANT_BITS} significant bits. Multiply the data by a constant "
        f"(components are unchanged) or use about {suggestion} fractional bits if the ring range allows"
    )


def preflight(
    parts: Sequence[ArrayLike], n_components: int | None, backend: SecureSumBackend
) -> tuple[list[NDArray[np.float64]], list[LocalStatistics], int]:
    """Every check a PPPCA run makes before any party sends anything.

    Validates the parts and ``n_components``, computes each provider's local
    statistics (side by side), and checks that every payload is finite, fits
    the ring for the number of providers, and keeps enough precision.

    Returns
    -------
    arrays : list of ndarray
        The parts as float64 arrays.
    stats : list of LocalStatistics
        Each provider's statistics, in part order.
    k : int
        The number of components.
    """
    arrays = check_parts(parts, check_values=False)
    n_samples = sum(a.shape[0] for a in arrays)
    k = check_n_components(n_components, arrays[0].shape[1], n_samples)
    stats = map_parties(LocalStatistics.of, arrays)  # each provider's local step, side by side
    for i, (part, st) in enumerate(zip(arrays, stats, strict=True)):
        check_statistics_finite(part, (st.column_sums, st.scatter), i)
    check_ring_range(stats, backend)
    mean = sum(st.column_sums for st in stats) / n_samples
    check_precision(float(np.max(sum(st.centred_gram_diagonal(mean) for st in stats))), len(stats), backend)
    return arrays, stats, k


def run_pppca(
    parts: Sequence[ArrayLike],
    n_components: int | None,
    backend: SecureSumBackend,
    *,
    with_consumer: bool = False,
    timeout: float = 120.0,
) -> tuple[PPPCAModel, NDArray[np.float64] | None, RunResult]:
    """Validate the inputs, then run PPPCA in-process with one thread per party.

    Every provider's local statistics are computed and every payload is
    range-checked before any party sends anything.

    Returns
    -------
    model : PPPCAModel
        The server's output.
    projection : ndarray or None
        The consumer's stacked ``X T`` if ``with_consumer``.
    run : RunResult
        Outputs and per-party traffic reports.
    """
    check_timeout(timeout)
    arrays, stats, k = preflight(parts, n_components, backend)
    config = PPPCAConfig(len(arrays), arrays[0].shape[1], k, with_consumer)
    roles: dict[str, Any] = {
        name: (lambda party, data=data, st=st: provider_role(party, data, config, backend, st))
        for name, data, st in zip(config.providers, arrays, stats, strict=True)
    }
    roles[SERVER] = lambda party: server_role(party, config, backend)
    if with_consumer:
        roles[CONSUMER] = lambda party: consumer_role(party, config)
    run = run_inprocess(roles, timeout=timeout)
    projection = run.outputs.get(CONSUMER)
    return run.outputs[SERVER], projection, run
