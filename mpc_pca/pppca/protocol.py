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

Here: the provider and consumer roles; the server role is in
:mod:`mpc_pca.pppca.server`, the settings, the model and the phases in
:mod:`mpc_pca.pppca.config` (all importable from here too).

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
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca import dropout_payload
from mpc_pca.pppca.answer_check import PHASE_CHECK, check_server_answer
from mpc_pca.pppca.bounds import GRAM_NAME, STATS_NAME, components_gram_bits
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.components import backend_engine, hides_covariance, provider_eigensolve
from mpc_pca.pppca.config import (
    PHASE_EIGENSOLVE,
    PHASE_GRAM,
    PHASE_MEAN,
    PHASE_PROJECTION,
    PPPCAConfig,
    PPPCAModel,
    mean_backend,
)
from mpc_pca.pppca.dealer_free import await_consumer_offline
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import normalized, sums_scale_exponent, unscale_vector
from mpc_pca.pppca.server import server_role
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.sparse_rows import centred_product
from protocols.backends import SecureSumBackend
from protocols.backends.dropout import last_outcome
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

#: The role functions and what they share, importable from here (the settings, the model,
#: the phases and the server role live in :mod:`mpc_pca.pppca.config` and :mod:`mpc_pca.pppca.server`).
__all__ = [
    "DROPPED_KEY",
    "PHASE_EIGENSOLVE",
    "PHASE_GRAM",
    "PHASE_MEAN",
    "PHASE_PROJECTION",
    "PROJECTION_CHUNK_BYTES",
    "PPPCAConfig",
    "PPPCAModel",
    "consumer_role",
    "mean_backend",
    "projection_chunk_rows",
    "provider_role",
    "send_projection",
    "server_role",
]


# -- role functions -------------------------------------------------------------

#: Most bytes of one chunk of a provider's projected rows ``X_i T`` (for ``k`` up to
#: ``PROJECTION_CHUNK_BYTES / 8``; a chunk holds at least one row).
PROJECTION_CHUNK_BYTES = 16 << 20


def projection_chunk_rows(n_components: int) -> int:
    """Rows of ``X_i T`` per chunk: as many ``k``-float rows as fit :data:`PROJECTION_CHUNK_BYTES`, at least 1."""
    return max(1, PROJECTION_CHUNK_BYTES // (8 * int(n_components)))


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


def _gram_shift(message: object) -> int:
    """Check the server's Gram scale exponent ``B`` (an integer in a sane range)."""
    value = expect_real_array(message, SERVER, (1,), "the Gram scale exponent")
    shift = float(value[0])
    if shift != round(shift) or abs(shift) > 4096:
        raise ProtocolError(f"the server sent Gram scale exponent {shift!r}; expected an integer")
    return int(shift)


#: ``party.context`` key where the consumer keeps the providers the server dropped.
DROPPED_KEY = "pppca|dropped providers"


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
    if hides_covariance(config.reveal) and config.components.dealer == "providers":
        await_consumer_offline(party, config)  # the server relays the providers' offline progress
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
