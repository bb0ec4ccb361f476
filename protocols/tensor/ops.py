"""Collective operations on :class:`~protocols.tensor.shared.SharedTensor`.

Every member of the session calls each function in the same order with the
same public arguments; holders pass their handles, the dealer and observers
pass their shape-only handles. Costs (``M`` holders, ``n`` output entries):

=====================  ======  ====================================================
operation              rounds  traffic
=====================  ======  ====================================================
share_input            1       ``M - 1`` seeds from the owner
add / sub / public *   0       none (public fixed-point factors add a truncation)
truncate               1       every holder sends ``n`` words to each other holder;
                               dealer sends ``2 n`` words to the last holder
mul / matmul           2       opening of ``X - A`` and ``Y - B``, then truncate;
                               dealer sends ``n`` words (``C``) to the last holder
reveal                 1       every holder sends ``n`` words to each receiver
=====================  ======  ====================================================

Accuracy: a product is exact in the ring; :func:`truncate` returns
``floor(x / 2^f)`` or that plus one, i.e. it is exact up to one unit in the
last place (``2^-f``). So with inputs exactly representable, ``mul`` and
``matmul`` (and products with public fixed-point values) are within
``2^-f`` of the exact product of the encoded operands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.encoding import check_finite
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_array, expect_array_list, expect_seed
from protocols.sharing import expand_share, split_seeded
from protocols.tensor.correlated import (
    Kind,
    OperandMask,
    Triple,
    fixed_triple,
    operand_mask,
    triple,
    truncation_pair,
)
from protocols.tensor.session import TensorSession
from protocols.tensor.shared import SharedTensor

_U = np.uint64
_OFFSET_BITS = 62  # truncation works on x + 2^62, so |x| < 2^62 keeps it in [0, 2^63)


# -- creating shared tensors -------------------------------------------------------


def from_share(
    session: TensorSession,
    share: NDArray[np.uint64] | None,
    shape: tuple[int, ...],
    frac_bits: int | None = None,
) -> SharedTensor:
    """Wrap additive shares the holders already have (e.g. from a secure-sum share round).

    Holders pass their ``uint64`` share; other members pass ``None``.
    """
    shape = tuple(int(s) for s in shape)
    frac_bits = session.frac_bits if frac_bits is None else int(frac_bits)
    if session.is_holder:
        arr = np.asarray(share)
        if arr.dtype != _U or arr.shape != shape:
            raise InputValidationError(
                f"a share must be uint64 of shape {shape}, got {arr.dtype} {arr.shape}"
            )
        return SharedTensor(session, arr, shape, frac_bits)
    return SharedTensor(session, None, shape, frac_bits)


def share_input(
    session: TensorSession, value: ArrayLike | None, *, owner: str, shape: tuple[int, ...]
) -> SharedTensor:
    """Secret-share ``owner``'s private array among the holders (one round, seeds only).

    The owner (a holder) encodes ``value`` (range-checked before anything is
    sent), keeps ``x - sum(PRG(seed_j))`` and sends holder ``j`` its 32-byte seed.
    """
    if owner not in session.holders:
        raise InputValidationError(f"the owner of an input must be a holder, got {owner!r}")
    shape = tuple(int(s) for s in shape)
    session.start()
    session.stats.inputs += 1
    if not session.is_holder:
        return SharedTensor(session, None, shape, session.frac_bits)
    if session.party.name == owner:
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != shape:
            raise InputValidationError(f"input of {owner!r} has shape {arr.shape}, declared {shape}")
        encoded = session.codec.encode(arr, name=f"input of {owner}")
        kept, seeds = split_seeded(encoded, session.n_holders)
        others = [h for h in session.holders if h != owner]
        for holder, seed in zip(others, seeds, strict=True):
            session.party.send(holder, seed)
        return SharedTensor(session, kept, shape, session.frac_bits)
    seed = expect_seed(session.party.recv(owner), sender=owner)
    return SharedTensor(session, expand_share(seed, shape), shape, session.frac_bits)


def share_sum(
    session: TensorSession,
    value: ArrayLike | None,
    *,
    shape: tuple[int, ...],
    frac_bits: int | None = None,
    name: str = "value",
) -> SharedTensor:
    """Every holder contributes an array; the holders end up with additive shares of the sum (one round).

    This is the share round of the additive secure sum (Liu et al., Alg. 2
    steps 1-2) without the reconstruction: holder ``i`` encodes its array
    (range-checked for ``M`` summands before anything is sent), keeps
    ``x_i - sum_j PRG(s_ij)`` and sends holder ``j`` the 32-byte seed ``s_ij``.
    Nobody learns the sum.
    """
    from protocols.encoding import FixedPointCodec

    shape = tuple(int(s) for s in shape)
    frac_bits = session.frac_bits if frac_bits is None else int(frac_bits)
    session.start()
    if not session.is_holder:
        return SharedTensor(session, None, shape, frac_bits)
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise InputValidationError(f"{name} has shape {arr.shape}, declared {shape}")
    encoded = FixedPointCodec(frac_bits).encode(arr, n_summands=session.n_holders, name=name)
    kept, seeds = split_seeded(encoded, session.n_holders)
    peers = [h for h in session.holders if h != session.party.name]
    for peer, seed in zip(peers, seeds, strict=True):
        session.party.send(peer, seed)
    for peer in peers:
        kept += expand_share(expect_seed(session.party.recv(peer), sender=peer), shape)
    return SharedTensor(session, kept, shape, frac_bits)


# -- local (public) operations -------------------------------------------------------


def add_public(x: SharedTensor, value: ArrayLike) -> SharedTensor:
    """``x + c`` for a public ``c`` (holder 0 adds its encoding)."""
    session = x.session
    if x.share is None:
        return x
    enc = _encode_public(session, value, x.frac_bits, "public addend")
    share = x.share + enc if session.index == 0 else x.share.copy()
    return SharedTensor(session, np.broadcast_to(share, x.shape).copy(), x.shape, x.frac_bits)


def mul_public_int(x: SharedTensor, factor: ArrayLike) -> SharedTensor:
    """``x * k`` for public integers ``k`` (exact, no truncation)."""
    k = np.asarray(factor)
    if k.dtype.kind not in "iu":
        raise InputValidationError(f"mul_public_int needs integer factors, got dtype {k.dtype}")
    if x.share is None:
        return x
    return SharedTensor(x.session, x.share * k.astype(np.int64).astype(_U), x.shape, x.frac_bits)


def mul_public(x: SharedTensor, value: ArrayLike) -> SharedTensor:
    """``x * c`` elementwise for a public real ``c`` (broadcast), then one truncation."""
    session = x.session
    enc = _encode_public(session, value, session.frac_bits, "public factor")
    share = None if x.share is None else x.share * enc
    shape = np.broadcast_shapes(x.shape, np.shape(value))
    if shape != x.shape:
        raise InputValidationError(f"public factor of shape {np.shape(value)} would change shape {x.shape}")
    return truncate(SharedTensor(session, share, x.shape, x.frac_bits + session.frac_bits), session.frac_bits)


def matmul_public(x: SharedTensor, matrix: ArrayLike, *, left: bool = False) -> SharedTensor:
    """``x @ P`` (or ``P @ x`` with ``left=True``) for a public real matrix ``P``, then one truncation."""
    session = x.session
    p = np.asarray(matrix, dtype=np.float64)
    if p.ndim != 2 or x.ndim != 2:
        raise InputValidationError(f"matmul_public needs 2-d operands, got {x.shape} and {p.shape}")
    inner_ok = p.shape[1] == x.shape[0] if left else x.shape[1] == p.shape[0]
    if not inner_ok:
        raise InputValidationError(
            f"cannot multiply shapes {p.shape if left else x.shape} and {x.shape if left else p.shape}"
        )
    shape = (p.shape[0], x.shape[1]) if left else (x.shape[0], p.shape[1])
    enc = _encode_public(session, p, session.frac_bits, "public matrix")
    share = None
    if x.share is not None:
        share = enc @ x.share if left else x.share @ enc
    return truncate(SharedTensor(session, share, shape, x.frac_bits + session.frac_bits), session.frac_bits)


def _encode_public(session: TensorSession, value: ArrayLike, frac_bits: int, name: str) -> NDArray[np.uint64]:
    arr = np.asarray(value, dtype=np.float64)
    check_finite(arr, name)
    limit = 2.0 ** (62 - frac_bits)
    if arr.size and float(np.max(np.abs(arr))) >= limit:
        raise InputValidationError(f"{name} has magnitude {float(np.max(np.abs(arr))):.6g} >= {limit:.6g}")
    return np.rint(arr * 2.0**frac_bits).astype(np.int64).astype(_U)


# -- openings, truncation, products ----------------------------------------------------


def _open(session: TensorSession, arrays: list[NDArray[np.uint64]]) -> list[NDArray[np.uint64]]:
    """Holders exchange masked shares and all learn their sums (one round)."""
    session.stats.openings += 1
    if session.engine is not None:
        return session.engine.open(arrays)
    me = session.party
    peers = [h for h in session.holders if h != me.name]
    for peer in peers:
        me.send(peer, arrays)
    totals = [a.copy() for a in arrays]
    shapes = [a.shape for a in arrays]
    for peer in peers:
        for total, part in zip(
            totals, expect_array_list(me.recv(peer), sender=peer, shapes=shapes, dtype=_U), strict=True
        ):
            total += part
    return totals


def truncate(x: SharedTensor, bits: int) -> SharedTensor:
    """Drop ``bits`` fractional bits: ``floor(x / 2^bits)`` or one more (one round).

    Requires ``|x| < 2^62`` as a signed ring element (for a product of two
    values with ``f`` fractional bits: real magnitude below ``2^(62 - 2f)``).

    Method (dealer-assisted, exact up to one ulp, never fails): the dealer
    deals uniform ``r`` with shares of ``r >> bits`` and ``msb(r) 2^(64-bits)``.
    Holders open ``c = x + 2^62 + r mod 2^64``; ``c`` is uniform whatever ``x``
    is (one-time pad), so the opening leaks nothing. With ``y = x + 2^62`` in
    ``[0, 2^63)`` the addition wrapped iff ``c < 2^63`` and ``msb(r) = 1``, and

        ``(c >> bits) - (r >> bits) + wrap * 2^(64-bits) - 2^(62-bits)``

    equals ``floor(x / 2^bits) + carry`` with ``carry`` in ``{0, 1}`` (the
    carry out of the dropped low bits). The wrap term is the public bit
    ``[c < 2^63]`` times the shared ``msb(r) 2^(64-bits)``, so it is linear.
    See docs/secure_tensor.md for the derivation.
    """
    session = x.session
    if not 1 <= bits <= _OFFSET_BITS:
        raise InputValidationError(f"can truncate between 1 and {_OFFSET_BITS} bits, got {bits}")
    out_bits = x.frac_bits - bits
    if out_bits < 0:
        raise InputValidationError(f"cannot drop {bits} bits from a value with {x.frac_bits} fractional bits")
    pair = truncation_pair(session, x.shape, bits)
    if x.share is None or pair is None:
        return SharedTensor(session, None, x.shape, out_bits)
    pair.consume()
    masked = x.share + pair.r
    if session.index == 0:
        masked += _U(1 << _OFFSET_BITS)
    (c,) = _open(session, [masked])
    share = np.where(c < _U(1 << 63), pair.msb_term, _U(0)) - pair.r_shifted
    if session.index == 0:
        share += (c >> _U(bits)) - _U(1 << (_OFFSET_BITS - bits))
    return SharedTensor(session, share, x.shape, out_bits)


def beaver(x: SharedTensor, y: SharedTensor, tri: Triple) -> SharedTensor:
    """Untruncated product from one triple, at a holder (``2f`` fractional bits; one round).

    Holders open ``E = X - A`` and ``F = Y - B`` (uniform, as ``A``, ``B`` are)
    and set ``Z_i = C_i + E B_i + A_i F (+ E F at holder 0)``.

    Raises
    ------
    TripleReuseError
        If ``tri`` was used before (checked before anything is sent).
    """
    session = x.session
    if x.share is None or y.share is None:
        raise InputValidationError("beaver() runs at holders only")
    if tri.a.shape != x.shape or tri.b.shape != y.shape:
        raise ProtocolError(f"triple shapes {tri.a.shape}, {tri.b.shape} do not match {x.shape}, {y.shape}")
    tri.consume()
    e, f = _open(session, [x.share - tri.a, y.share - tri.b])
    op = np.matmul if tri.kind == "matmul" else np.multiply
    z = tri.c + op(e, tri.b) + op(tri.a, f)
    if session.index == 0:
        z += op(e, f)
    return SharedTensor(session, z, tri.c.shape, x.frac_bits + y.frac_bits)


def _product(x: SharedTensor, y: SharedTensor, kind: Kind, extra_bits: int) -> SharedTensor:
    session = x.session
    if y.session is not session:
        raise InputValidationError("shared tensors belong to different sessions")
    if x.frac_bits != session.frac_bits or y.frac_bits != session.frac_bits:
        raise InputValidationError(
            f"operands must carry {session.frac_bits} fractional bits, got {x.frac_bits} and {y.frac_bits}"
        )
    if not 0 <= extra_bits <= 16:
        raise InputValidationError(f"extra_bits must be between 0 and 16, got {extra_bits}")
    session.stats.bump(kind)
    if session.engine is not None:
        z = session.engine.product(x, y, kind)
        return _truncate_product(z, extra_bits)
    tri = triple(session, kind, x.shape, y.shape)
    if tri is None:
        shape = (x.shape[0], y.shape[1]) if kind == "matmul" else x.shape
        z = SharedTensor(session, None, shape, 2 * session.frac_bits)
    else:
        z = beaver(x, y, tri)
    return _truncate_product(z, extra_bits)


def _truncate_product(z: SharedTensor, extra_bits: int) -> SharedTensor:
    """Drop ``f + extra_bits`` bits of a ``2 f``-bit product: divides by ``2^extra_bits``, keeps ``f`` bits."""
    session = z.session
    out = truncate(z, session.frac_bits + extra_bits)
    return SharedTensor(session, out.share, out.shape, session.frac_bits)


def mul(x: SharedTensor, y: SharedTensor, *, extra_bits: int = 0) -> SharedTensor:
    """Elementwise secret x secret product (Beaver triple + truncation; two rounds).

    The exact product of the encoded operands must stay below ``2^(62 - 2f)``.
    ``extra_bits`` divides the result by ``2^extra_bits`` in the same truncation
    (for public coefficients with power-of-two denominators).
    """
    if x.shape != y.shape:
        raise InputValidationError(f"elementwise product needs equal shapes, got {x.shape} and {y.shape}")
    return _product(x, y, "mul", extra_bits)


def matmul(x: SharedTensor, y: SharedTensor, *, extra_bits: int = 0) -> SharedTensor:
    """Secret x secret matrix product (matrix Beaver triple + truncation; two rounds).

    Every entry of the exact product of the encoded operands must stay below
    ``2^(62 - 2f)``; intermediate sums may wrap (the ring is exact).
    ``extra_bits`` divides the result by ``2^extra_bits`` in the same truncation.
    """
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
        raise InputValidationError(f"cannot matrix-multiply shapes {x.shape} and {y.shape}")
    return _product(x, y, "matmul", extra_bits)


@dataclass(frozen=True)
class FixedOperand:
    """A shared left operand ``X`` whose masked value ``E = X - A`` was opened once.

    Products ``X @ Y_t`` then cost one opening of ``Y_t - B_t`` only: the dealer
    deals fresh ``(B_t, A B_t)`` for the same ``A`` (as SPDZ reuses an opened
    ``X - A`` for a fixed operand). ``E`` is uniform and opened once, and every
    ``Y_t - B_t`` is masked by a fresh ``B_t``, so the holders' view stays
    uniform; no ``(B, C)`` pair is ever used twice.
    """

    x: SharedTensor
    mask: OperandMask | None
    opened: NDArray[np.uint64] | None


def fix_left(x: SharedTensor) -> FixedOperand:
    """Open ``X - A`` once so that ``X`` can be the left factor of many cheap products (one round)."""
    session = x.session
    if x.ndim != 2 or x.frac_bits != session.frac_bits:
        raise InputValidationError(f"fix_left needs a 2-d operand with {session.frac_bits} fractional bits")
    if session.engine is not None and not session.engine.fixed_operands:
        return FixedOperand(x, None, None)  # matmul_fixed falls back to matmul (fresh triple each time)
    mask = operand_mask(session, x.shape)
    opened = None
    if session.is_holder and mask is not None and x.share is not None:
        (opened,) = _open(session, [x.share - mask.a])
    return FixedOperand(x, mask, opened)


def matmul_fixed(fixed: FixedOperand, y: SharedTensor) -> SharedTensor:
    """``X @ Y`` for a :func:`fix_left` operand (two rounds, only ``Y - B`` opened)."""
    x = fixed.x
    session = x.session
    if y.ndim != 2 or x.shape[1] != y.shape[0] or y.frac_bits != session.frac_bits:
        raise InputValidationError(f"cannot matrix-multiply shapes {x.shape} and {y.shape}")
    if session.engine is not None and not session.engine.fixed_operands:
        return matmul(x, y)
    tri = fixed_triple(session, fixed.mask, y.shape)
    session.stats.bump("matmul_fixed")
    shape = (x.shape[0], y.shape[1])
    if tri is None or y.share is None or fixed.opened is None:
        z = SharedTensor(session, None, shape, 2 * session.frac_bits)
    else:
        tri.consume()
        e = fixed.opened
        (f,) = _open(session, [y.share - tri.b])
        share = tri.c + e @ tri.b + tri.a @ f
        if session.index == 0:
            share += e @ f
        z = SharedTensor(session, share, shape, 2 * session.frac_bits)
    return truncate(z, session.frac_bits)


# -- reveal ------------------------------------------------------------------------------


def reveal_receivers(session: TensorSession, to: str | Sequence[str]) -> tuple[str, ...]:
    """The receivers of a reveal as a tuple, each checked to be a member of ``session``.

    Raises
    ------
    InputValidationError
        If a receiver is not a holder, the dealer or an observer of the session.
    """
    receivers = (to,) if isinstance(to, str) else tuple(to)
    members = (*session.holders, session.dealer, *session.observers)
    for r in receivers:
        if r not in members:
            raise InputValidationError(f"cannot reveal to {r!r}: not a member of the session")
    return receivers


def reveal(x: SharedTensor, to: str | Sequence[str]) -> NDArray[np.float64] | None:
    """Reveal ``x`` only to the named member(s) (one round).

    Holders first add a fresh sharing of zero from seeds the dealer never saw,
    so a receiver that knows the dealer's masks (the dealer itself) sees a
    uniformly random sharing of the value and learns only the value.

    Returns
    -------
    ndarray or None
        The decoded value at each receiver, ``None`` elsewhere.
    """
    session = x.session
    receivers = reveal_receivers(session, to)
    session.start()
    session.stats.reveals += 1
    me = session.party.name
    own = None
    if session.is_holder:
        if x.share is None:
            raise InputValidationError("a holder's handle has no share")
        own = x.share + session.zero_share(x.shape)
        for r in receivers:
            if r != me:
                session.party.send(r, own)
    if me not in receivers:
        return None
    total = np.zeros(x.shape, dtype=_U) if own is None else own.copy()
    for h in session.holders:
        if h != me:
            total += expect_array(session.party.recv(h), sender=h, shape=x.shape, dtype=_U)
    return total.view(np.int64).astype(np.float64) / 2.0**x.frac_bits
