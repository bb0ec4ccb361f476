"""Every check a PPPCA run makes before any party sends anything, where every part is at hand.

:func:`preflight` validates the parts and ``n_components``, computes each
provider's local statistics, agrees the column exponents and checks that every
payload fits the ring and keeps enough precision; :func:`check_run` adds the
checks of the run's settings against each other (the secure eigensolve's
plan, the dropout threshold, a backend that needs processes). The protocol
object (:class:`~mpc_pca.pppca.deployment.PPPCADeployment`) runs both in
:meth:`~mpc_pca.pppca.deployment.PPPCADeployment.preflight`, so the threads
runner and a launcher that holds every part refuse bad input before any party
starts, naming the part and the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.pppca.bounds import check_precision, check_ring_range, components_gram_bits, gram_entry_error
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.components import ComponentsSettings, check_reveal, check_trace_fits, hides_covariance
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.protocol import PPPCAConfig, mean_backend
from mpc_pca.pppca.scaling import agree_exponents, exponents_of_peaks, normalized, provider_exponents
from mpc_pca.pppca.standardize import scale_and_error
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import SecureSumBackend
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.errors import InputValidationError
from protocols.runtime import map_parties


def selection_rule(n_components: object, reveal: str) -> float | str | None:
    """The server's rule for choosing ``k`` if ``n_components`` is one, else ``None``.

    A float in ``(0, 1)`` (variance fraction) or ``"mle"`` (Minka) needs the
    whole spectrum, which only the server of ``reveal="covariance"`` holds.

    Raises
    ------
    InputValidationError
        For a rule with ``reveal="components"``, naming the option and why.
    """
    is_fraction = isinstance(n_components, float) and not isinstance(n_components, bool)
    if not (is_fraction or n_components == "mle"):
        return None
    if hides_covariance(reveal):
        raise InputValidationError(
            f"n_components={n_components!r} chooses k on the server from the whole eigenvalue spectrum; "
            f"with reveal={reveal!r} k is fixed before the secure eigensolve (reveal='components' keeps "
            "the spectrum secret, reveal='spectrum' reveals it only after k is fixed); pass an integer "
            "n_components or use reveal='covariance'"
        )
    if is_fraction and not 0.0 < float(n_components) < 1.0:  # type: ignore[arg-type]
        raise InputValidationError(
            f"n_components={n_components!r} is out of range; a variance fraction must be in (0, 1)"
        )
    return n_components  # type: ignore[return-value]


def preflight(
    parts: Sequence[ArrayLike],
    n_components: int | float | str | None,
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
        The number of components (the largest allowed when ``n_components``
        is a variance fraction or ``"mle"``: the server chooses, see
        :func:`selection_rule`).
    exponents : tuple of int
        The agreed column exponents ``E``.
    """
    reveal = check_reveal(reveal)
    if hides_covariance(reveal) and standardize:
        raise InputValidationError(
            f"standardize=True needs the pooled variances (the Gram diagonal), which reveal={reveal!r} "
            "keeps secret; use reveal='covariance' or standardize before the run"
        )
    if isinstance(parts, Sequence) and any(isinstance(p, ChunkedPart) for p in parts):
        arrays, stats = _chunked_preflight(parts)
    else:
        arrays = check_parts(parts, check_values=False, accept_sparse=True)
        n_rows = sum(a.shape[0] for a in arrays)
        # Each provider's local step, side by side (inline when it is only microseconds of numpy).
        stats = map_parties(LocalStatistics.of, arrays, work=float(n_rows) * arrays[0].shape[1] ** 2)
        for i, (part, st) in enumerate(zip(arrays, stats, strict=True)):
            check_statistics_finite(part, (st.column_sums, st.scatter_triangle), i)
    n_samples = sum(st.n_rows for st in stats)
    d = stats[0].n_features
    rule = selection_rule(n_components, reveal)
    if rule == "mle" and n_samples < d:
        raise InputValidationError(
            f"n_components='mle' is only supported if n_samples >= n_features (n_samples={n_samples}, "
            f"n_features={d})"
        )
    # with a selection rule the server chooses k <= min(d, N) from the spectrum
    k = min(d, n_samples) if rule is not None else check_n_components(n_components, d, n_samples)
    if hides_covariance(reveal):
        exponents: tuple[int, ...] = (0,) * d
    else:
        exponents = agree_exponents(
            [part_exponents(a, st).tolist() for a, st in zip(arrays, stats, strict=True)]
        )
    config = PPPCAConfig(len(arrays), d, k, False, exponents, standardize, reveal, select=rule)
    scaled = [normalized(st, exponents) for st in stats]
    check_ring_range(scaled, backend, config)
    mean = np.sum([st.column_sums for st in scaled], axis=0) / n_samples
    # The diagonal of the pooled Gram matrix is all the checks need (no d x d matrix here).
    diagonal = np.ldexp(
        np.sum([st.centred_gram_diagonal(mean) for st in scaled], axis=0),
        2 * np.asarray(exponents, dtype=np.int64),
    )
    f = components_gram_bits(backend) if hides_covariance(reveal) else backend.codec.frac_bits
    scale, eta = scale_and_error(diagonal, n_samples, gram_entry_error(config, f, n_samples), standardize)
    check_precision(eta, float(np.max(diagonal / scale**2)) / (n_samples - 1), config)
    if hides_covariance(reveal):
        check_trace_fits(float(np.sum(diagonal)), f)
    return arrays, stats, k, exponents


def part_exponents(
    part: NDArray[np.float64] | ChunkedPart, stats: LocalStatistics | None = None
) -> NDArray[np.int64]:
    """A provider's column exponents (:mod:`mpc_pca.pppca.scaling`).

    From the peaks ``stats`` carries (read in the same pass as the column sums, see
    :mod:`mpc_pca.pppca.local_stats`) when given; otherwise a chunked part reads its peaks and
    an array is scanned in blocks.
    """
    if stats is not None and stats.column_peaks is not None:
        return exponents_of_peaks(stats.column_peaks)
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
            (array,) = check_parts([part], min_total_rows=1, check_values=False, accept_sparse=True)
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


def check_run(
    n_providers: int,
    n_features: int,
    k: int,
    backend: SecureSumBackend,
    reveal: str,
    components: ComponentsSettings,
    dropout_threshold: int | None,
) -> None:
    """Refuse settings that no run of these parts could use, before anything is sent.

    Raises
    ------
    InputValidationError
        For a secure-eigensolve plan that does not
        fit (:meth:`~mpc_pca.pppca.components.ComponentsSettings.plan`), or a
        dropout threshold with another backend, another reveal mode or
        ``2 t <= M``.
    """
    if hides_covariance(reveal):
        components.plan(n_features, k)  # validates the settings before anything is sent
    if dropout_threshold is not None:
        probe = PPPCAConfig(n_providers, n_features, k, dropout_threshold=dropout_threshold)
        mean_backend(backend, probe)  # refuses another backend before anything is sent
        check_dropout_threshold(dropout_threshold, n_providers)
        if reveal != "covariance":
            raise InputValidationError("dropout_threshold needs reveal='covariance'")


def check_threads(backend: SecureSumBackend, reveal: str) -> None:
    """Refuse a run that cannot have its parties as threads of one process (before any starts).

    Raises
    ------
    InputValidationError
        For ``reveal="components"`` with a backend whose tensor engine needs
        every party in its own process (CrypTen over torch.distributed).
    """
    if hides_covariance(reveal) and getattr(backend, "needs_processes", False):
        raise InputValidationError(
            "reveal='components' with backend='crypten' runs the CrypTen tensor engine, whose parties must be "
            "processes over torch.distributed; it cannot run in-process. Run it with reveal='components', "
            "backend='crypten', transport='processes' and insecure=True (transport='torch' is an alias; in "
            "Python mpc_pca.deploy.launch_local('pppca-ss', parts, {'reveal': 'components', 'backend': "
            "'crypten'}, ...) runs each party as a process), "
            "or backend='additive' for the in-process engine"
        )
