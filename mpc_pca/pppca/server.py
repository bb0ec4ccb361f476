"""The PPPCA server role (Alg. 2 steps 3, 7, 8; Alg. 1 steps 4, 8): reveal the mean, eigendecompose.

The flow and trust model are in :mod:`mpc_pca.pppca.protocol`; the server
opens step 1's secure sum (``[column sums, row count]``, or with dropout
tolerance the one payload that also holds the Gram matrix), checks the row
count against the providers' announcements, sends the mean, and then either
eigendecomposes the summed covariance (``reveal="covariance"``) or deals the
eigensolve on shares and receives only its result
(:mod:`mpc_pca.pppca.components`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.linalg import leading_eigenpairs, selected_eigenpairs
from mpc_pca.pppca import dropout_payload
from mpc_pca.pppca.answer_check import ServerAnswer
from mpc_pca.pppca.bounds import (
    GRAM_NAME,
    STATS_NAME,
    check_precision,
    components_gram_bits,
    gram_entry_error,
    rounding_error_bounds,
)
from mpc_pca.pppca.components import (
    backend_engine,
    check_assumed_gap,
    components_error_bounds,
    hides_covariance,
    server_eigensolve,
)
from mpc_pca.pppca.config import (
    PHASE_EIGENSOLVE,
    PHASE_GRAM,
    PHASE_MEAN,
    PPPCAConfig,
    PPPCAModel,
    mean_backend,
)
from mpc_pca.pppca.scaling import gram_scale_exponent, sums_scale_exponent, unscale_gram, unscale_vector
from mpc_pca.pppca.standardize import ServerMatrix, server_matrix
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from protocols.backends import SecureSumBackend
from protocols.backends.dropout import last_outcome
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.triangle import from_upper_triangle


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


def server_role(party: Party, config: PPPCAConfig, backend: SecureSumBackend) -> PPPCAModel:
    """Server (Alg. 2 steps 3, 7, 8; Alg. 1 steps 4, 8): reveal mean, eigendecompose."""
    with party.phase(PHASE_MEAN):
        summed = mean_backend(backend, config).secure_sum(
            party, None, contributors=config.providers, receiver=SERVER, name=STATS_NAME
        )
        config = _learn_dropped(party, config)
    stats, packed, raw_diagonal = _opened_stats(summed, config, backend.codec.frac_bits)
    n_samples = _row_count(stats, config)
    mean_y = stats[: config.n_features] / n_samples
    if hides_covariance(config.reveal):
        for provider in config.providers:
            party.send(provider, mean_y)
        _check_k(config, n_samples)
        with party.phase(PHASE_EIGENSOLVE):
            return _server_components(party, config, backend, mean_y, n_samples)
    gram, entry_error = _summed_gram(party, config, backend, mean_y, n_samples, packed, raw_diagonal)
    del packed
    gram = unscale_gram(gram, config.exponents)
    server = server_matrix(gram, n_samples, entry_error, config.standardize, overwrite=True)
    del gram
    return _plain_model(party, config, server, mean_y, n_samples)


def _learn_dropped(party: Party, config: PPPCAConfig) -> PPPCAConfig:
    """With dropout tolerance: ``config`` with the providers step 1 dropped (told to the consumer)."""
    if config.dropout_threshold is None:
        return config
    outcome = last_outcome(party)
    if outcome is None:
        raise ProtocolError("the dropout-tolerant secure sum left no outcome")
    config = replace(config, dropped=outcome.dropped)
    if config.with_consumer:
        party.send(CONSUMER, list(config.dropped))
    return config


def _opened_stats(
    summed: NDArray[np.float64] | None, config: PPPCAConfig, f: int
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
    """``[s, N]`` from step 1's sum; with dropout tolerance also the Gram triangle and its raw diagonal."""
    d = config.n_features
    if summed is None:
        raise ProtocolError(f"the secure sum of the {STATS_NAME} gave the server no result")
    if config.dropout_threshold is not None:  # [s, N] and the Gram matrix in one sum (dropout_payload)
        try:
            return dropout_payload.opened(summed, d, config.n_parties, f)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
    if summed.shape != (d + 1,):
        raise ProtocolError(f"the summed {STATS_NAME} have shape {summed.shape}, expected ({d + 1},)")
    return np.ldexp(summed, -sums_scale_exponent(config.n_parties, f)), None, None


def _row_count(stats: NDArray[np.float64], config: PPPCAConfig) -> int:
    """``N``: a whole number, the sum of the announced row counts, at least 2."""
    if not np.isfinite(stats[-1]):
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not finite")
    n_samples = round(float(stats[-1]))
    if abs(float(stats[-1]) - n_samples) > 1e-3:
        raise ProtocolError(f"the summed row count {float(stats[-1])!r} is not a whole number")
    check_announced_rows(config, n_samples)
    if n_samples < 2:
        raise ProtocolError(f"the providers hold {n_samples} row(s) in total; PCA needs at least 2")
    return n_samples


def _check_k(config: PPPCAConfig, n_samples: int) -> None:
    """Refuse ``n_components`` above ``min(d, N)``."""
    d = config.n_features
    if config.n_components > min(d, n_samples):
        raise ProtocolError(
            f"n_components={config.n_components} exceeds min(n_features={d}, n_samples={n_samples})"
        )


def _summed_gram(
    party: Party,
    config: PPPCAConfig,
    backend: SecureSumBackend,
    mean_y: NDArray[np.float64],
    n_samples: int,
    packed: NDArray[np.float64] | None,
    raw_diagonal: NDArray[np.float64] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Send the mean; the centred Gram matrix and its entry error bound (steps 5-7, or the dropout payload)."""
    d = config.n_features
    f = backend.codec.frac_bits
    if packed is not None and raw_diagonal is not None:  # dropout mode: centred from the one masked input
        for provider in config.providers:
            party.send(provider, mean_y)
        entry_error = dropout_payload.centring_error(raw_diagonal, config.exponents, config.n_parties, f)
        return from_upper_triangle(packed, d), entry_error
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
    return gram, gram_entry_error(config, f, n_samples)


def _plain_model(
    party: Party, config: PPPCAConfig, server: ServerMatrix, mean_y: NDArray[np.float64], n_samples: int
) -> PPPCAModel:
    """Step 8 in the clear: eigendecompose the server's matrix, send ``T`` and the answer, build the model."""
    try:
        check_precision(server.eta, float(np.max(np.diag(server.matrix))), config)
    except InputValidationError as exc:
        raise ProtocolError(str(exc)) from exc
    _check_k(config, n_samples)
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
        CONSUMER if config.with_consumer else None,
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
        "dealer": config.components.dealer,  # "server" (it dealt every mask) or "providers" (it dealt none)
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
