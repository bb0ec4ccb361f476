"""Providers check the server's answer before they use it: a first step of active security.

In PPPCA (Liu et al., AAAI 2020, Alg. 2 step 8 / Alg. 1 step 8) the server
eigendecomposes the pooled covariance ``C`` and sends the providers
``T``, the top-``k`` eigenvectors, which they apply to their own rows (step
9). Under the paper's honest-but-curious model nothing checks ``T``: a server
that sends a random orthonormal matrix goes unnoticed and every provider
projects its rows on it. Here the server also sends what it claims about the
spectrum (:class:`ServerAnswer`: the ``k`` eigenvalues ``Λ``, ``N``, the total
variance and, with standardization, the column scales ``σ``), and the
providers, without revealing anything when the server is honest, check

1. ``V = diag(σ) T`` is orthonormal (each provider, locally);
2. every provider received the same answer (provider0 sends the SHA-256 of
   ``T``, the answer and the mean ``m`` of step 2 to the others);
3. ``Λ`` is a plausible top of a spectrum whose sum is the total variance
   (decreasing, ``λ_1 <= total``, mean of the top ``k`` at least the mean of all);
4. one secure sum among the providers, opened to provider0 and forwarded to
   the others, of

   * ``(R V - V Λ) / λ_1``, every column (``d k`` numbers), where
     ``R = diag(σ)^-1 C diag(σ)^-1`` is the matrix the server eigendecomposed:
     each provider adds its own ``diag(σ)^-1 G_i diag(σ)^-1 V / ((N - 1) λ_1)``
     (``G_i`` its centred Gram matrix), provider0 subtracts ``V Λ / λ_1``; any
     column whose norm exceeds ``4 ε + √d ν`` is refused, deterministically
     (:mod:`~mpc_pca.pppca.column_residual`, where the bound is derived);
   * ``sum_i n_i / N - 1`` (the claimed ``N``);
   * ``(trace R - total) / (d λ_1)`` (the claimed total variance);
   * with standardization, ``sum_i diag(G_i) / (N σ^2) - 1`` (the claimed scales);
   * ``a ∘ (sum_i (s_i - n_i m)) / (N √λ_1)`` (the claimed mean, ``s_i`` the
     column sums, ``a = 2^E / σ`` the units of ``R``): the mean's error in
     units of the top component's standard deviation; honest, entry ``j`` is
     at most ``a_j (M 2^-(f+1+A) / N + 2^-44) / √λ_1`` (:func:`mean_bound`);
   * with ``reveal="covariance"``, the first power step of check 5, ``R x / λ_1``.

   Each entry opens to zero up to the rounding bounds of the run
   (:func:`relative_error`) when the server is honest, so the opening
   tells provider0 nothing it did not know; otherwise every provider raises
   a :class:`~protocols.errors.ProtocolError` naming the server before it
   projects a single row (and, with ``reveal="components"`` when the residual alone
   fails, a false assumed eigengap: :mod:`~mpc_pca.pppca.ritz_verdict`);
5. with ``reveal="covariance"`` only, the eigenpairs are the top ``k``: ``p``
   power steps on ``R`` compressed to the complement of ``T``
   (:mod:`mpc_pca.pppca.top_k_check`, where the guarantee is proved). Its
   openings show every provider ``R Y`` (on wine all of ``R``), which
   ``reveal="components"`` and ``"spectrum"`` hide from everyone: there it does
   not run (:func:`~mpc_pca.pppca.top_k_check.run_steps`), and the top-``k``
   property rests on the secure eigensolve with an honest-but-curious dealer,
   as those modes already assume.

What it detects: any ``T`` whose columns are not orthonormal eigenvectors of
the pooled covariance with the eigenvalues sent, any one column above the per-column tolerance (a random
orthonormal ``T``, a perturbed or rotated ``T``, ``T`` of another matrix, wrong
``Λ``, ``N``, total variance, ``σ`` or mean), different answers or means to
different providers, and (check 5, covariance mode) true eigenpairs other
than the top ``k`` whenever ``λ_k - λ_{k+1} > λ_k / 4 + τ``, except with
probability ``2^-20``, and, when the server chose ``k`` by a variance
fraction, any other ``k`` (:func:`~mpc_pca.pppca.top_k_check.check_selection`).
What it does not: eigenpairs other than the top ``k`` when that gap is
smaller, and at any gap in the hidden modes; errors below the stated
tolerances; a ``k`` other than ``"mle"``'s.
A malicious provider0 can make honest providers accuse an honest server: the
other providers' errors say the opening is provider0's report. The cost is
``p`` secure sums (the first of ``(k + 2) d + 2`` or ``(k + 3) d + 2`` numbers, the others of
``d``) among the providers (on the run's pairwise masks when it has them,
:func:`check_backend`) and ``p + 2`` messages from provider0 to each other
provider (``x``, the digest, the openings); in the hidden modes one sum of ``(k + 1) d + 2``
numbers (``(k + 2) d + 2`` with standardization) and two messages from provider0 to each
other provider (the digest, the opening).
The providers additionally learn ``Λ``, ``N``, the total variance, ``σ`` and,
with ``reveal="covariance"`` only, check 5's products ``R Y``
(:mod:`mpc_pca.pppca.top_k_check`); a refused answer shows them ``R V``
(:mod:`~mpc_pca.pppca.column_residual`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.bounds import components_gram_bits, gram_entry_error
from mpc_pca.pppca.check_opening import CheckOpening
from mpc_pca.pppca.column_residual import column_tolerance, residual_columns, worst_column
from mpc_pca.pppca.components import accepted_angle_bound, hides_covariance
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.ritz_verdict import refuse_false_gap
from mpc_pca.pppca.scaling import sums_scale_exponent
from mpc_pca.pppca.top_k_check import (
    check_direction,
    check_selection,
    complement_basis,
    next_direction,
    power_products,
    product,
    ritz_value,
    run_steps,
    start_vector,
    verify_top,
)
from mpc_pca.roles import SERVER
from protocols.backends import SecureSumBackend
from protocols.backends.additive import AdditiveBackend
from protocols.errors import ProtocolError
from protocols.messages import expect_real_array, expect_seed
from protocols.party import Party

if TYPE_CHECKING:
    from mpc_pca.pppca.config import PPPCAConfig

#: The phase in which providers check the server's answer.
PHASE_CHECK = "server-answer check"
#: Largest allowed entry of ``V^T V - I`` (LAPACK's eigenvectors are orthonormal to ~d * 1e-16).
ORTHONORMAL_TOL = 1e-9
#: The same with ``reveal="components"`` (the secure eigensolve's Ritz vectors).
COMPONENTS_ORTHONORMAL_TOL = 1e-6
#: Relative floor of the residual tolerance: LAPACK's backward error is about ``d * 2^-52 * λ_1``.
EIGENSOLVER_RELATIVE_ERROR = 1e-9


@dataclass(frozen=True)
class ServerAnswer:
    """What the server claims about the spectrum it eigendecomposed, sent with ``T``."""

    eigenvalues: NDArray[np.float64]
    n_samples: int
    total_variance: float
    #: Column divisors ``σ`` (ones without standardization).
    scale: NDArray[np.float64]

    def pack(self) -> NDArray[np.float64]:
        """The message: ``[Λ (k), N, total variance, σ (d)]``."""
        head = [float(self.n_samples), float(self.total_variance)]
        return np.concatenate([self.eigenvalues, head, self.scale]).astype(np.float64)


def parse_answer(message: object, config: PPPCAConfig, k: int) -> ServerAnswer:
    """Check the shape and the ranges of the server's answer for a ``T`` of ``k`` columns.

    Raises
    ------
    ProtocolError
        Naming the server, for a malformed message, a ``N`` that is not a
        whole number of at least 2, a negative total variance, non-positive
        scales, or scales other than ones without standardization.
    """
    d = config.n_features
    packed = expect_real_array(message, SERVER, (k + 2 + d,), "the eigenvalues, N, total variance and scales")
    values, n_value, total, scale = packed[:k], packed[k], float(packed[k + 1]), packed[k + 2 :]
    if n_value != round(n_value) or not 2 <= n_value <= 2.0**62:
        raise ProtocolError(f"{SERVER!r} sent N={n_value!r}; expected a whole number of at least 2")
    if total < 0:
        raise ProtocolError(f"{SERVER!r} sent a negative total variance {total!r}")
    if np.any(scale <= 0) or (not config.standardize and np.any(scale != 1.0)):
        raise ProtocolError(
            f"{SERVER!r} sent column scales {scale.tolist()!r}; expected positive scales "
            + (
                "(the run standardizes)"
                if config.standardize
                else "equal to 1 (the run does not standardize)"
            )
        )
    return ServerAnswer(values.copy(), int(n_value), total, scale.copy())


def orthonormal_basis(
    transfer: NDArray[np.float64], answer: ServerAnswer, tolerance: float
) -> NDArray[np.float64]:
    """``V = diag(σ) T``, refused unless its columns are orthonormal within ``tolerance``."""
    basis = transfer * answer.scale[:, None]
    deviation = float(np.max(np.abs(basis.T @ basis - np.eye(basis.shape[1])), initial=0.0))
    if not deviation <= tolerance:
        raise ProtocolError(
            f"{SERVER!r} sent a T whose columns are not orthonormal (largest entry of V^T V - I is "
            f"{deviation:.3g}, allowed {tolerance:.3g}): its answer is not a set of eigenvectors; refusing to use its T"
        )
    return basis


def check_spectrum(answer: ServerAnswer, n_features: int, tolerance: float) -> None:
    """Refuse eigenvalues that cannot be the top ``k`` of a spectrum summing to the total variance.

    ``tolerance`` is absolute, in the eigenvalues' units.
    """
    values, total = answer.eigenvalues, answer.total_variance
    k = values.shape[0]
    problems = []
    if np.any(np.diff(values) > tolerance):
        problems.append("they are not decreasing")
    if values.size and values[0] > total + tolerance:
        problems.append(f"the largest exceeds the total variance {total:.6g}")
    if float(np.sum(values)) < k / n_features * total - k * tolerance:
        problems.append(
            f"their mean {float(np.mean(values)):.6g} is below the mean of all {n_features} eigenvalues "
            f"{total / n_features:.6g}, so they are not the largest"
        )
    if np.any(values < -tolerance):
        problems.append("some are negative")
    if problems:
        raise ProtocolError(
            f"{SERVER!r} sent eigenvalues {values.tolist()!r}: "
            + "; ".join(problems)
            + "; refusing to use its T"
        )


def answer_digest(transfer: NDArray[np.float64], answer: ServerAnswer, mean: NDArray[np.float64]) -> bytes:
    """SHA-256 of ``T``, the answer and the mean of step 2, compared among the providers."""
    digest = hashlib.sha256(np.ascontiguousarray(transfer, dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(answer.pack(), dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(mean, dtype="<f8").tobytes())
    return digest.digest()


def contribution(
    stats: LocalStatistics,
    mean: NDArray[np.float64],
    exponents: tuple[int, ...],
    basis: NDArray[np.float64],
    answer: ServerAnswer,
    standardize: bool,
    subtract_claim: bool,
) -> NDArray[np.float64]:
    """This provider's summand of the check (see the module docstring), before ring scaling.

    ``stats`` and ``mean`` are in the agreed column units ``Y = X diag(2^-E)``
    (:mod:`mpc_pca.pppca.scaling`); ``a = 2^E / σ`` maps them to the matrix the
    server eigendecomposed. ``subtract_claim`` (provider0 only) subtracts the
    server's claims so that an honest answer sums to zero.
    """
    n_total = answer.n_samples
    d = basis.shape[0]
    lam1 = _reference(answer)
    a = np.ldexp(1.0 / answer.scale, np.asarray(exponents, dtype=np.int64))
    a_hat = a / math.sqrt(lam1)  # a^2 / λ_1 without overflow for data near float64's range
    residual = residual_columns(stats, mean, basis, answer.eigenvalues, a_hat, n_total, lam1, subtract_claim)
    diagonal = stats.centred_gram_diagonal(mean)
    trace = float(np.sum(diagonal * a_hat * a_hat)) / (n_total - 1) / d
    count = stats.n_rows / n_total
    scales = diagonal * a * a / n_total if standardize else np.zeros(0)
    if subtract_claim:
        trace -= answer.total_variance / lam1 / d
        count -= 1.0
        scales = scales - 1.0
    return np.concatenate([residual, [count, trace], scales])


def units(answer: ServerAnswer, exponents: tuple[int, ...]) -> NDArray[np.float64]:
    """``a / √λ_1`` with ``a = 2^E / σ``: the agreed column units to those of ``R / λ_1``'s square root."""
    a = np.ldexp(1.0 / answer.scale, np.asarray(exponents, dtype=np.int64))
    return np.asarray(a / math.sqrt(_reference(answer)))


def mean_entries(
    stats: LocalStatistics, mean: NDArray[np.float64], a_hat: NDArray[np.float64], n_total: int
) -> NDArray[np.float64]:
    """This provider's ``a ∘ (s_i - n_i m) / (N √λ_1)``: the summed entries open to ``a ∘ (mean - m) / √λ_1``."""
    return np.asarray(a_hat * (stats.column_sums - stats.n_rows * mean) / n_total)


def mean_bound(
    config: PPPCAConfig, backend: SecureSumBackend, answer: ServerAnswer, mean: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Honest ``|a_j (mean_j - m_j)| / √λ_1``: the mean sum's fixed-point error plus float rounding.

    Each of the ``M`` encodings of ``s_i 2^A`` (:func:`~mpc_pca.pppca.scaling.sums_scale_exponent`)
    is off by at most ``2^-(f+1)``, so the server's mean by ``M 2^-(f+1+A) / N`` (agreed
    units, where ``|Y| <= 1``); float rounding of the sums and of the division adds
    less than ``2^-44 (1 + |m_j|)``.
    """
    f = backend.codec.frac_bits
    shift = sums_scale_exponent(config.n_parties, f)
    fixed = config.n_parties * 2.0 ** -(f + 1 + shift) / answer.n_samples
    return units(answer, config.exponents) * (fixed + 2.0**-44 * (1.0 + np.abs(mean)))


def _reference(answer: ServerAnswer) -> float:
    """``λ_1``, the scale of the check (1 when the claimed spectrum is zero)."""
    top = float(answer.eigenvalues[0]) if answer.eigenvalues.size else 0.0
    return top if top > 0 else 1.0


def relative_error(config: PPPCAConfig, backend: SecureSumBackend, answer: ServerAnswer) -> float:
    """Largest honest ``||R - R_server||_2 / λ_1`` plus the eigensolver's own relative error.

    Covariance mode: the server's ``R`` is off by at most ``eta = sum_j (u_j /
    σ_j)^2 / (N - 1)`` in spectral norm (``u`` from
    :func:`~mpc_pca.pppca.bounds.gram_entry_error`), and LAPACK adds about
    ``d 2^-52 λ_1`` (:data:`EIGENSOLVER_RELATIVE_ERROR` allows ``1e-9 λ_1``).
    With ``reveal="components"`` the Ritz residual of the secure eigensolve is
    at most about ``tol λ_1``: ``max(64 tol, 1e-4)`` plus the Gram rounding
    ``d M 2^-(f_G+1) / (N - 1)``.
    """
    n = answer.n_samples
    lam1 = _reference(answer)
    if hides_covariance(config.reveal):  # "spectrum": the same fixed-point pipeline, a smaller error
        gram_eta = (
            config.n_features * config.n_parties * 2.0 ** -(components_gram_bits(backend) + 1) / (n - 1)
        )
        return accepted_angle_bound(config.components.tol) + gram_eta / lam1
    u = gram_entry_error(config, backend.codec.frac_bits, n)
    eta = float(np.sum((u / answer.scale) ** 2)) / (n - 1)
    return eta / lam1 + EIGENSOLVER_RELATIVE_ERROR


def verify_opening(
    opened: NDArray[np.float64],
    config: PPPCAConfig,
    backend: SecureSumBackend,
    answer: ServerAnswer,
    k: int,
    reporter: str | None,
    mean: NDArray[np.float64],
    noise: float,
) -> None:
    """Refuse the server's answer unless every entry of the opened check is within its tolerance.

    ``opened`` starts with the ``d k`` residual entries, column after column; ``noise`` is
    the opening's fixed-point error per entry. ``reporter`` is the provider that opened the
    sum and forwarded it (``None`` for that provider itself); errors then say it is that
    provider's report.
    """
    d, n = config.n_features, answer.n_samples
    lam1 = _reference(answer)
    source = "" if reporter is None else f" (as opened and reported by {reporter})"
    failures = []
    relative = relative_error(config, backend, answer)
    column, residual = worst_column(opened, d, k)
    allowed = column_tolerance(relative, d, noise)
    if not residual <= allowed:
        failures.append(
            f"C T - T Lambda is not zero: |(C T - T Lambda) e_j| / lambda_1 = {residual:.3g} in column "
            f"j={column + 1}, allowed {allowed:.3g} per column"
        )
    o = d * k  # the count, the total variance, the scales and the mean follow the residual
    if not abs(opened[o]) <= 0.25 / n:
        failures.append(f"the providers' rows add up to {round((opened[o] + 1) * n)}, not N={n}")
    total_allowed = 4.0 * relative  # |trace(R - R_server)| <= eta, divided by λ_1 d <= λ_1
    if not abs(opened[o + 1]) <= total_allowed:
        failures.append(
            f"the total variance is off by {abs(opened[o + 1]) * lam1 * d:.6g} (claimed {answer.total_variance:.6g})"
        )
    scales = opened[o + 2 : o + 2 + (d if config.standardize else 0)]
    mean_error = np.abs(opened[o + 2 + scales.shape[0] : o + d + 2 + scales.shape[0]])
    mean_allowed = 2.0 * mean_bound(config, backend, answer, mean) + 2.0**-40
    if not np.all(mean_error <= mean_allowed):
        worst = int(np.argmax(mean_error / mean_allowed))
        failures.append(
            f"the mean it sent is off by {mean_error[worst]:.3g} standard deviations of the first component "
            f"in column {worst} (allowed {mean_allowed[worst]:.3g})"
        )
    if config.standardize:
        u = gram_entry_error(config, backend.codec.frac_bits, n)
        misfit = np.abs(scales)
        unit = answer.scale == 1.0  # a constant column is left unscaled: its variance is ~0, not 1
        constant = np.abs(scales + 1.0) <= 4.0 * u**2 / n + 1e-9
        bad = ~((misfit <= 1e-9 + 2.0 * u**2 / (n * answer.scale**2)) | (unit & constant))
        if np.any(bad):
            columns = np.flatnonzero(bad)[:5].tolist()
            failures.append(f"the scales sigma of columns {columns} are not the columns' standard deviations")
    if failures:  # components mode: a false assumed eigengap explains a residual alone (ritz_verdict)
        only = len(failures) == 1 and not residual <= allowed
        refuse_false_gap(config, only, residual, allowed, k, source, column=column)
        raise ProtocolError(
            f"{SERVER!r} sent a wrong answer{source}: " + "; ".join(failures) + "; refusing to use its T"
        )


def check_server_answer(
    party: Party,
    stats: LocalStatistics,
    mean: NDArray[np.float64],
    transfer: NDArray[np.float64],
    message: object,
    config: PPPCAConfig,
    backend: SecureSumBackend,
) -> None:
    """Run the providers' check of the server's answer (every provider calls it after receiving ``T``).

    Parameters
    ----------
    party : Party
        A provider.
    stats, mean : LocalStatistics, ndarray
        The provider's statistics and the pooled mean, in the agreed column units.
    transfer : ndarray of shape (d, k)
        The ``T`` the server sent.
    message : object
        The server's :class:`ServerAnswer` message.
    config : PPPCAConfig
    backend : SecureSumBackend
        The run's backend (its fixed-point resolution sets the tolerances); the
        check's own sum runs on :func:`check_backend`.

    Raises
    ------
    ProtocolError
        Naming the server when its answer fails a check, or naming provider0
        when provider0's messages are malformed.
    """
    providers = config.providers
    first = providers[0]
    k = transfer.shape[1]
    if not 1 <= k <= config.n_components:
        raise ProtocolError(f"{SERVER!r} sent a T of {k} columns; the run allows 1 to {config.n_components}")
    answer = parse_answer(message, config, k)
    tolerance = ORTHONORMAL_TOL if config.reveal == "covariance" else COMPONENTS_ORTHONORMAL_TOL
    basis = orthonormal_basis(transfer, answer, tolerance * k)
    spectrum_tol = 4.0 * relative_error(config, backend, answer) * _reference(answer)
    check_spectrum(answer, config.n_features, spectrum_tol)
    limit = min(config.n_features, answer.n_samples)
    check_selection(answer.eigenvalues, answer.total_variance, config.select, limit, spectrum_tol)
    digest = answer_digest(transfer, answer, mean)
    d, steps = config.n_features, run_steps(config.reveal, config.n_features, k)
    q = complement_basis(basis)
    width = d if steps else 0
    if party.name == first:  # x (check 5), drawn now that every provider holds T, then the digest
        start = start_vector(q) if steps else np.zeros(0)
        for provider in providers[1:]:
            if steps:
                party.send(provider, start)
            party.send(provider, digest)
    else:
        start = (
            expect_real_array(party.recv(first), first, (d,), "the start vector") if steps else np.zeros(0)
        )
        if expect_seed(party.recv(first), sender=first) != digest:
            raise ProtocolError(
                f"{SERVER!r} sent {first} and {party.name} different answers (T, eigenvalues, N, total "
                f"variance, scales or mean), as {first}'s digest shows; refusing to use its T"
            )
        if steps:
            check_direction(start, q, np.zeros((d, 0)), first)
    a_hat = units(answer, config.exponents)
    n = answer.n_samples
    summand = np.concatenate(
        [
            contribution(
                stats, mean, config.exponents, basis, answer, config.standardize, party.name == first
            ),
            mean_entries(stats, mean, a_hat, n),
            product(stats, mean, a_hat, start, n) if steps else np.zeros(0),
        ]
    )
    bound = 6.0  # 2 |e_j| + 4, as with a combination r of norm 1 (twice the largest honest entry)
    opening = CheckOpening(party, check_backend(backend), providers, bound)
    more = steps > 1  # provider0 attaches the next direction to the forwarded opening
    opened, pending = opening.open(
        summand,
        attach=(lambda z: next_direction(z[-d:], q, start[:, None])) if more else None,
        extra=d if more else 0,
    )
    reporter = None if party.name == first else first
    verify_opening(
        opened[: summand.shape[0] - width], config, backend, answer, k, reporter, mean, opening.noise
    )
    if steps:
        power_products(opening, stats, mean, a_hat, n, q, start, (opened[-d:], pending), steps)
        noise = math.sqrt(d * steps) * opening.noise + d * 2.0**-44
        theta = ritz_value(opening.directions, opening.images)
        verify_top(theta, answer.eigenvalues, _reference(answer), relative_error(config, backend, answer),
                   noise, reporter)  # fmt: skip


def check_backend(backend: SecureSumBackend) -> AdditiveBackend:
    """The backend of the check's secure sum among the providers (opened to provider0).

    With the run's ``additive-masks`` or ``additive-sparse-masks`` backend, the
    providers mask the check with the pairwise keys they agreed through the
    server for the run's own sums (``keys_from``: no second key agreement,
    the next streams of each key), so the check costs what one of those sums
    costs: ``M (M - 1)`` streams with full masks, ``M k`` with ``k = O(log M)``
    sparse neighbours, one message per provider (additive shares cost
    ``M (M - 1)`` seeds and messages, the check's dominant cost at M = 64).
    The check then hides each provider's summand as the run's sums hide its
    Gram matrix: from any coalition of the other providers with full masks,
    and from up to ``max_colluders`` of them, except with probability
    ``2^-security_bits`` over the graph, with sparse masks
    (:mod:`protocols.backends.sparse_masks`; provider0, the receiver, counts
    as one of them). Any other backend (additive shares, Paillier, CrypTen, a
    dropout-tolerant backend) gives additive shares, as before.
    """
    if isinstance(backend, AdditiveBackend) and backend.dropout_threshold is None:
        if backend.mode == "masks":
            return AdditiveBackend("masks", keys_from=SERVER)
        if backend.mode == "sparse-masks":
            return AdditiveBackend(
                "sparse-masks",
                max_colluders=backend.max_colluders,
                neighbours=backend.neighbours,
                security_bits=backend.security_bits,
                keys_from=SERVER,
            )
    return AdditiveBackend()
