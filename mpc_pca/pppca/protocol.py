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
   eigenvectors, sent to providers (step 8) with the eigenvalues, N, the
   total variance and the column scales.
4b. (not in the paper) the providers check that answer before using it
   (:mod:`mpc_pca.pppca.answer_check`): orthonormality, one answer (and mean)
   for all, a plausible top spectrum, one secure sum among the providers of
   ``(C T - T Λ) r`` (and ``N``, the trace, the mean) that opens to zero, and,
   with ``reveal="covariance"`` only, power steps showing the eigenpairs are
   the top ``k``.
5. optional: providers -> consumer, ``X_i T`` (steps 9-10), in chunks of
   :func:`projection_chunk_rows` rows (at most :data:`PROJECTION_CHUNK_BYTES`
   each, whatever ``n_i``), the last one shorter (possibly empty).

Between organisations (:mod:`mpc_pca.pppca.deployment`) the providers also
announce their row counts (``PPPCAConfig.announced_rows``); the server checks
that they add up to the ``N`` of step 1 before it sends anything, and the
consumer accepts exactly ``n_i`` projected rows from provider ``i``.

Deviation from the paper, same result: the paper scales each
``X_i^T X_i`` by ``1/(n-1)`` before sharing; here the server divides the
reconstructed sum, which keeps ``log2(N)`` more bits of the fixed-point
resolution for the same ring.

Dropout tolerance (opt-in, ``PPPCAConfig.dropout_threshold``, ``additive-masks``
backend): steps 1 and 3 are merged into one dropout-tolerant secure sum
(:mod:`protocols.backends.dropout`) of ``[s_i, n_i, X_i^T X_i]``
(:mod:`mpc_pca.pppca.dropout_payload`; the server centres), so a provider
that drops at any time before that masked input counts is left out of
everything (no second sum whose difference with the first would reveal it);
the server tells the consumer whom it dropped, and every later step runs over
the survivors (a drop there ends the run, as without the option).

Trust model: honest-but-curious parties; the server does not collude with any
provider. The server learns the mean, N and the covariance matrix; providers
learn the mean, N, T, the top-k eigenvalues, the total variance and (when
standardizing) the column scales; the consumer learns the projected rows. A
server that sends a wrong answer is caught by step 4b. When the
server chooses ``k`` (``PPPCAConfig.select``: a variance fraction or
``"mle"``) it uses every eigenvalue of that covariance, nothing new; the
providers and the consumer learn ``k`` from the width of ``T`` and ``X_i T``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.linalg import leading_eigenpairs, selected_eigenpairs
from mpc_pca.pppca import dropout_payload
from mpc_pca.pppca.answer_check import PHASE_CHECK, ServerAnswer, check_server_answer
from mpc_pca.pppca.bounds import (
    GRAM_NAME,
    STATS_NAME,
    check_precision,
    components_gram_bits,
    gram_entry_error,
    rounding_error_bounds,
)
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.components import (
    ComponentsSettings,
    backend_engine,
    check_assumed_gap,
    components_error_bounds,
    hides_covariance,
    provider_eigensolve,
    server_eigensolve,
)
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import (
    gram_scale_exponent,
    normalized,
    sums_scale_exponent,
    unscale_gram,
    unscale_vector,
)
from mpc_pca.pppca.standardize import server_matrix
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.sparse_rows import centred_product
from protocols.backends import AdditiveBackend, SecureSumBackend
from protocols.backends.dropout import last_outcome
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party
from protocols.triangle import from_upper_triangle


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
    #: The row count each provider announced, in provider order (``None``: nothing announced,
    #: the in-process run). The server checks their sum against the secure sum's ``N``.
    announced_rows: tuple[int, ...] | None = None
    #: ``reveal="covariance"`` only: the server chooses ``k`` from the whole spectrum, by a
    #: variance fraction in (0, 1) or ``"mle"`` (:func:`mpc_pca.linalg.selected_eigenpairs`);
    #: ``n_components`` is then the largest ``k`` allowed, and the providers learn ``k`` from T.
    select: float | str | None = None
    #: Survive providers that drop (:mod:`protocols.backends.dropout`): the threshold ``t``
    #: (``2 t > M``) of the one dropout-tolerant sum's Shamir-shared mask seeds
    #: (:mod:`mpc_pca.pppca.dropout_payload`); ``None``: every provider must deliver.
    dropout_threshold: int | None = None
    #: Seconds the server waits for the providers' masked inputs (default: half its phase deadline).
    dropout_timeout: float | None = None
    #: The providers dropped in the dropout-tolerant sum (set by every party once it learns them).
    dropped: tuple[str, ...] = ()

    @property
    def transfer_width(self) -> int | None:
        """Columns of the ``T`` the providers expect; ``None`` when the server chooses ``k``."""
        return self.n_components if self.select is None else None

    @property
    def providers(self) -> tuple[str, ...]:
        """The providers that take part (every one, minus those dropped in the mean secure sum)."""
        return tuple(p for p in provider_names(self.n_parties) if p not in self.dropped)

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
    #: With dropout tolerance: the providers whose rows are not in the model (``None``: not enabled).
    dropped_providers: tuple[str, ...] | None = None

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
            **({} if self.dropped_providers is None else {"dropped_providers": list(self.dropped_providers)}),
        }


# -- role functions -------------------------------------------------------------

#: Phases of a run, as parties log them and announce them to their peers.
PHASE_MEAN = "mean secure sum"
PHASE_GRAM = "Gram secure sum"
PHASE_EIGENSOLVE = "eigensolve on shares"
PHASE_PROJECTION = "projection"

#: Most bytes of one chunk of a provider's projected rows ``X_i T`` (for ``k`` up to
#: ``PROJECTION_CHUNK_BYTES / 8``; a chunk holds at least one row).
PROJECTION_CHUNK_BYTES = 16 << 20


def projection_chunk_rows(n_components: int) -> int:
    """Rows of ``X_i T`` per chunk: as many ``k``-float rows as fit :data:`PROJECTION_CHUNK_BYTES`, at least 1."""
    return max(1, PROJECTION_CHUNK_BYTES // (8 * int(n_components)))


def check_announced_rows(config: PPPCAConfig, n_samples: int) -> None:
    """Refuse a run whose providers' announced row counts do not add up to the secure sum's ``N``.

    Raises
    ------
    ProtocolError
        Naming every provider's announced count, their sum and ``N``.
    """
    if config.announced_rows is None:
        return
    every = dict(zip(provider_names(config.n_parties), config.announced_rows, strict=True))
    announced = {p: n for p, n in every.items() if p not in config.dropped}  # rows over the survivors
    if sum(announced.values()) != n_samples:
        dropped = f" (dropped: {list(config.dropped)})" if config.dropped else ""
        raise ProtocolError(
            f"the providers announced {sum(announced.values())} rows in total ({announced}{dropped}), but the "
            f"secure sum of their row counts is N={n_samples}: a provider announced a row count that is "
            "not the one it summed; refusing the run"
        )


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
    data : ndarray of shape (n_i, d) or ChunkedPart
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
        consumer) when a consumer takes part and ``data`` is an array, else
        ``None`` (a :class:`~mpc_pca.pppca.chunked.ChunkedPart`'s projection is
        sent chunk by chunk and never held whole).
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
    tolerant = (
        config.dropout_threshold is not None
    )  # one masked input: sums, count and Gram (dropout_payload)
    with party.phase(PHASE_MEAN):
        mean_backend(backend, config).secure_sum(
            party,
            dropout_payload.payload(stats, config.n_parties, backend.codec.frac_bits)
            if tolerant
            else np.ldexp(stats.sums_and_count(), shift),
            contributors=config.providers,
            receiver=SERVER,
            name=STATS_NAME,
        )
        if config.dropout_threshold is not None:
            outcome = last_outcome(party)
            if outcome is None or outcome.me_dropped:
                return None  # the server did not count this provider: it takes no further part
            config = replace(config, dropped=outcome.dropped)
        mean = expect_real_array(party.recv(SERVER), SERVER, (config.n_features,), "the mean")
    if hides_covariance(config.reveal):  # shares of the Gram matrix, eigensolve on shares
        with party.phase(PHASE_EIGENSOLVE):
            provider_eigensolve(
                party,
                stats.centred_gram(mean),
                config.providers,
                config.n_components,
                config.components,
                components_gram_bits(backend),
                backend_engine(backend),
                config.reveal,
            )
            transfer = expect_real_array(
                party.recv(SERVER), SERVER, (config.n_features, config.transfer_width), "T"
            )
    elif tolerant:  # the Gram matrix was in the one masked input
        transfer = expect_real_array(
            party.recv(SERVER), SERVER, (config.n_features, config.transfer_width), "T"
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
                party.recv(SERVER), SERVER, (config.n_features, config.transfer_width), "T"
            )
    with party.phase(PHASE_CHECK):
        # dropout mode: no plain sum agreed pairwise keys to reuse, so the check uses additive shares
        checked = mean_backend(backend, config) if tolerant else backend
        check_server_answer(party, stats, mean, transfer, party.recv(SERVER), config, checked)
    if not config.with_consumer:
        return None
    raw_mean = unscale_vector(mean, config.exponents)
    k = transfer.shape[1]  # config.n_components unless the server chose k
    step = projection_chunk_rows(k)
    with party.phase(PHASE_PROJECTION):
        if isinstance(data, ChunkedPart):  # never held whole: sent as it is computed
            send_projection(party, data.projected_chunks(raw_mean, transfer), step, k)
            return None
        projected = centred_product(data, raw_mean, transfer)  # sparse rows stay sparse
        # full chunks, then a shorter one (possibly empty) that ends the rows
        for start in range(0, projected.shape[0] + 1, step):
            party.send(CONSUMER, np.ascontiguousarray(projected[start : start + step]))
    return projected


def send_projection(party: Party, blocks: Iterator[NDArray[np.float64]], step: int, k: int) -> None:
    """Send projected rows arriving in blocks of any size as the consumer reads them.

    Full chunks of ``step`` rows, then a shorter one (possibly empty) that
    ends the rows: the same messages as a projection held whole, with at most
    one block and one chunk in memory.
    """
    pending = np.empty((0, k))
    for block in blocks:
        pending = np.vstack([pending, block]) if pending.shape[0] else block
        while pending.shape[0] >= step:
            party.send(CONSUMER, np.ascontiguousarray(pending[:step]))
            pending = pending[step:]
    party.send(CONSUMER, np.ascontiguousarray(pending))


def server_role(party: Party, config: PPPCAConfig, backend: SecureSumBackend) -> PPPCAModel:
    """Server (Alg. 2 steps 3, 7, 8; Alg. 1 steps 4, 8): reveal mean, eigendecompose."""
    d = config.n_features
    f = backend.codec.frac_bits
    with party.phase(PHASE_MEAN):
        stats = mean_backend(backend, config).secure_sum(
            party, None, contributors=config.providers, receiver=SERVER, name=STATS_NAME
        )
        if config.dropout_threshold is not None:
            outcome = last_outcome(party)
            if outcome is None:
                raise ProtocolError("the dropout-tolerant secure sum left no outcome")
            config = replace(config, dropped=outcome.dropped)
            if config.with_consumer:
                party.send(CONSUMER, list(config.dropped))
    if stats is None:
        raise ProtocolError(f"the secure sum of the {STATS_NAME} gave the server no result")
    packed: NDArray[np.float64] | None = None
    if config.dropout_threshold is not None:  # [s, N] and the Gram matrix in one sum (dropout_payload)
        try:
            stats, packed, raw_diagonal = dropout_payload.opened(stats, d, config.n_parties, f)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
    elif stats.shape != (d + 1,):
        raise ProtocolError(f"the summed {STATS_NAME} have shape {stats.shape}, expected ({d + 1},)")
    else:
        stats = np.ldexp(stats, -sums_scale_exponent(config.n_parties, f))
    if not np.isfinite(stats[-1]):
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not finite")
    n_samples = round(float(stats[-1]))
    if abs(float(stats[-1]) - n_samples) > 1e-3:
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not a whole number")
    check_announced_rows(config, n_samples)
    if n_samples < 2:
        raise ProtocolError(f"the providers hold {n_samples} row(s) in total; PCA needs at least 2")
    mean_y = stats[:d] / n_samples
    if hides_covariance(config.reveal):
        for provider in config.providers:
            party.send(provider, mean_y)
        if config.n_components > min(d, n_samples):
            raise ProtocolError(
                f"n_components={config.n_components} exceeds min(n_features={d}, n_samples={n_samples})"
            )
        with party.phase(PHASE_EIGENSOLVE):
            return _server_components(party, config, backend, mean_y, n_samples)
    if packed is not None:  # dropout mode: centred from the one masked input
        for provider in config.providers:
            party.send(provider, mean_y)
        gram = from_upper_triangle(packed, d)
        entry_error = dropout_payload.centring_error(raw_diagonal, config.exponents, config.n_parties, f)
    else:
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
        entry_error = gram_entry_error(config, f, n_samples)
    del packed
    gram = unscale_gram(gram, config.exponents)
    server = server_matrix(gram, n_samples, entry_error, config.standardize, overwrite=True)
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
    # the total variance is the trace. LAPACK overwrites the server's matrix. A k chosen
    # from the spectrum (config.select) needs every eigenvalue: nothing new to the
    # server, which holds the whole covariance.
    if config.select is None:
        values, components, leading, total_variance = leading_eigenpairs(
            server.matrix, config.n_components, overwrite=True
        )
    else:
        values, components, leading, total_variance = selected_eigenpairs(
            server.matrix, config.select, n_samples, overwrite=True
        )
    k = components.shape[0]
    # Providers project centred raw rows: with standardization T_eff = diag(1/sigma) T.
    transfer = np.ascontiguousarray(components.T / server.scale[:, None])
    answer = ServerAnswer(values, n_samples, max(total_variance, 0.0), server.scale).pack()
    for provider in config.providers:
        party.send(provider, transfer)
        party.send(provider, answer)
    bounds = rounding_error_bounds(leading, k, server.eta)
    mean = unscale_vector(mean_y, config.exponents)
    scale = server.scale if config.standardize else None
    dropped = None if config.dropout_threshold is None else config.dropped
    return PPPCAModel(
        mean, n_samples, components, values, max(total_variance, 0.0), server.eta, bounds, scale,
        dropped_providers=dropped,
    )  # fmt: skip


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
        party,
        config.providers,
        config.n_features,
        config.n_components,
        config.components,
        f_gram,
        engine,
        config.reveal,
    )
    components = result.components
    values = result.eigenvalues / (n_samples - 1)
    total_variance = result.trace / (n_samples - 1)
    eta, bounds = components_error_bounds(result, n_samples, config.n_parties, f_gram, config.components)
    if config.reveal == "components":  # before T leaves: a false assumed eigengap is refused
        check_assumed_gap(values, total_variance, config.n_features, config.components.eigengap, eta)
    transfer = np.ascontiguousarray(components.T)
    answer = ServerAnswer(values, n_samples, max(total_variance, 0.0), np.ones(config.n_features)).pack()
    for provider in config.providers:
        party.send(provider, transfer)
        party.send(provider, answer)
    solve: dict[str, Any] = {
        **result.plan.as_dict(),
        "reveal": config.reveal,
        "dealer": SERVER,
        "engine": engine,
    }
    spectrum = getattr(result, "spectrum", None)
    if spectrum is not None:  # reveal="spectrum": the server learnt every eigenvalue of the covariance
        solve["spectrum"] = (np.asarray(spectrum) / (n_samples - 1)).tolist()
    dropped = None if config.dropout_threshold is None else config.dropped
    return PPPCAModel(
        mean,
        n_samples,
        components,
        values,
        total_variance,
        eta,
        bounds,
        None,
        solve,
        dropped_providers=dropped,
    )


def _gram_shift(message: object) -> int:
    """Check the server's Gram scale exponent ``B`` (an integer in a sane range)."""
    value = expect_real_array(message, SERVER, (1,), "the Gram scale exponent")
    shift = float(value[0])
    if shift != round(shift) or abs(shift) > 4096:
        raise ProtocolError(f"the server sent Gram scale exponent {shift!r}; expected an integer")
    return int(shift)


#: ``party.context`` key where the consumer keeps the providers the server dropped.
DROPPED_KEY = "pppca|dropped providers"


def mean_backend(backend: SecureSumBackend, config: PPPCAConfig) -> SecureSumBackend:
    """The backend of step 1's secure sum: ``backend`` itself, or its dropout-tolerant variant.

    With ``config.dropout_threshold`` (checked: ``2 t > M``) the one sum of
    ``[column sums, row count, Gram matrix]`` survives providers that drop
    (:mod:`protocols.backends.dropout`, :mod:`mpc_pca.pppca.dropout_payload`);
    the answer check then runs over the providers it counted, where a drop
    ends the run as before.
    """
    if config.dropout_threshold is None:
        return backend
    check_dropout_threshold(config.dropout_threshold, config.n_parties)  # 2 t > M, before anything is sent
    if not isinstance(backend, AdditiveBackend) or backend.mode != "masks":
        raise InputValidationError(
            f"dropout_threshold needs the additive-masks backend, not {getattr(backend, 'name', backend)!r}"
        )
    return AdditiveBackend(
        "masks",
        backend.codec,
        dropout_threshold=config.dropout_threshold,
        dropout_timeout=config.dropout_timeout,
    )


def _dropped_list(message: object, config: PPPCAConfig) -> tuple[str, ...]:
    names = provider_names(config.n_parties)
    if not isinstance(message, list) or not all(isinstance(p, str) and p in names for p in message):
        raise ProtocolError(f"{SERVER!r} sent a malformed list of dropped providers")
    if len(names) - len(set(message)) < (config.dropout_threshold or 0):
        raise ProtocolError(f"{SERVER!r} dropped {message}, leaving fewer providers than the threshold")
    return tuple(sorted(set(message)))


def consumer_role(party: Party, config: PPPCAConfig) -> NDArray[np.float64]:
    """Data consumer (step 10): stack the providers' projected rows in provider order.

    Each provider's rows arrive in chunks of :func:`projection_chunk_rows`
    rows, ended by a shorter one; with announced row counts, a provider must
    send exactly the rows it announced.

    Raises
    ------
    ProtocolError
        Naming the provider, for a chunk of the wrong shape or more (or fewer)
        rows than it announced.
    """
    if config.dropout_threshold is not None:
        # A provider may die while the server runs the mean secure sum: its closed link to
        # this party must not end the run either (protocols.transport.base.Channel.tolerating).
        with party.channel.tolerating(config.providers):
            config = replace(config, dropped=_dropped_list(party.recv(SERVER), config))
        for provider in config.dropped:
            party.channel.drop(provider)
        party.context[DROPPED_KEY] = config.dropped
    width = config.transfer_width  # None: the server chose k; the first chunk's width is k
    step = None if width is None else projection_chunk_rows(width)
    every = provider_names(config.n_parties)
    announced = dict(zip(every, config.announced_rows, strict=True)) if config.announced_rows else {}
    blocks = []
    with party.phase(PHASE_PROJECTION):
        for provider in config.providers:
            expected = announced.get(provider)
            received = 0
            while True:
                chunk = expect_real_array(party.recv(provider), provider, (None, width), "X_i T")
                if width is None:
                    width = chunk.shape[1]
                    step = projection_chunk_rows(width)
                assert step is not None
                rows = chunk.shape[0]
                received += rows
                if rows > step:
                    raise ProtocolError(
                        f"{provider} sent a chunk of {rows} projected rows; chunks hold at most {step}"
                    )
                if expected is not None and received > expected:
                    raise ProtocolError(
                        f"{provider} sent more than the {expected} projected rows it announced ({received})"
                    )
                blocks.append(chunk)
                if rows < step:
                    break
            if expected is not None and received != expected:
                raise ProtocolError(f"{provider} sent {received} projected rows but announced {expected}")
    return np.vstack(blocks)
