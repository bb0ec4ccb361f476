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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.linalg import leading_eigenpairs
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.components import (
    ComponentsSettings,
    backend_engine,
    check_reveal,
    check_trace_fits,
    components_error_bounds,
    provider_eigensolve,
    server_eigensolve,
)
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import (
    agree_exponents,
    exponents_of_peaks,
    gram_scale_exponent,
    normalized,
    provider_exponents,
    sums_scale_exponent,
    unscale_gram,
    unscale_vector,
)
from mpc_pca.pppca.standardize import scale_and_error, server_matrix
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party
from protocols.runtime import RunResult, check_timeout, map_parties, run_inprocess
from protocols.triangle import from_upper_triangle

STATS_NAME = "column sums and row count"
GRAM_NAME = "centred Gram matrix X_i^T X_i"


@dataclass(frozen=True)
class PPPCAConfig:
    """What every party agrees on before a PPPCA run."""

    n_parties: int
    n_features: int
    n_components: int
    with_consumer: bool = False
    #: Agreed per-column binary exponents ``E`` (:mod:`mpc_pca.pppca.scaling`); ``None``: all zero.
    column_exponents: tuple[int, ...] | None = None
    #: Eigendecompose the covariance of the standardized rows (:mod:`mpc_pca.pppca.standardize`).
    standardize: bool = False
    #: ``"covariance"`` (the paper) or ``"components"`` (eigensolve on shares,
    #: :mod:`mpc_pca.pppca.components`; no column scaling, no standardization).
    reveal: str = "covariance"
    components: ComponentsSettings = field(default_factory=ComponentsSettings)

    @property
    def providers(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)

    @property
    def exponents(self) -> tuple[int, ...]:
        """The column exponents, zeros when none were agreed."""
        return (0,) * self.n_features if self.column_exponents is None else self.column_exponents


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
    #: Pooled standard deviations the columns were divided by (ones unless standardized).
    scale: NDArray[np.float64] | None = None
    #: ``reveal="components"`` only: the iteration plan and operation counts used.
    secure_eigensolve: dict[str, Any] | None = None

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
            **({} if self.scale is None else {"scale": self.scale.tolist()}),
            **({} if self.secure_eigensolve is None else {"secure_eigensolve": self.secure_eigensolve}),
        }


# -- role functions -------------------------------------------------------------

#: Phases of a run, as parties log them and announce them to their peers.
PHASE_MEAN = "mean secure sum"
PHASE_GRAM = "Gram secure sum"
PHASE_EIGENSOLVE = "eigensolve on shares"
PHASE_PROJECTION = "projection"


def provider_role(
    party: Party,
    data: NDArray[np.float64] | ChunkedPart,
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
    if isinstance(data, ChunkedPart):
        if data.n_features != config.n_features:
            raise InputValidationError(f"{party.name} holds {data!r}, expected {config.n_features} features")
    elif data.ndim != 2 or data.shape[1] != config.n_features:
        raise InputValidationError(
            f"{party.name} holds data of shape {data.shape}, expected (n, {config.n_features})"
        )
    if stats is None:
        stats = data.statistics() if isinstance(data, ChunkedPart) else LocalStatistics.of(data)
    stats = normalized(stats, config.exponents)
    shift = sums_scale_exponent(config.n_parties, backend.codec.frac_bits)
    with party.phase(PHASE_MEAN):
        backend.secure_sum(
            party,
            np.ldexp(stats.sums_and_count(), shift),
            contributors=config.providers,
            receiver=SERVER,
            name=STATS_NAME,
        )
        mean = expect_real_array(party.recv(SERVER), SERVER, (config.n_features,), "the mean")
    if config.reveal == "components":  # shares of the Gram matrix, eigensolve on shares
        with party.phase(PHASE_EIGENSOLVE):
            provider_eigensolve(
                party,
                stats.centred_gram(mean),
                config.providers,
                config.n_components,
                config.components,
                components_gram_bits(backend),
                backend_engine(backend),
            )
            transfer = expect_real_array(
                party.recv(SERVER), SERVER, (config.n_features, config.n_components), "T"
            )
    else:
        with party.phase(PHASE_GRAM):
            gram_shift = _gram_shift(party.recv(SERVER))
            # Only the upper triangle is summed (as protocols.secure_sum.secure_sum_symmetric
            # does), built straight from the packed scatter: no d x d temporary.
            triangle = stats.centred_gram_triangle(mean)
            backend.secure_sum(
                party,
                np.ldexp(triangle, gram_shift, out=triangle),
                contributors=config.providers,
                receiver=SERVER,
                name=GRAM_NAME,
            )
            transfer = expect_real_array(
                party.recv(SERVER), SERVER, (config.n_features, config.n_components), "T"
            )
    if not config.with_consumer:
        return None
    raw_mean = unscale_vector(mean, config.exponents)
    with party.phase(PHASE_PROJECTION):
        projected = (
            data.project(raw_mean, transfer)
            if isinstance(data, ChunkedPart)
            else (data - raw_mean) @ transfer
        )
        party.send(CONSUMER, projected)
    return projected


def server_role(party: Party, config: PPPCAConfig, backend: SecureSumBackend) -> PPPCAModel:
    """Server (Alg. 2 steps 3, 7, 8; Alg. 1 steps 4, 8): reveal mean, eigendecompose."""
    d = config.n_features
    f = backend.codec.frac_bits
    with party.phase(PHASE_MEAN):
        stats = backend.secure_sum(
            party, None, contributors=config.providers, receiver=SERVER, name=STATS_NAME
        )
    if stats.shape != (d + 1,):
        raise ProtocolError(f"the summed {STATS_NAME} have shape {stats.shape}, expected ({d + 1},)")
    stats = np.ldexp(stats, -sums_scale_exponent(config.n_parties, f))
    n_samples = round(float(stats[-1]))
    if abs(float(stats[-1]) - n_samples) > 1e-3:
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not a whole number")
    if n_samples < 2:
        raise ProtocolError(f"the providers hold {n_samples} row(s) in total; PCA needs at least 2")
    mean_y = stats[:d] / n_samples
    if config.reveal == "components":
        for provider in config.providers:
            party.send(provider, mean_y)
        if config.n_components > min(d, n_samples):
            raise ProtocolError(
                f"n_components={config.n_components} exceeds min(n_features={d}, n_samples={n_samples})"
            )
        with party.phase(PHASE_EIGENSOLVE):
            return _server_components(party, config, backend, mean_y, n_samples)
    gram_shift = gram_scale_exponent(config.n_parties, f, n_samples)
    for provider in config.providers:
        party.send(provider, mean_y)
        party.send(provider, np.array([float(gram_shift)]))
    with party.phase(PHASE_GRAM):
        packed = backend.secure_sum(
            party, None, contributors=config.providers, receiver=SERVER, name=GRAM_NAME
        )
    if packed is None or packed.shape != (d * (d + 1) // 2,):
        raise ProtocolError(
            f"the summed Gram triangle has shape {getattr(packed, 'shape', None)}, "
            f"expected ({d * (d + 1) // 2},) for d={d}"
        )
    gram = from_upper_triangle(np.ldexp(packed, -gram_shift, out=packed), d)
    del packed
    gram = unscale_gram(gram, config.exponents)
    server = server_matrix(
        gram, n_samples, gram_entry_error(config, f, n_samples), config.standardize, overwrite=True
    )
    try:
        check_precision(server.eta, float(np.max(np.diag(server.matrix))), config)
    except InputValidationError as exc:
        raise ProtocolError(str(exc)) from exc
    if config.n_components > min(d, n_samples):
        raise ProtocolError(
            f"n_components={config.n_components} exceeds min(n_features={d}, n_samples={n_samples})"
        )
    del gram
    # Only the top k + 1 eigenpairs (the (k+1)-th eigenvalue bounds the last gap);
    # the total variance is the trace. LAPACK overwrites the server's matrix.
    values, components, leading, total_variance = leading_eigenpairs(
        server.matrix, config.n_components, overwrite=True
    )
    # Providers project centred raw rows: with standardization T_eff = diag(1/sigma) T.
    transfer = np.ascontiguousarray(components.T / server.scale[:, None])
    for provider in config.providers:
        party.send(provider, transfer)
    bounds = rounding_error_bounds(leading, config.n_components, server.eta)
    mean = unscale_vector(mean_y, config.exponents)
    scale = server.scale if config.standardize else None
    return PPPCAModel(
        mean, n_samples, components, values, max(total_variance, 0.0), server.eta, bounds, scale
    )


def _server_components(
    party: Party, config: PPPCAConfig, backend: SecureSumBackend, mean: NDArray[np.float64], n_samples: int
) -> PPPCAModel:
    """Step 8 on shares: the server deals, and receives only the top-k eigenpairs and the trace.

    The rows are not column-scaled in this mode (``config.column_exponents`` is
    ``None``), so ``mean`` is already in the data's units.
    """
    f_gram = components_gram_bits(backend)
    engine = backend_engine(backend)
    result = server_eigensolve(
        party, config.providers, config.n_features, config.n_components, config.components, f_gram, engine
    )
    components = result.components
    values = result.eigenvalues / (n_samples - 1)
    transfer = np.ascontiguousarray(components.T)
    for provider in config.providers:
        party.send(provider, transfer)
    eta, bounds = components_error_bounds(result, n_samples, config.n_parties, f_gram, config.components)
    solve = {**result.plan.as_dict(), "reveal": "components", "dealer": SERVER, "engine": engine}
    return PPPCAModel(
        mean, n_samples, components, values, result.trace / (n_samples - 1), eta, bounds, None, solve
    )


def _gram_shift(message: object) -> int:
    """Check the server's Gram scale exponent ``B`` (an integer in a sane range)."""
    value = expect_real_array(message, SERVER, (1,), "the Gram scale exponent")
    shift = float(value[0])
    if shift != round(shift) or abs(shift) > 4096:
        raise ProtocolError(f"the server sent Gram scale exponent {shift!r}; expected an integer")
    return int(shift)


def components_gram_bits(backend: SecureSumBackend) -> int:
    """Fractional bits of the Gram shares with ``reveal="components"``.

    The backend's own with the native engine. With the CrypTen engine the Gram
    matrix is shared by :func:`protocols.tensor.share_sum` in Z_2^64 (not by the
    crypten secure-sum backend), with at least the project's default 20 bits:
    CrypTen's 16 would leave fewer than 20 significant bits of the unscaled
    covariance of e.g. standardized wine (this mode has no column scaling).
    """
    f = backend.codec.frac_bits
    if backend_engine(backend) == "crypten":
        return max(f, FixedPointCodec().frac_bits)
    return f


def gram_shift_of(config: PPPCAConfig, frac_bits: int, n_samples: int) -> int:
    """``B`` of the run: 0 with ``reveal="components"`` (the eigensolver's own scaling), else as agreed."""
    if config.reveal == "components":
        return 0
    return gram_scale_exponent(config.n_parties, frac_bits, n_samples)


def gram_entry_error(config: PPPCAConfig, frac_bits: int, n_samples: int) -> NDArray[np.float64]:
    """``u`` with ``|rounding error of G_jk| <= u_j u_k`` in the data's units.

    The ring sum of M encodings is off by at most ``M 2^-(f+1)`` per entry; the
    scaling by ``2^B`` and ``diag(2^E)`` (:mod:`mpc_pca.pppca.scaling`) turns
    that into ``M 2^-(f+1) 2^-B 2^(E_j + E_k)``.
    """
    shift = gram_shift_of(config, frac_bits, n_samples)
    base = np.sqrt(config.n_parties * 2.0 ** -(frac_bits + 1 + shift))
    return base * np.ldexp(1.0, np.asarray(config.exponents, dtype=np.int64))


def rounding_error_bounds(eigenvalues: NDArray[np.float64], k: int, eta: float) -> NDArray[np.float64]:
    """How far fixed-point rounding can move the top-k eigenvectors.

    ``eta`` bounds the spectral norm of the error ``E`` of the server's matrix
    (:func:`mpc_pca.pppca.standardize.server_matrix`; with no scaling and no
    standardization it is ``d M 2^-(f+1) / (N - 1)``).
    Eigenvalues move by at most ``eta`` (Weyl); eigenvector ``i`` turns by
    ``sin(theta_i) <= 2 eta / gap_i`` (Davis-Kahan, Yu-Wang-Samworth form) with
    ``gap_i`` its distance to the nearest other eigenvalue, so after sign
    alignment its entries differ by at most ``sqrt(2) sin(theta_i)``.

    ``eigenvalues`` (decreasing) may be only the ``k + 1`` largest: the nearest
    neighbour of each of the top ``k`` is among them.
    """
    bounds = np.empty(k)
    for i in range(k):
        others = np.delete(eigenvalues, i)
        gap = float(np.min(np.abs(others - eigenvalues[i]))) if others.size else np.inf
        bounds[i] = min(np.sqrt(2.0), np.sqrt(2.0) * 2 * eta / gap) if gap > 0 else np.sqrt(2.0)
    return bounds


def consumer_role(party: Party, config: PPPCAConfig) -> NDArray[np.float64]:
    """Data consumer (steps 10): stack the providers' projected rows in provider order."""
    blocks = []
    with party.phase(PHASE_PROJECTION):
        for provider in config.providers:
            blocks.append(
                expect_real_array(party.recv(provider), provider, (None, config.n_components), "X_i T")
            )
    return np.vstack(blocks)


# -- validation before the run ----------------------------------------------------


def check_ring_range(
    stats: Sequence[LocalStatistics], backend: SecureSumBackend, config: PPPCAConfig
) -> None:
    """Check, before anything is sent, that no provider's payload can overflow the ring.

    ``stats`` are the providers' statistics of the normalized rows ``Y``
    (:func:`mpc_pca.pppca.scaling.normalized`). The first payload
    ``2^A [s_i, n_i]`` is checked exactly. For the centred Gram matrix,
    ``|G_jk| <= max_j G_jj`` (Cauchy-Schwarz), so its diagonal, which each
    provider gets from its local statistics in O(d), bounds every entry.
    """
    m = len(stats)
    f = backend.codec.frac_bits
    n_samples = sum(s.n_rows for s in stats)
    mean = sum(s.column_sums for s in stats) / n_samples
    shift = sums_scale_exponent(m, f)
    gram_shift = gram_shift_of(config, f, n_samples)
    for i, st in enumerate(stats):
        backend.check_input(np.ldexp(st.sums_and_count(), shift), m, f"{STATS_NAME} of provider{i}")
        backend.check_input(
            np.ldexp(st.centred_gram_diagonal(mean), gram_shift), m, f"{GRAM_NAME} (diagonal) of provider{i}"
        )


#: Significant bits the server's matrix must keep after fixed-point rounding.
MIN_SIGNIFICANT_BITS = 20


def check_precision(eta: float, largest_diagonal: float, config: PPPCAConfig) -> None:
    """Refuse data whose covariance fixed-point rounding would swamp.

    ``eta`` bounds the spectral norm of the rounding error of the server's
    matrix (:func:`mpc_pca.pppca.standardize.server_matrix`); it must stay
    below ``2^-MIN_SIGNIFICANT_BITS`` (about 1e-6) of the matrix's largest
    diagonal entry. With the per-column scaling of :mod:`mpc_pca.pppca.scaling`
    this fails only when a column's offset dwarfs its spread (e.g. values
    ``1e12 + noise``: the scale is set by the largest magnitude, the
    covariance by the spread); subtracting a rough per-column offset from every
    row first (any constant: components and variances do not change) fixes it.
    """
    if largest_diagonal > 0 and eta <= 2.0**-MIN_SIGNIFICANT_BITS * largest_diagonal:
        return
    if largest_diagonal <= 0:
        raise InputValidationError(
            "every column is constant over the pooled rows; there is no variance to analyse"
        )
    raise InputValidationError(
        f"the fixed-point rounding error bound {eta:.3g} of the {config.n_features}x{config.n_features} "
        f"covariance is not below 2^-{MIN_SIGNIFICANT_BITS} of its largest diagonal entry "
        f"{largest_diagonal:.3g}: fewer than {MIN_SIGNIFICANT_BITS} significant bits would be left. "
        "The columns' offsets dwarf their spread; subtract a rough per-column offset (e.g. a typical "
        "value of each column) from every row before the run: components and variances are unchanged"
    )


def preflight(
    parts: Sequence[ArrayLike],
    n_components: int | None,
    backend: SecureSumBackend,
    *,
    standardize: bool = False,
    reveal: str = "covariance",
) -> tuple[list[NDArray[np.float64]], list[LocalStatistics], int, tuple[int, ...]]:
    """Every check a PPPCA run makes before any party sends anything.

    Validates the parts and ``n_components``, computes each provider's local
    statistics (side by side), agrees the column exponents
    (:mod:`mpc_pca.pppca.scaling`), and checks that every payload is finite,
    fits the ring for the number of providers, and keeps enough precision.
    With ``reveal="components"`` the columns are not scaled (all exponents 0),
    standardization is refused (it needs the Gram diagonal, which that mode
    keeps secret) and the pooled Gram matrix's trace must fit the secure
    eigensolver's scaling step.

    Returns
    -------
    arrays : list of ndarray
        The parts as float64 arrays.
    stats : list of LocalStatistics
        Each provider's statistics (of its raw rows), in part order.
    k : int
        The number of components.
    exponents : tuple of int
        The agreed column exponents ``E``.
    """
    reveal = check_reveal(reveal)
    if reveal == "components" and standardize:
        raise InputValidationError(
            "standardize=True needs the pooled variances (the Gram diagonal), which reveal='components' "
            "keeps secret; use reveal='covariance' or standardize before the run"
        )
    if isinstance(parts, Sequence) and any(isinstance(p, ChunkedPart) for p in parts):
        arrays, stats = _chunked_preflight(parts)
    else:
        arrays = check_parts(parts, check_values=False)
        n_rows = sum(a.shape[0] for a in arrays)
        # Each provider's local step, side by side (inline when it is only microseconds of numpy).
        stats = map_parties(LocalStatistics.of, arrays, work=float(n_rows) * arrays[0].shape[1] ** 2)
        for i, (part, st) in enumerate(zip(arrays, stats, strict=True)):
            check_statistics_finite(part, (st.column_sums, st.scatter_triangle), i)
    n_samples = sum(st.n_rows for st in stats)
    d = stats[0].n_features
    k = check_n_components(n_components, d, n_samples)
    if reveal == "components":
        exponents: tuple[int, ...] = (0,) * d
    else:
        exponents = agree_exponents([part_exponents(a).tolist() for a in arrays])
    config = PPPCAConfig(len(arrays), d, k, False, exponents, standardize, reveal)
    scaled = [normalized(st, exponents) for st in stats]
    check_ring_range(scaled, backend, config)
    mean = sum(st.column_sums for st in scaled) / n_samples
    # The diagonal of the pooled Gram matrix is all the checks need (no d x d matrix here).
    diagonal = np.ldexp(
        sum(st.centred_gram_diagonal(mean) for st in scaled), 2 * np.asarray(exponents, dtype=np.int64)
    )
    f = components_gram_bits(backend) if reveal == "components" else backend.codec.frac_bits
    scale, eta = scale_and_error(diagonal, n_samples, gram_entry_error(config, f, n_samples), standardize)
    check_precision(eta, float(np.max(diagonal / scale**2)) / (n_samples - 1), config)
    if reveal == "components":
        check_trace_fits(float(np.sum(diagonal)), f)
    return arrays, stats, k, exponents


def part_exponents(part: NDArray[np.float64] | ChunkedPart) -> NDArray[np.int64]:
    """A provider's column exponents (:mod:`mpc_pca.pppca.scaling`); a chunked part reads its peaks."""
    if isinstance(part, ChunkedPart):
        return exponents_of_peaks(part.column_peaks())
    return provider_exponents(part)


def _chunked_preflight(parts: Sequence[Any]) -> tuple[list[Any], list[LocalStatistics]]:
    """Statistics of parts some of which are chunked (read one part after the other)."""
    out: list[Any] = []
    stats: list[LocalStatistics] = []
    for i, part in enumerate(parts):
        if isinstance(part, ChunkedPart):
            out.append(part)
            stats.append(part.statistics())
        else:
            (array,) = check_parts([part], min_total_rows=1, check_values=False)
            st = LocalStatistics.of(array)
            check_statistics_finite(array, (st.column_sums, st.scatter_triangle), i)
            out.append(array)
            stats.append(st)
    widths = {st.n_features for st in stats}
    if len(widths) != 1:
        raise InputValidationError(
            f"the parts have different feature counts: {[st.n_features for st in stats]}"
        )
    if sum(st.n_rows for st in stats) < 2:
        raise InputValidationError("the parts hold fewer than 2 rows in total; PCA needs at least 2")
    return out, stats


def run_pppca(
    parts: Sequence[ArrayLike],
    n_components: int | None,
    backend: SecureSumBackend,
    *,
    with_consumer: bool = False,
    timeout: float = 120.0,
    standardize: bool = False,
    reveal: str = "covariance",
    components: ComponentsSettings | None = None,
) -> tuple[PPPCAModel, NDArray[np.float64] | None, RunResult]:
    """Validate the inputs, then run PPPCA in-process with one thread per party.

    Every provider's local statistics are computed and every payload is
    range-checked before any party sends anything. ``reveal="components"``
    keeps the covariance secret-shared (see :mod:`mpc_pca.pppca.components`);
    ``components`` holds that mode's public settings.

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
    arrays, stats, k, exponents = preflight(
        parts, n_components, backend, standardize=standardize, reveal=reveal
    )
    settings = ComponentsSettings() if components is None else components
    d = stats[0].n_features
    if reveal == "components" and getattr(backend, "needs_processes", False):
        raise InputValidationError(
            "reveal='components' with backend='crypten' runs the CrypTen tensor engine, whose parties must be "
            "processes over torch.distributed; it cannot run in-process. Use `mpc-pca run --reveal components "
            "--backend crypten --transport processes --insecure` (alias --transport torch) or "
            "mpc_pca.deploy.launch_local('pppca-ss', parts, {'reveal': 'components', 'backend': 'crypten'}, "
            "insecure=True), "
            "or backend='additive' for the in-process engine"
        )
    if reveal == "components":
        settings.plan(d, k)  # validates the settings before anything is sent
    config = PPPCAConfig(len(arrays), d, k, with_consumer, exponents, standardize, reveal, settings)
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
