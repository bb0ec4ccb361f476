"""Block Krylov eigensolver on a shared symmetric PSD matrix (``reveal="components"``, ``method="krylov"``).

Subspace iteration (the ladder, :func:`protocols.tensor.fast_eig.ladder_eigenvectors`)
keeps only the last block ``P U``: its error shrinks by ``(1 - g)^q`` per power ``q``,
so a relative gap ``g = 1 - lambda_(k+1) / lambda_k`` of 0.75 % needs hundreds of
rounds. Block Krylov (block Lanczos with full reorthogonalization and
Rayleigh-Ritz on the whole basis; Musco & Musco, NeurIPS 2015; Saad 1980)
keeps every block ``U_0, Ĉ U_0, Ĉ^2 U_0, ...`` (orthonormalized): its Ritz
vectors are the best of every polynomial of degree ``< q`` in ``Ĉ``, whose
Chebyshev bound needs about ``1 / sqrt(gap)`` blocks instead of ``1 / gap``
(:func:`protocols.tensor.krylov_math.predicted_blocks`), and which adapts to the
spectrum: an isolated ``lambda_(k+1)`` costs one block, not ``1 / g`` of them.

Steps (every member calls with the same public arguments; ``to`` is the dealer):

1. ``C - C^T`` opened among the holders, ``tr(C)`` revealed, ``Ĉ = alpha C`` at
   ``F`` and ``F_HI`` bits (as the ladder); ``e = floor(log2 tr(Ĉ^2))`` revealed to
   every member (one product, one reveal), giving the public scale ``2^s``
   (:func:`~protocols.tensor.krylov_math.scale_exponent`, ``2^s lambda_1 < 1``).
2. Block ``j`` (``U_0 = Q_0``, a public orthonormal ``d x b`` start from ``start_seed``):
   round A opens the product ``Ĉ_hi U_j``; round B truncates it to
   ``X_j = 2^s Ĉ U_j`` at ``F_KX = 30`` bits; round C opens ``K^T X_j``, ``X_j^T K``,
   ``K^T U_j`` and ``[X_0..X_j]^T X_j`` (``K = [U_0 .. U_j]``) and round D reveals
   them to the holders only. Each holder assembles ``S = K^T K``, ``H = K^T X``,
   ``Q = X^T X``, takes the Ritz pairs, their residuals and the angle bound
   (:func:`~protocols.tensor.krylov_math.ritz_state`) and the stop decision;
   holder 0 tells the dealer (as the ladder). Round E sets
   ``U_(j+1) = [K, X_j] M`` with the public ``M`` of
   :func:`~protocols.tensor.krylov_math.next_block_coefficients` (one truncation).
3. Stop when the bound is at most ``tol``, when it no longer falls below twice the
   truncation noise, when the next block would exceed ``d`` columns or the new block
   vanishes (the space is invariant), or at ``max_blocks``; a last block narrower than ``b``
   fills the basis up to ``d`` columns, and a direction of the new block that vanished
   within fixed point is deflated (the block is narrower; holder 0 tells the dealer its width). Then ``V = K Y`` for the
   top-k Ritz coefficients ``Y`` and the ladder's masked Rayleigh-Ritz step
   (a Haar rotation ``S``, holder 0's or the product of every holder's as the
   session's ``rotations`` says, made before step 1; ``B = V S``, the receiver
   gets ``B`` and ``B^T Ĉ_hi B``).

What each member learns beyond the ladder's (docs/secure_tensor.md section 8):
the holders see ``S``, ``H`` and ``Q`` (the projections of ``Ĉ`` and ``Ĉ^2`` onto the
Krylov space of the public start, ``j + 1`` blocks of ``b`` columns: their Ritz
values are estimates of the top ``(j + 1) b`` eigenvalues of ``2^s Ĉ``), and every
member the exponent ``e``; the dealer learns the stop decisions, the bound and each
block's width (how many directions were deflated), the
receiver only ``B`` and ``B^T Ĉ_hi B`` (as with the ladder).

Stop rule bound (:func:`~protocols.tensor.krylov_math.ritz_angle_bound`): with the
Ritz basis ``V``, ``r_i = Ĉ v_i - theta_i v_i`` (opened residual plus truncation noise)
and ``mu = (1 - g)(theta_k + |R|_F)`` bounding ``lambda_(k+1)`` under the assumed
eigengap ``g``, ``sin`` of the largest angle between ``V`` and the top-k eigenspace is at
most ``rho = sqrt(sum_i (|r_i| / (theta_i - mu))^2)`` and ``tan`` at most
``rho / sqrt(1 - rho^2)`` (never above Davis-Kahan's ``|R|_F / (theta_k - mu)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.tensor.batched import open_products, reveal_many, times_public, truncate_many
from protocols.tensor.eig import _check_symmetric
from protocols.tensor.fast_eig import (
    FastEigResult,
    FastPlan,
    _broadcast_decision,
    _check_ladder_settings,
    _reveal_trace_exponent,
    _scaled_copies,
    _square_and_k,
    masked_rayleigh_ritz,
)
from protocols.tensor.fast_eig_math import F_HI, F, ladder_fixed_point_error, receiver_ritz
from protocols.tensor.joint_rotation import session_rotation_error, take_rotation
from protocols.tensor.krylov_math import G_K, RitzState, next_block_coefficients, ritz_state, scale_exponent
from protocols.tensor.session import TensorSession
from protocols.tensor.shared import SharedTensor

_U = np.uint64
#: Fractional bits of the images ``X_i = 2^s Ĉ U_i`` (``2^s lambda_1 < 1``): ``X^T X`` carries
#: ``2 F_KX = 60`` bits below ``2^62`` and ``K^T X`` ``F + F_KX = 58``; two bits finer than the basis.
F_KX = 30


def default_block_size(n_features: int, n_components: int) -> int:
    """Block size ``b = min(d, 2k)``: the oversampled block separates ``lambda_k`` from ``lambda_(2k+1)`` too."""
    return min(n_features, 2 * n_components)


def _hstack(blocks: list[SharedTensor]) -> SharedTensor:
    """The blocks side by side (local)."""
    first = blocks[0]
    width = sum(b.shape[1] for b in blocks)
    share = None if first.share is None else np.hstack([b.share for b in blocks])  # type: ignore[misc]
    return SharedTensor(first.session, share, (first.shape[0], width), first.frac_bits)


def _widened(u: SharedTensor) -> SharedTensor:
    """``u`` re-encoded with ``F_KX`` fractional bits (shares times ``2^(F_KX - F)``, local and exact)."""
    share = None if u.share is None else u.share * _U(2 ** (F_KX - F))
    return SharedTensor(u.session, share, u.shape, F_KX)


def _public(session: TensorSession, value: NDArray[np.float64]) -> SharedTensor:
    """A public matrix as a sharing: holder 0 holds its ``F``-bit encoding, the other holders zero."""
    share = None
    if session.is_holder:
        enc = np.rint(value * 2.0**F).astype(np.int64).astype(_U)
        share = enc if session.party.name == session.holders[0] else np.zeros(value.shape, dtype=_U)
    return SharedTensor(session, share, value.shape, F)


@dataclass
class _Basis:
    """The shared Krylov basis ``U_0 .. U_j``, its images ``X_i = 2^s Ĉ U_i`` and the holders' Grams."""

    u: list[SharedTensor]
    x: list[SharedTensor]
    s_gram: NDArray[np.float64]
    h_gram: NDArray[np.float64]
    q_gram: NDArray[np.float64]


def krylov_eigenvectors(
    c: SharedTensor,
    n_components: int,
    *,
    to: str,
    eigengap: float = 0.1,
    tol: float = 1e-6,
    max_blocks: int = 20,
    block_size: int | None = None,
    start_seed: int = 0,
    accept_tol: float | None = None,
) -> FastEigResult | None:
    """Top-k eigenpairs of a shared symmetric PSD matrix by block Krylov; revealed only to ``to``.

    Parameters
    ----------
    c : SharedTensor of shape (d, d)
        Shares of a symmetric PSD matrix; the session must carry ``F`` fractional bits.
    n_components : int
        ``k``.
    to : str
        The dealer.
    eigengap : float, default=0.1
        Assumed lower bound on ``1 - lambda_(k+1) / lambda_k`` (the stop rule's denominator).
    tol : float, default=1e-6
        Target bound on ``tan`` of the largest angle to the top-k eigenspace.
    max_blocks : int, default=20
        Cap on the Krylov blocks (five rounds each), at most 100.
    block_size : int, optional
        ``b >= k`` columns per block (default :func:`default_block_size`).
    start_seed : int, default=0
        Seed of the public start ``Q_0``.
    accept_tol : float, optional
        Largest bound accepted when the solve stops short of ``tol`` (default ``tol``); a
        larger one stops every member with :class:`ProtocolError` before anything is revealed.

    Returns
    -------
    FastEigResult or None
        At the receiver (``plan.method == "krylov"``, ``plan.powers`` one entry per block);
        ``None`` elsewhere.

    Raises
    ------
    InputValidationError
        Bad shapes or settings, a receiver other than the dealer (before anything is sent).
    ProtocolError
        A non-symmetric matrix, a trace out of range, a basis that lost rank, or a final
        bound above ``accept_tol`` (the top-k eigenspace is less separated than ``eigengap``).
    """
    session = c.session
    d, k = _square_and_k(c, n_components)
    accept = _check_ladder_settings(session, to, eigengap, tol, max_blocks, accept_tol)
    b = default_block_size(d, k) if block_size is None else int(block_size)
    if not k <= b <= d:
        raise InputValidationError(f"block_size={block_size} must lie between n_components={k} and d={d}")
    plan = FastPlan("krylov", eigengap, tol, max_blocks)
    plan.block_size = b
    rot = take_rotation(session, k)  # the masking rotation: data-independent, so first
    _check_symmetric(c)
    (c_lo, c_hi), alpha, trace = _scaled_copies(c, (F, F_HI))
    (square,) = open_products([(c_lo, c_lo)])
    exponent = _reveal_trace_exponent(square)
    shift = min(scale_exponent(exponent), F + F_HI - F_KX - 1)  # the truncation drops at least one bit
    plan.normaliser_exponents.append(exponent)
    plan.secret_products += 1
    q0, _ = np.linalg.qr(np.random.default_rng(start_seed).standard_normal((d, b)))
    basis = _Basis([_public(session, q0)], [], np.zeros((0, 0)), np.zeros((0, 0)), np.zeros((0, 0)))
    state: RitzState | None = None
    for j in range(max_blocks):
        state, done = _krylov_block(basis, c_hi, shift, plan, state, j, k)
        if done:
            break
    if plan.achieved_tol > accept:
        raise ProtocolError(
            f"the secure block Krylov eigensolve stopped after {len(plan.powers)} blocks with its angle bound "
            f"{plan.achieved_tol:.3g} above {accept:.3g}: the top-{k} eigenspace is less separated from the "
            f"rest than eigengap={eigengap} assumes (1 - lambda_{k + 1} / lambda_{k}); no eigenpair was "
            "revealed. Rerun with a smaller eigengap, more blocks, another n_components, or reveal='spectrum'"
        )
    big_k = _hstack(basis.u[: len(basis.x)])
    coeffs = state.vectors if state is not None and session.is_holder else np.zeros((big_k.shape[1], k))
    return _masked_ritz(big_k, coeffs, rot, c_hi, to, plan, (alpha, trace, d))


def _krylov_block(
    basis: _Basis, c_hi: SharedTensor, shift: int, plan: FastPlan, state: RitzState | None, j: int, k: int
) -> tuple[RitzState | None, bool]:
    """One block (rounds A-E); returns the holders' Ritz state and whether the solver stops."""
    session = c_hi.session
    u_j = basis.u[j]
    (z,) = open_products([(c_hi, u_j)])
    (x_j,) = truncate_many([(z, F + F_HI - F_KX - shift)])
    x_j = SharedTensor(session, x_j.share, x_j.shape, F_KX)  # 2^s Ĉ U_j: F_KX + s bits read as F_KX
    basis.x.append(x_j)
    big_k, big_x = _hstack(basis.u), _hstack(basis.x)
    pairs = [(big_k.T, x_j), (u_j.T, big_x), (big_k.T, u_j), (big_x.T, x_j)]
    products = open_products(pairs)
    plan.secret_products += 1 + len(pairs)
    opened = reveal_many(products, list(session.holders))
    plan.powers.append(1)
    width = min(u_j.shape[1], c_hi.shape[0] - big_k.shape[1])  # of the next block (public)
    done, bound, coeffs = False, 0.0, None
    if session.is_holder:
        if opened is None:
            raise ProtocolError("a holder got no revealed Grams")
        _grow_grams(basis, opened)
        state = ritz_state((basis.s_gram, basis.h_gram, basis.q_gram), k, c_hi.shape[0], plan.eigengap, F_KX)
        bound = float(min(state.bound, 1e300))
        b = u_j.shape[1]
        coeffs = next_block_coefficients(basis.s_gram, basis.h_gram[:, -b:], basis.q_gram[-b:, -b:], width)
        done = _stop(plan, bound, j, coeffs is None or width == 0, state.noise_bound)
    done, plan.achieved_tol, _ = _broadcast_decision(session, session.holders[0], done, bound, 0)
    session.party.iteration("Krylov block", j + 1, j + 1 if done else plan.max_iterations)
    if done:
        return state, True
    rows = big_k.shape[1] + x_j.shape[1]
    width = _tell_width(session, coeffs.shape[1] if coeffs is not None else width, width)
    matrix = coeffs if coeffs is not None else np.zeros((rows, width))
    widened = [_widened(u) for u in basis.u]
    (u_next,) = truncate_many([(times_public(_hstack([*widened, x_j]), matrix, G_K), F_KX + G_K - F)])
    basis.u.append(u_next)
    return state, False


def _tell_width(session: TensorSession, width: int, limit: int) -> int:
    """Holder 0 tells the dealer the next block's width (below ``limit`` when directions were deflated).

    Every holder computes the same width from the same opened Grams; the dealer needs it to
    deal the next truncation and learns how many directions vanished (docs section 8.6).
    """
    leader = session.holders[0]
    if session.party.name == leader:
        session.party.send(session.dealer, np.array([float(width)]))
    elif session.is_dealer:
        (got,) = expect_real_array(session.party.recv(leader), leader, (1,), "the block width")
        if got not in range(1, limit + 1):
            raise ProtocolError(f"{leader!r} sent block width {got}, outside 1..{limit}")
        width = int(got)
    return width


def _stop(plan: FastPlan, bound: float, j: int, exhausted: bool, noise_bound: bool) -> bool:
    """Stop at ``tol``, when the space is exhausted or invariant, at the cap, or when progress stalls.

    Stalled: within the ladder's accepted range (``max(64 tol, 1e-4)``), the bound fell by less
    than half since the previous block or the truncation noise estimate is at least the opened
    residual: fixed point dominates and more blocks would not lower the bound.
    """
    previous = plan.achieved_tol if j else np.inf
    plan.achieved_tol = bound
    stalled = bound <= max(64.0 * plan.tol, 1e-4) and (noise_bound or bound > previous / 2.0)
    return bool(bound <= plan.tol or exhausted or stalled or j == plan.max_iterations - 1)


def _grow_grams(basis: _Basis, opened: list[NDArray[np.float64]]) -> None:
    """Extend ``S``, ``H``, ``Q`` by the new block's rows and columns (holders only).

    ``opened`` is ``K^T X_j``, ``U_j^T X``, ``K^T U_j`` and ``X^T X_j`` with ``K`` and ``X``
    already holding block ``j``; ``H = K^T X`` is kept as opened (not symmetric: each
    ``X_i`` carries its own truncation), :func:`~protocols.tensor.krylov_math.ritz_pairs`
    takes its symmetric part.
    """
    kx, ux, ku, xx = opened
    n = basis.s_gram.shape[0]
    size = kx.shape[0]

    def grow(
        old: NDArray[np.float64], column: NDArray[np.float64], row: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        new = np.zeros((size, size))
        new[:n, :n] = old
        new[n:, :] = row
        new[:, n:] = column
        return new

    basis.s_gram = grow(basis.s_gram, ku, ku.T)
    basis.h_gram = grow(basis.h_gram, kx, ux)
    basis.q_gram = grow(basis.q_gram, xx, xx.T)


def _masked_ritz(
    big_k: SharedTensor,
    coeffs: NDArray[np.float64],
    rot: SharedTensor,
    c_hi: SharedTensor,
    to: str,
    plan: FastPlan,
    public: tuple[float, float, int],
) -> FastEigResult | None:
    """``V = K Y``, then the ladder's masked Rayleigh-Ritz: the receiver gets ``B = V S`` and ``B^T Ĉ_hi B``."""
    alpha, trace, d = public
    (v,) = truncate_many([(times_public(big_k, coeffs, G_K), G_K)])
    out = masked_rayleigh_ritz(
        v, rot, c_hi, F_HI, plan, to
    )  # the image back to F bits (the ladder keeps F_HI)
    if out is None:
        return None
    basis, ritz = out
    comps, values = receiver_ritz(basis, ritz)
    eta = ladder_fixed_point_error(d, session_rotation_error(v.session, rot.shape[0], F))
    return FastEigResult(comps, values / alpha, trace, plan, alpha, None, eta)
