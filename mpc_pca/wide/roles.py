"""``pppca-randomized``'s roles, in its two modes of ``iterates``: who leads the iterations.

Roles: sites ``provider0 .. provider{M-1}`` (rows, horizontally partitioned:
the same ``d`` columns) and a ``server`` (no rows). The **lead**
(:attr:`WideConfig.lead`) is the server with ``iterates="server"`` and
``provider0`` (a site) with ``iterates="sites"``; both modes run the same code
(:func:`lead_iterations`, :func:`read_answer`), only the lead differs.
Messages:

1. **Mean phase** (both modes), one secure sum to the server of
   ``2^A [sum y, sum y^2, n_s]`` with ``y = x 2^-E``
   (:mod:`mpc_pca.wide.encoding`; ``sum y^2`` per column with
   ``standardize``, else one number: the total over every entry, times
   ``2^-T``). The server learns ``N``, the pooled mean, the total variance
   (the trace of the covariance) and (with ``standardize``) the pooled
   standard deviations, checks ``N`` against the row counts the sites
   announced, and sends ``[mu, D, N]`` to every site.
2. **Iterations** (:func:`mpc_pca.wide.subspace.subspace_iteration` from the
   public start block, at most ``iterated_power + 1`` products): the lead
   sends the orthonormal block ``Q_{i-1}`` (``d x b``) to every other site;
   each site computes ``D^-1 (X_s - mu)^T (X_s - mu) D^-1 Q_{i-1}`` from its
   rows, a chunk at a time (:func:`mpc_pca.wide.site.site_product`), and the
   sites run ONE secure sum of that ``d x b`` block, scaled by
   ``2^(B - 2E)`` (``2^B`` standardized), to the lead, which decodes
   ``C Q_{i-1}`` times ``N - 1``, takes its Ritz pairs and residuals and
   orthonormalises. ``provider0`` leading adds its own summand to the sum it
   receives (every additive backend lets the receiver contribute). With
   ``iterates="sites"`` the server takes no part: it receives nothing until
   the answer, and waits for it ``iterated_power + 1`` times its receive timeout.
3. **Answer**: the lead sends the top ``k`` eigenvalues and components with
   the solver report (residuals, residual bound, last value change, stop
   rule, number of products; one 1-D array, :func:`answer_message`, which ends
   the iterations) to every other party, which checks it against the agreed
   stop rule (:func:`read_answer`); each site computes the PC scores of its
   own rows locally (:func:`mpc_pca.wide.site.site_scores`); they are not sent.

What each role learns (the trust model's sections on ``pppca-randomized``
say the same): honest-but-curious parties, the server colluding with no site.

``iterates="server"``
    The **server** learns ``N``, the pooled mean, the total variance
    ``trace(C)`` (one number; it gives the explained variance ratios), the
    pooled standard deviations (``standardize`` only), the agreed exponent
    ``E`` (the binary order of magnitude of the largest value), and every
    product ``C Q_i`` of the pooled (standardized) covariance with a block it
    chose, ``iterated_power + 1`` at most: ``b`` columns each, from which it
    also knows ``Q_i^T C Q_i`` and, after ``t`` products, ``C`` restricted to a
    Krylov space of dimension up to ``t b`` (with ``t b >= d`` that can be all
    of ``C``: the mode reveals no more than the covariance, and may reveal
    that much). The iterates and everything computed from them are what
    federated power iteration reveals. Each **site** learns ``N``, the pooled
    mean and standard deviations, every block ``Q_i`` the server sends (the
    iterates are public to the sites too: ``Q_i`` spans ``C Q_{i-1}``), the
    components, the top ``k`` eigenvalues and the solver report; never
    another site's rows, sums or products, which only appear inside secure sums.
``iterates="sites"``
    The **server** learns only the output: ``N``, the pooled mean, the total
    variance, the pooled standard deviations (``standardize`` only), the
    agreed exponent ``E``, the top ``k`` components and eigenvalues and the
    solver report (how many products, the residuals and the stop rule's
    bounds); plus timing and message sizes. It sees no product ``C Q_i`` and
    no block. Each **site** learns what it learns with ``"server"`` (every
    block ``Q_i``, ``N``, the mean and scales, the answer); ``provider0``, the
    lead, also learns every product ``C Q_i`` (what the server learns in the
    other mode) and so, minus its own summand, the sum of the other sites'
    summands (with two sites that would be the other site's own
    ``D^-1 (X_1 - mu)^T (X_1 - mu) D^-1 Q_i``, so ``configure`` refuses the
    mode with 2 sites); the other sites learn only the orthonormal blocks. No
    site learns another site's rows, sums or products. The server colluding with ``provider0`` learns the
    iterates, as the server alone does with ``"server"``; with
    ``additive-sparse-masks``, ``provider0`` receiving the sums it
    contributes to counts as one of the ``max_colluders`` contributors the
    mask graph is sized for (:mod:`protocols.backends.sparse_masks`).

Nobody holds a ``d x d`` array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.config import PHASE_MEAN
from mpc_pca.roles import SERVER, provider_names
from mpc_pca.wide.encoding import (
    product_error_bound,
    product_shift,
    product_units,
    sums_error_bound,
    sums_shift,
    total_shift,
)
from mpc_pca.wide.site import Rows, SiteSums, site_product, site_scores
from mpc_pca.wide.subspace import (
    STOP_ITERATIONS,
    STOP_TOL,
    Moments,
    SubspaceResult,
    pooled_moments,
    start_block,
    subspace_iteration,
)
from protocols.backends import SecureSumBackend
from protocols.errors import ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

#: The iterations' phase, as the parties log and announce it.
PHASE_ITERATE = "block products"
#: Names of the secure sums (in error messages).
SUMS_NAME = "column sums (and squares) and row count"
PRODUCT_NAME = "block product X_s^T (X_s Q)"


@dataclass(frozen=True)
class WideConfig:
    """What every party of a ``pppca-randomized`` run agreed on."""

    n_sites: int
    n_features: int
    n_components: int
    #: ``b = min(k + n_oversamples, d)``.
    width: int
    #: Power iterations before the Rayleigh-Ritz product (``auto`` resolved from the announced rows).
    iterated_power: int
    tol: float | None
    standardize: bool
    start_seed: int
    #: The agreed binary exponent ``E`` (:mod:`mpc_pca.wide.encoding`).
    exponent: int
    #: Each site's announced row count, in site order.
    announced_rows: tuple[int, ...]
    #: Rows per chunk of a site's array (a local choice; a file keeps its own chunks).
    chunk_rows: int | None = None
    #: ``"server"`` or ``"sites"``: who leads the iterations (:attr:`lead`).
    iterates: str = "server"

    @property
    def providers(self) -> tuple[str, ...]:
        return provider_names(self.n_sites)

    @property
    def n_samples(self) -> int:
        return sum(self.announced_rows)

    @property
    def lead(self) -> str:
        """Who runs the iterations and receives every block product: the server, or ``provider0``."""
        return SERVER if self.iterates == "server" else self.providers[0]


@dataclass
class WideModel:
    """The server's result: the components, their eigenvalues and how far they can be from exact."""

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    mean: NDArray[np.float64]
    scale: NDArray[np.float64] | None
    n_samples: int
    solver: SubspaceResult
    #: Frobenius bound of the fixed-point error of each decoded product ``C Q`` (:mod:`mpc_pca.wide.encoding`).
    product_error_bound: float
    #: Bound of the fixed-point error of each pooled column sum (:func:`~mpc_pca.wide.encoding.sums_error_bound`).
    sums_error_bound: float
    #: The trace of the pooled (standardized) covariance, from the mean phase (up to its rounding).
    total_variance: float
    #: The mode that ran: ``"server"`` or ``"sites"``.
    iterates: str = "server"

    def result_fields(self) -> dict[str, Any]:
        """The JSON fields of the server's result."""
        return {
            "components": self.components.tolist(),
            "explained_variance": self.explained_variance.tolist(),
            "mean": self.mean.tolist(),
            "n_samples": self.n_samples,
            **({} if self.scale is None else {"scale": self.scale.tolist()}),
            "solver": self.solver.report(),
            "product_error_bound": self.product_error_bound,
            "sums_error_bound": self.sums_error_bound,
            "total_variance": self.total_variance,
            "iterates": self.iterates,
        }


def mean_payload(sums: SiteSums, config: WideConfig, frac_bits: int) -> NDArray[np.float64]:
    """``2^A [sum y, sum y^2, n_s]`` (per-column squares standardized, else their total times ``2^-T``)."""
    parts = [np.ldexp(sums.sums, -config.exponent)]
    if config.standardize:
        parts.append(np.ldexp(sums.squares, -2 * config.exponent))
    else:
        total = float(np.sum(np.ldexp(sums.squares, -2 * config.exponent)))
        parts.append(np.array([np.ldexp(total, -total_shift(config.n_features))]))
    parts.append(np.array([float(sums.n_rows)]))
    return np.ldexp(np.concatenate(parts), sums_shift(config.n_sites, frac_bits))


def provider_role(
    party: Party, rows: Rows, config: WideConfig, backend: SecureSumBackend, sums: SiteSums
) -> dict[str, Any]:
    """A site: the mean phase, its summand of every block product (``provider0`` leads with ``"sites"``), its scores."""
    d = config.n_features
    with party.phase(PHASE_MEAN):
        backend.secure_sum(
            party,
            mean_payload(sums, config, backend.codec.frac_bits),
            contributors=config.providers,
            receiver=SERVER,
            name=SUMS_NAME,
        )
        header = expect_real_array(party.recv(SERVER), SERVER, (2 * d + 1,), "the mean, scale and N")
    moments = _moments(header, config)
    if party.name == config.lead:
        result = lead_iterations(party, config, backend, moments, rows)
    else:
        result = read_answer(_follow(party, rows, config, backend, moments), config.lead, config)
    scores = site_scores(rows, moments.mean, moments.scale, result.components, config.chunk_rows)
    return {
        "n_rows": sums.n_rows, "scores": scores, "explained_variance": result.eigenvalues,
        "components": result.components,
    }  # fmt: skip


def _shift(config: WideConfig, frac_bits: int, n_samples: int) -> int:
    """The binary scaling of a site's summand of a block product: ``2^(B - 2E)`` (``2^B`` standardized)."""
    shift = product_shift(config.n_sites, frac_bits, n_samples, config.n_features, config.standardize)
    return shift - product_units(config.exponent, config.standardize)


def _summand(
    rows: Rows, block: NDArray[np.float64], moments: Moments, config: WideConfig, shift: int
) -> NDArray[np.float64]:
    """A site's scaled ``D^-1 (X_s - mu)^T (X_s - mu) D^-1 Q``, from its rows a chunk at a time."""
    bound = float(np.ldexp(1.0, config.exponent))  # every site's values are below 2^E
    scaled = site_product(rows, block / moments.scale[:, None], moments.mean, config.chunk_rows, bound)
    scaled /= moments.scale[:, None]
    return np.ldexp(scaled, shift, out=scaled)


def _follow(
    party: Party, rows: Rows, config: WideConfig, backend: SecureSumBackend, moments: Moments
) -> object:
    """A site that does not lead: its summand of each block the lead sends, until the answer (a 1-D array)."""
    lead = config.lead
    shift = _shift(config, backend.codec.frac_bits, moments.n_samples)
    with party.phase(PHASE_ITERATE):
        for _ in range(config.iterated_power + 2):
            message = party.recv(lead)
            if isinstance(message, np.ndarray) and message.ndim == 1:
                return message
            block = _block(message, config, lead)
            backend.secure_sum(
                party, _summand(rows, block, moments, config, shift), contributors=config.providers,
                receiver=lead, name=PRODUCT_NAME,
            )  # fmt: skip
    raise ProtocolError(f"{lead!r} asked for more than {config.iterated_power + 1} block products")


def _moments(header: NDArray[np.float64], config: WideConfig) -> Moments:
    """The server's ``[mu, D, N]``, checked: ``N`` the announced total, ``D`` positive."""
    d = config.n_features
    n = float(header[-1])
    if n != config.n_samples:
        raise ProtocolError(
            f"{SERVER!r} sent N={n!r}, but the sites announced {config.n_samples} rows in total"
        )
    scale = header[d : 2 * d]
    if np.any(scale <= 0) or (not config.standardize and np.any(scale != 1.0)):
        raise ProtocolError(f"{SERVER!r} sent column scales that are not positive (or not ones unscaled)")
    return Moments(int(n), header[:d], scale)


def _block(message: object, config: WideConfig, sender: str) -> NDArray[np.float64]:
    """A block the lead asks a product of: ``d x b`` with columns of norm at most 1 (the ring bound's premise)."""
    block = expect_real_array(message, sender, (config.n_features, config.width), "the block Q")
    norms = np.linalg.norm(block, axis=0)
    if np.any(norms > 1.0 + 1e-9):
        raise ProtocolError(
            f"{sender!r} sent a block whose columns have norms up to {float(np.max(norms)):.6g}; "
            "they must be orthonormal"
        )
    return block


def lead_iterations(
    party: Party, config: WideConfig, backend: SecureSumBackend, moments: Moments, rows: Rows | None
) -> SubspaceResult:
    """The lead: :func:`~mpc_pca.wide.subspace.subspace_iteration`, each product a secure sum to itself.

    Every other site gets the block first; the lead adds its own summand when it
    holds rows (``provider0``), then decodes the sum. The answer
    (:func:`answer_message`) goes to every other party.
    """
    n, followers = moments.n_samples, [p for p in config.providers if p != party.name]
    shift = _shift(config, backend.codec.frac_bits, n)

    def secure_product(block: NDArray[np.float64]) -> NDArray[np.float64]:
        block = np.ascontiguousarray(block)
        for provider in followers:
            party.send(provider, block)
        own = None if rows is None else _summand(rows, block, moments, config, shift)
        total = backend.secure_sum(
            party, own, contributors=config.providers, receiver=party.name, name=PRODUCT_NAME
        )
        if total is None or total.shape != block.shape:
            raise ProtocolError(f"the summed {PRODUCT_NAME} has shape {getattr(total, 'shape', None)}")
        return np.ldexp(total, -shift) / (n - 1)

    start = start_block(config.n_features, config.width, config.start_seed)
    with party.phase(PHASE_ITERATE):
        result = subspace_iteration(
            secure_product, start, config.n_components, config.iterated_power, config.tol
        )
    answer = answer_message(result)
    for other in followers if party.name == SERVER else (*followers, SERVER):
        party.send(other, answer)
    return result


def answer_size(config: WideConfig) -> int:
    """Numbers in the answer: ``k`` eigenvalues, ``k d`` components, ``k`` residuals and 4 of the stop rule."""
    return 2 * config.n_components + config.n_components * config.n_features + 4


def answer_message(result: SubspaceResult) -> NDArray[np.float64]:
    """The answer as one 1-D array (which ends the iterations at the sites).

    ``[theta (k), V (k d), r (k), residual_bound, value_change, stop, n_products]``:
    ``stop`` is 1 for the tol rule, 0 for the cap; ``value_change`` is sent as 0
    after a single product (it is then ``inf``, which no message carries).
    """
    change = result.value_change if result.n_products > 1 else 0.0
    tail = [result.residual_bound, change, float(result.stop == STOP_TOL), float(result.n_products)]
    return np.concatenate([result.eigenvalues, result.components.ravel(), result.residuals, tail])


def read_answer(message: object, sender: str, config: WideConfig) -> SubspaceResult:
    """The answer ``sender`` (the lead) sent, checked against the agreed stop rule."""
    k, d = config.n_components, config.n_features
    answer = expect_real_array(
        message, sender, (answer_size(config),), "the eigenvalues, components and solver report"
    )
    residuals, (bound, change, stop, products) = answer[k + k * d : 2 * k + k * d], answer[-4:]
    cap = config.iterated_power + 1
    early = stop == 1.0 and config.tol is not None and 2 <= products <= cap
    if products != round(products) or not (early or (stop == 0.0 and products == cap)):
        raise ProtocolError(
            f"{sender!r} sent a solver report against the agreed stop rule: stop={stop!r} after "
            f"{products!r} products (at most {cap}; tol={config.tol!r})"
        )
    if np.any(answer[:k] < 0) or np.any(residuals < 0) or min(bound, change) < 0:
        raise ProtocolError(f"{sender!r} sent negative eigenvalues, residuals or bounds")
    return SubspaceResult(
        answer[k : k + k * d].reshape(k, d), answer[:k], residuals, float(bound),
        float(change) if products > 1 else float("inf"), STOP_TOL if stop == 1.0 else STOP_ITERATIONS,
        int(products), config.width,
    )  # fmt: skip


def server_role(party: Party, config: WideConfig, backend: SecureSumBackend) -> WideModel:
    """The server: open the mean phase; lead the iterations (``iterates="server"``) or wait for the answer."""
    d, f = config.n_features, backend.codec.frac_bits
    with party.phase(PHASE_MEAN):
        summed = backend.secure_sum(
            party, None, contributors=config.providers, receiver=SERVER, name=SUMS_NAME
        )
    moments, total_variance = _opened_moments(summed, config, f)
    header = np.concatenate([moments.mean, moments.scale, [float(moments.n_samples)]])
    for provider in config.providers:
        party.send(provider, header)
    if config.lead == SERVER:
        result = lead_iterations(party, config, backend, moments, None)
    else:  # the lead's iterations: as long as each of its products could take in server mode
        with party.phase(PHASE_ITERATE):
            timeout = party.channel.timeout * (config.iterated_power + 1)
            result = read_answer(party.recv(config.lead, timeout=timeout), config.lead, config)
    n = moments.n_samples
    error = product_error_bound(config.n_sites, f, n, d, config.width, config.exponent, config.standardize)
    scale = moments.scale if config.standardize else None
    sums_error = sums_error_bound(config.n_sites, f, config.exponent)
    return WideModel(
        result.components, result.eigenvalues, moments.mean, scale, n, result, error, sums_error,
        total_variance, config.iterates,
    )  # fmt: skip


def _opened_moments(summed: NDArray[np.float64] | None, config: WideConfig, f: int) -> tuple[Moments, float]:
    """``N``, ``mu``, ``D`` and the total variance from the mean phase's sum, ``N`` checked against the announcements."""
    d = config.n_features
    width = 2 * d + 1 if config.standardize else d + 2
    if summed is None or summed.shape != (width,):
        raise ProtocolError(
            f"the summed {SUMS_NAME} have shape {getattr(summed, 'shape', None)}, expected ({width},)"
        )
    stats = np.ldexp(summed, -sums_shift(config.n_sites, f))
    n = round(float(stats[-1]))
    if abs(float(stats[-1]) - n) > 1e-3 or n != config.n_samples:
        raise ProtocolError(
            f"the secure sum of the row counts is {float(stats[-1])!r}, but the sites announced "
            f"{list(config.announced_rows)} ({config.n_samples} in total); refusing the run"
        )
    sums = np.ldexp(stats[:d], config.exponent)
    squares = np.ldexp(stats[d : 2 * d], 2 * config.exponent) if config.standardize else None
    # sum y^2 - (sum y)^2 / N is off by at most 3 e (e: the sum's rounding bound); a variance within
    # 2^10 of that is a constant column, so a scale is never off by more than 2^-11 (encoding's factor 2)
    rounding = config.n_sites * 2.0 ** -(f + 1 + sums_shift(config.n_sites, f))
    floor = float(np.ldexp(2.0**10 * 3 * rounding / n, 2 * config.exponent))
    moments = pooled_moments(sums, n, squares, floor)
    if squares is not None:  # standardized: each column's variance over its divisor squared
        variance = np.maximum(squares / n - moments.mean**2, 0.0) / moments.scale**2
        return moments, float(np.sum(variance)) * n / (n - 1)
    total = float(np.ldexp(stats[d], 2 * config.exponent + total_shift(d)))
    return moments, max(total - n * float(moments.mean @ moments.mean), 0.0) / (n - 1)


__all__ = [
    "PHASE_ITERATE",
    "PRODUCT_NAME",
    "SUMS_NAME",
    "WideConfig",
    "WideModel",
    "answer_message",
    "answer_size",
    "lead_iterations",
    "mean_payload",
    "provider_role",
    "read_answer",
    "server_role",
]
