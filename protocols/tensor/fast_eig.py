"""Eigensolvers on a shared symmetric PSD matrix in tens of rounds (docs/secure_tensor.md, sections 8-9).

Two solvers, both built from dealer-assisted Beaver products and exact
truncations (:mod:`protocols.tensor.ops`), with independent openings merged
into one round (:mod:`protocols.tensor.batched`: :func:`open_products`,
:func:`truncate_many`, :func:`reveal_many`):

:func:`ladder_eigenvectors` (``reveal="components"``, this module)
    Repeated squaring ``P_j = Ĉ^(2^j) / 2^(e_1 + ...)`` with public power-of-two
    normalisers, then block subspace iteration ``X = P_j U`` whose
    orthonormalisation is Cholesky-QR from the revealed ``k x k`` Gram matrix
    ``X^T X`` (to the holders only), the power ``j`` chosen per iteration by
    the holders, and a final masked Rayleigh-Ritz step with a high-precision
    copy of ``Ĉ``.
:func:`protocols.tensor.spectrum_eig.spectrum_eigenvectors` (``reveal="spectrum"``)
    The holders share a Haar-random orthogonal ``Q`` (holder 0's, or the
    product of every holder's: :mod:`protocols.tensor.joint_rotation`); the
    receiver sees only ``Q Ĉ Q^T`` (whose law depends on the eigenvalues
    alone), diagonalises it and sends back the top-k eigenvectors ``W``; the
    holders map them through ``Q^T`` on shares and reveal ``Q^T W``.

This module also holds what both solvers share: the input checks and scaling,
and the result types; the hiding rotations are in
:mod:`protocols.tensor.joint_rotation`, the fixed-point parameters and the
float arithmetic on revealed values in :mod:`protocols.tensor.fast_eig_math`.

Fixed point: the ladder and the basis carry ``F = 28`` fractional bits, the
high-precision ``Ĉ`` ``F_HI = 32``; every product of two encodings is checked
in the docs to stay below ``2^62`` in magnitude (the truncation's precondition).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.tensor.batched import open_products, reveal_many, times_public, truncate_many
from protocols.tensor.eig import _check_symmetric, reveal_trace, trace_scale_factor
from protocols.tensor.fast_eig_math import (
    _MAX_NOISE,
    F_HI,
    F_X,
    G_R,
    MAX_POWER_INDEX,
    F,
    choose_power,
    holder_step,
    ladder_fixed_point_error,
    noise_floor,
    receiver_ritz,
)
from protocols.tensor.joint_rotation import session_rotation_error, take_rotation
from protocols.tensor.ops import from_share
from protocols.tensor.session import TensorSession
from protocols.tensor.shared import SharedTensor

_U = np.uint64


def _square_and_k(c: SharedTensor, n_components: int) -> tuple[int, int]:
    """``(d, k)`` of a solver's input: ``c`` must be square and ``1 <= k <= d``.

    Raises
    ------
    InputValidationError
        If ``c`` is not a square matrix or ``n_components`` is out of range.
    """
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise InputValidationError(f"the eigensolver needs a square matrix, got shape {c.shape}")
    d = c.shape[0]
    k = int(n_components)
    if not 1 <= k <= d:
        raise InputValidationError(f"n_components={k} is out of range; it must be between 1 and d={d}")
    return d, k


def _scaled_copies(c: SharedTensor, frac_bits: Sequence[int]) -> tuple[list[SharedTensor], float, float]:
    """Reveal ``tr(C)`` and return ``alpha C`` with each of ``frac_bits`` (one truncation round), ``alpha``, trace.

    ``K = floor(2^(61 - f_C) / tr(C))``, ``alpha = K 2^(f_C - 61) <= 1/tr(C)``: the
    eigenvalues of ``alpha C`` lie in ``[0, 1]`` and ``C_int K < 2^61``.
    """
    trace = reveal_trace(c)
    factor = trace_scale_factor(trace, c.frac_bits)
    alpha = factor * 2.0 ** (c.frac_bits - 61)
    share = None if c.share is None else c.share * _U(factor)
    scaled = SharedTensor(c.session, share, c.shape, 61)
    return truncate_many([(scaled, 61 - b) for b in frac_bits]), alpha, trace


# -- results -----------------------------------------------------------------------------


@dataclass
class FastPlan:
    """Public settings and what a fast eigensolve did (``as_dict`` goes into the model's report)."""

    method: str
    eigengap: float
    tol: float
    max_iterations: int
    #: Powers ``2^j`` used per iteration (ladder) and the normaliser exponents ``e_j``.
    powers: list[int] = field(default_factory=list)
    normaliser_exponents: list[int] = field(default_factory=list)
    #: Bound on ``tan`` of the largest angle between the final basis and the top-k space.
    achieved_tol: float = 0.0
    secret_products: int = 0
    #: Columns per block of the block Krylov solver (``None`` for the ladder).
    block_size: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "eigengap": self.eigengap,
            "tol": self.tol,
            "max_iterations": self.max_iterations,
            "iterations": len(self.powers),
            "powers": list(self.powers),
            "normaliser_exponents": list(self.normaliser_exponents),
            "achieved_tol": self.achieved_tol,
            "secret_products": self.secret_products,
            **({} if self.block_size is None else {"block_size": self.block_size}),
        }


@dataclass
class FastEigResult:
    """What the receiver of a fast eigensolve gets (mirrors :class:`protocols.tensor.eig.EigResult`)."""

    components: NDArray[np.float64]  # (k, d)
    eigenvalues: NDArray[np.float64]  # (k,), of the input matrix
    trace: float
    plan: FastPlan
    scale: float  # alpha
    #: Spectrum mode only: every eigenvalue of the input matrix (decreasing).
    spectrum: NDArray[np.float64] | None = None
    #: Bound on the spectral norm of the fixed-point error, in units of the scaled matrix.
    fixed_point_error: float = 0.0


# -- the ladder solver (reveal="components") -------------------------------------------------


def ladder_eigenvectors(
    c: SharedTensor,
    n_components: int,
    *,
    to: str,
    eigengap: float = 0.1,
    tol: float = 1e-6,
    max_iterations: int = 12,
    start_seed: int = 0,
    accept_tol: float | None = None,
) -> FastEigResult | None:
    """Top-k eigenpairs of a shared symmetric PSD matrix in tens of rounds; revealed only to ``to``.

    Steps (docs/secure_tensor.md section 8.1): (1) ``C - C^T`` opened among
    the holders, ``tr(C)`` revealed to all, ``Ĉ = alpha C`` at ``F`` and
    ``F_HI`` bits in one truncation round, ``X_0 = Ĉ Q_0`` for a public
    orthonormal ``Q_0``; (2) per iteration, round A opens the products
    ``X^T X``, ``X_prev^T X`` and ``P_j X``; round B truncates ``P_j X`` and
    opens the two ``k x k`` matrices among the holders, who take ``R`` from
    the Cholesky factor of ``X^T X``, the angle ``delta`` the subspace moved,
    the bound ``t = c delta / (1 - c) + noise`` (``c = (1 - eigengap)^q``),
    the stop decision and the next power index (holder 0 tells the dealer);
    round C sets ``X <- (P_j X) R^-1``; squarings ``P_j = P_(j-1)^2 / 2^e_j``
    with ``e_j = floor(log2 tr(P_(j-1)^2))`` revealed to all members extend
    the ladder when needed; (3) ``U = X R^-1``, a Haar rotation ``S``
    (holder 0's or the product of every holder's, per the session's
    ``rotations``; made before step 1, as it does not depend on the data)
    masks it, ``B = U S``, and the receiver gets ``B`` and ``B^T Ĉ_hi B``
    (Rayleigh-Ritz) and nothing else.

    Every member calls this with the same public arguments; ``to`` must be
    the dealer (it needs holder 0's decisions to deal the next items).

    Parameters
    ----------
    c : SharedTensor of shape (d, d)
        Shares of a symmetric PSD matrix (any fractional bits); the session
        must carry ``F`` fractional bits.
    n_components : int
        ``k``.
    to : str
        The dealer.
    eigengap : float, default=0.1
        Assumed lower bound on ``1 - lambda_(k+1) / lambda_k`` (the stopping rule's contraction).
    tol : float, default=1e-6
        Target bound on ``tan`` of the largest angle to the top-k eigenspace.
    max_iterations : int, default=12
        Iteration cap (three rounds each).
    start_seed : int, default=0
        Seed of the public start ``Q_0``.
    accept_tol : float, optional
        Largest angle bound accepted when the cap is reached (default ``tol``).
        A larger one stops every member with :class:`ProtocolError` before the
        Rayleigh-Ritz step, so no eigenpair is revealed: the top-k eigenspace
        is less separated than ``eigengap`` assumes.

    Returns
    -------
    FastEigResult or None
        At the receiver; ``None`` elsewhere.

    Raises
    ------
    InputValidationError
        Bad shapes or settings, a receiver other than the dealer (before anything is sent).
    ProtocolError
        A non-symmetric matrix, a trace out of range, a top-k direction
        weaker than fixed point resolves (the iterate loses rank), or the cap
        reached with an angle bound above ``accept_tol``.
    """
    session = c.session
    d, k = _square_and_k(c, n_components)
    accept = _check_ladder_settings(session, to, eigengap, tol, max_iterations, accept_tol)
    plan = FastPlan("ladder", eigengap, tol, max_iterations)
    rot = take_rotation(session, k)  # the masking rotation: data-independent, so first
    _check_symmetric(c)
    (c_lo, c_hi), alpha, trace = _scaled_copies(c, (F, F_HI))
    q0, _ = np.linalg.qr(np.random.default_rng(start_seed).standard_normal((d, k)))
    start = times_public(c_lo, q0, F)  # X_0 = Ĉ Q_0
    x_hi, x_lo = truncate_many([(start, 2 * F - F_X), (start, F)])
    plan.powers.append(1)
    state = _Iterate([c_lo], x_hi, x_lo, None, np.eye(k), np.eye(k), 0)
    for it in range(max_iterations):
        if _ladder_iteration(state, plan, q0, it):
            break
    plan.powers.pop()  # the last P_j X was not used
    if plan.achieved_tol > accept:  # every member has the bound (_broadcast_decision): all stop here
        raise ProtocolError(
            f"the secure eigensolve reached max_iterations={max_iterations} with its angle bound "
            f"{plan.achieved_tol:.3g} above {accept:.3g}: the top-{k} eigenspace is less separated from the "
            f"rest than eigengap={eigengap} assumes (1 - lambda_{k + 1} / lambda_{k}); no eigenpair was "
            "revealed. Rerun with a smaller eigengap (more iterations), another n_components, or "
            "reveal='spectrum'"
        )
    (u,) = truncate_many([(times_public(state.x_hi, state.r_inv, G_R), F_X + G_R - F)])
    out = masked_rayleigh_ritz(u, rot, c_hi, F, plan, to)
    if out is None:
        return None
    basis, ritz = out
    comps, values = receiver_ritz(basis, ritz)
    eta = ladder_fixed_point_error(d, session_rotation_error(session, k, F))
    return FastEigResult(comps, values / alpha, trace, plan, alpha, None, eta)


def masked_rayleigh_ritz(
    u: SharedTensor, rot: SharedTensor, c_hi: SharedTensor, image_shift: int, plan: FastPlan, to: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The masked Rayleigh-Ritz step both eigensolvers end with (``docs/secure_tensor.md`` section 8.4).

    ``B = U S`` for the shared rotation ``S`` (``F`` fractional bits), its
    image ``C_hi B`` truncated by ``image_shift`` bits, and ``B^T C_hi B``;
    ``to`` gets ``B`` and the small Ritz matrix, every other party ``None``.
    Three secret products, counted in ``plan``.
    """
    (b,) = truncate_many([(open_products([(u, rot)])[0], F)])
    (w,) = open_products([(c_hi, b)])
    (w,) = truncate_many([(w, image_shift)])
    (h,) = open_products([(b.T, w)])
    plan.secret_products += 3
    out = reveal_many([b, h], to)
    if out is None:
        return None
    basis, ritz = out
    return basis, ritz


def _check_ladder_settings(
    session: TensorSession,
    to: str,
    eigengap: float,
    tol: float,
    max_iterations: int,
    accept_tol: float | None,
) -> float:
    """The accepted angle bound (``accept_tol``, default ``tol``) once the public settings check out.

    Raises
    ------
    InputValidationError
        A setting out of range, a session without ``F`` fractional bits, or a receiver other than the dealer.
    """
    if not 0.0 < eigengap < 1.0 or not 0.0 < tol < 1.0:
        raise InputValidationError(f"eigengap={eigengap} and tol={tol} must lie strictly between 0 and 1")
    accept = tol if accept_tol is None else float(accept_tol)
    if not tol <= accept < 1.0:
        raise InputValidationError(f"accept_tol={accept_tol} must lie between tol={tol} and 1")
    if not 1 <= max_iterations <= 100:
        raise InputValidationError(f"max_iterations={max_iterations} must be between 1 and 100")
    if session.frac_bits != F:
        raise InputValidationError(f"the ladder solver needs a session with {F} fractional bits")
    if to != session.dealer:
        raise InputValidationError(f"the ladder solver reveals to the dealer {session.dealer!r}, not {to!r}")
    return accept


@dataclass
class _Iterate:
    """The ladder solver's state between iterations (shares, or shells at the dealer)."""

    #: ``P_0 = Ĉ, P_1, ...`` so far.
    ladder: list[SharedTensor]
    #: The iterate ``X`` at ``F_X`` and at ``F`` fractional bits.
    x_hi: SharedTensor
    x_lo: SharedTensor
    #: The previous iterate (``None`` before the first step: the public start stands in).
    prev_lo: SharedTensor | None
    #: The holders' last revealed ``X^T X`` and ``R^-1`` (identity at the dealer).
    prev_gram: NDArray[np.float64]
    r_inv: NDArray[np.float64]
    #: Power index of the next product ``P_j X``.
    j: int


def _ladder_iteration(state: _Iterate, plan: FastPlan, q0: NDArray[np.float64], it: int) -> bool:
    """One iteration (rounds A, B, C of docs section 8.1 and any squarings); ``True`` when the solver stops."""
    x_lo, prev_lo = state.x_lo, state.prev_lo
    session = x_lo.session
    # A: one opening for X^T X, X_prev^T X and the next power times X (j chosen last iteration)
    pairs = [(x_lo.T, x_lo), (state.ladder[state.j], x_lo)]
    if prev_lo is not None:
        pairs.append((prev_lo.T, x_lo))
    outs = open_products(pairs)
    plan.secret_products += len(pairs)
    gram_s, z = outs[0], outs[1]
    cross_s = outs[2] if prev_lo is not None else times_public(x_lo, q0.T, F, left=True)
    # B: one round truncates P_j X and opens the k x k matrices among the holders
    (z_hi,), opened = truncate_many([(z, 2 * F - F_X)], reveal_to_holders=[gram_s, cross_s])
    plan.powers.append(2**state.j)
    next_j, done = 0, False
    if session.is_holder:
        next_j, done = _holder_decision(state, plan, opened, it)
    done, plan.achieved_tol, next_j = _broadcast_decision(
        session, session.holders[0], done, plan.achieved_tol, next_j
    )
    session.party.iteration("ladder iteration", it + 1, it + 1 if done else plan.max_iterations)
    if done:
        return True
    # C: X <- (P_j X) R^-1 = P_j U with U = X R^-1 orthonormal (Cholesky-QR)
    scaled = times_public(z_hi, state.r_inv, G_R)
    state.prev_lo = x_lo
    state.x_hi, state.x_lo = truncate_many([(scaled, G_R), (scaled, F_X + G_R - F)])
    state.j = next_j
    _extend_ladder(state.ladder, next_j, plan)
    return False


def _holder_decision(
    state: _Iterate, plan: FastPlan, opened: list[NDArray[np.float64]] | None, it: int
) -> tuple[int, bool]:
    """At each holder: ``R^-1``, the angle bound (into ``plan``), the next power index and the stop decision."""
    if opened is None:
        raise ProtocolError("a receiver got no revealed values")
    d = state.x_lo.shape[0]
    gram, cross = opened
    state.r_inv, ratio, moved = holder_step(gram, cross, state.prev_gram, plan.powers[-2])
    contraction = (1.0 - plan.eigengap) ** plan.powers[-2]
    bound = contraction * moved / (1.0 - contraction) if it else np.inf
    plan.achieved_tol = float(min(bound + noise_floor(d, state.j, ratio), 1e300))
    done = (it > 0 and plan.achieved_tol <= plan.tol) or it == plan.max_iterations - 1
    next_j = choose_power(ratio, d, min(_MAX_NOISE, max(plan.tol, plan.achieved_tol / 10.0)))
    state.prev_gram = gram
    return next_j, done


def _extend_ladder(ladder: list[SharedTensor], j: int, plan: FastPlan) -> None:
    """Squarings ``P_j = P_(j-1)^2 / 2^e_j`` with public power-of-two normalisers until ``P_j`` exists."""
    while len(ladder) <= j:
        (sq,) = open_products([(ladder[-1], ladder[-1])])
        e = _reveal_trace_exponent(sq)
        plan.normaliser_exponents.append(e)
        (p,) = truncate_many([(sq, F + e)])
        # dropping F + e bits of a 2F-bit value is the value over 2^e with F fractional bits
        ladder.append(SharedTensor(sq.session, p.share, p.shape, F))
        plan.secret_products += 1


def _broadcast_decision(
    session: TensorSession, leader: str, done: bool, bound: float, next_j: int
) -> tuple[bool, float, int]:
    """Holder 0 tells the dealer whether to stop, the angle bound and the next power index.

    The holders compute all three from values every holder saw (so they agree
    without talking); the dealer needs the decision and the power to deal the
    next items, and learns the bound (docs section 8).
    """
    me = session.party.name
    if me == leader:
        session.party.send(session.dealer, np.array([1.0 if done else 0.0, bound, float(next_j)]))
        return done, bound, next_j
    if session.is_dealer:
        flag, got, power = expect_real_array(session.party.recv(leader), leader, (3,), "the decision")
        if flag not in (0.0, 1.0) or not got >= 0.0 or power not in range(MAX_POWER_INDEX + 1):
            raise ProtocolError(f"{leader!r} sent decision {flag}, bound {got}, power index {power}")
        return flag == 1.0, float(got), int(power)
    return done, bound, next_j


def _reveal_trace_exponent(z: SharedTensor) -> int:
    """Reveal ``floor(log2 tr(Z))`` of a square product to every member (the normaliser, one round)."""
    session = z.session
    members = (*session.holders, session.dealer, *session.observers)
    diag = None if z.share is None else np.array([np.trace(z.share)], dtype=_U)
    out = reveal_many([from_share(session, diag, (1,), z.frac_bits)], members)
    if out is None:
        raise ProtocolError("the normaliser reveal returned nothing")
    t = float(out[0][0])
    if not t > 2.0 ** -(F - 1):
        raise ProtocolError(f"the squared matrix has trace {t:.3g}: too small to normalise in fixed point")
    return math.floor(math.log2(t))
