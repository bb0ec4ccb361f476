"""Collective operations on shared tensors that merge independent openings into ONE round.

Used by the fast eigensolvers (:mod:`protocols.tensor.fast_eig`,
:mod:`protocols.tensor.spectrum_eig`; docs/secure_tensor.md, section 8):
:func:`open_products` opens the masked operands of several Beaver products in
one message, :func:`truncate_many` the masked values of several exact
truncations (optionally with values revealed to the holders in the same
round), :func:`reveal_many` reveals several tensors at once, and
:func:`times_public` multiplies by a public real matrix locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_array_list
from protocols.tensor.correlated import TruncationPair, triple, truncation_pair
from protocols.tensor.ops import _open, reveal_receivers
from protocols.tensor.session import TensorSession
from protocols.tensor.shared import SharedTensor

_U = np.uint64
#: Offset holder 0 adds before a truncation opening (the precondition is ``|x| < 2^62``).
_OFFSET_BITS = 62


def open_products(pairs: Sequence[tuple[SharedTensor, SharedTensor]]) -> list[SharedTensor]:
    """Untruncated matrix products ``X @ Y`` of several pairs with ONE opening round.

    Beaver's step (docs section 2) for each pair with its own fresh triple; all
    ``E = X - A`` and ``F = Y - B`` are sent in one message. The result carries
    ``f_X + f_Y`` fractional bits; the caller checks the magnitude bound.
    """
    if not pairs:
        return []
    session = pairs[0][0].session
    triples = [triple(session, "matmul", x.shape, y.shape) for x, y in pairs]
    shapes = [(x.shape[0], y.shape[1]) for x, y in pairs]
    out_bits = [x.frac_bits + y.frac_bits for x, y in pairs]
    for x, y in pairs:
        if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
            raise InputValidationError(f"cannot matrix-multiply shapes {x.shape} and {y.shape}")
        session.stats.bump("matmul")
    if not session.is_holder:
        return [SharedTensor(session, None, s, b) for s, b in zip(shapes, out_bits, strict=True)]
    masked: list[NDArray[np.uint64]] = []
    for (x, y), tri in zip(pairs, triples, strict=True):
        if tri is None or x.share is None or y.share is None:
            raise ProtocolError("a holder is missing a share or a triple")
        tri.consume()
        masked += [x.share - tri.a, y.share - tri.b]
    opened = _open(session, masked)
    result = []
    for i, tri in enumerate(triples):
        if tri is None:  # checked above; narrows the type
            raise ProtocolError("a holder is missing a triple")
        e, f = opened[2 * i], opened[2 * i + 1]
        z = tri.c + e @ tri.b + tri.a @ f
        if session.index == 0:
            z += e @ f
        result.append(SharedTensor(session, z, shapes[i], out_bits[i]))
    return result


@overload
def truncate_many(items: Sequence[tuple[SharedTensor, int]]) -> list[SharedTensor]: ...


@overload
def truncate_many(
    items: Sequence[tuple[SharedTensor, int]], reveal_to_holders: Sequence[SharedTensor]
) -> tuple[list[SharedTensor], list[NDArray[np.float64]] | None]: ...


def truncate_many(
    items: Sequence[tuple[SharedTensor, int]], reveal_to_holders: Sequence[SharedTensor] | None = None
) -> list[SharedTensor] | tuple[list[SharedTensor], list[NDArray[np.float64]] | None]:
    """Several exact truncations (docs section 3) with ONE opening round.

    Each ``(x, bits)`` becomes ``floor(x / 2^bits)`` or one more; requires
    ``|x| < 2^62`` as a signed ring element. ``reveal_to_holders`` are revealed
    to the holders in the same round (re-randomised by a fresh sharing of zero
    first, as :func:`protocols.tensor.ops.reveal` does): the call then returns
    ``(truncated, revealed)``, ``revealed`` being ``None`` at non-holders.
    """
    extra = list(reveal_to_holders or ())
    session = items[0][0].session
    for x, bits in items:
        if not 1 <= bits <= _OFFSET_BITS or x.frac_bits - bits < 0:
            raise InputValidationError(
                f"cannot drop {bits} bits from a value with {x.frac_bits} fractional bits"
            )
    pairs = [truncation_pair(session, x.shape, bits) for x, bits in items]
    if extra:
        session.stats.reveals += 1
    if not session.is_holder:
        shells = [SharedTensor(session, None, x.shape, x.frac_bits - bits) for x, bits in items]
        return (shells, None) if reveal_to_holders is not None else shells
    opened = _open(session, _masked_truncations(session, items, pairs) + _rerandomised(session, extra))
    out = _finish_truncations(session, items, pairs, opened[: len(items)])
    if reveal_to_holders is None:
        return out
    revealed = [
        t.view(np.int64).astype(np.float64) / 2.0**x.frac_bits
        for t, x in zip(opened[len(items) :], extra, strict=True)
    ]
    return out, revealed


def _masked_truncations(
    session: TensorSession,
    items: Sequence[tuple[SharedTensor, int]],
    pairs: Sequence[TruncationPair | None],
) -> list[NDArray[np.uint64]]:
    """A holder's masked values ``x + r`` (holder 0 adds the offset ``2^62``), consuming each pair."""
    masked = []
    for (x, _), pair in zip(items, pairs, strict=True):
        if pair is None or x.share is None:
            raise ProtocolError("a holder is missing a share or a truncation pair")
        pair.consume()
        m = x.share + pair.r
        if session.index == 0:
            m += _U(1 << _OFFSET_BITS)
        masked.append(m)
    return masked


def _rerandomised(session: TensorSession, xs: Sequence[SharedTensor]) -> list[NDArray[np.uint64]]:
    """A holder's shares of ``xs``, each plus a fresh sharing of zero (ready to reveal)."""
    out = []
    for x in xs:
        if x.share is None:
            raise ProtocolError("a holder is missing a share")
        out.append(x.share + session.zero_share(x.shape))
    return out


def _finish_truncations(
    session: TensorSession,
    items: Sequence[tuple[SharedTensor, int]],
    pairs: Sequence[TruncationPair | None],
    opened: Sequence[NDArray[np.uint64]],
) -> list[SharedTensor]:
    """A holder's shares of the truncated values from the opened ``x + r + 2^62``."""
    out = []
    for (x, bits), pair, c in zip(items, pairs, opened, strict=True):
        if pair is None:  # checked above; narrows the type
            raise ProtocolError("a holder is missing a truncation pair")
        share = np.where(c < _U(1 << 63), pair.msb_term, _U(0)) - pair.r_shifted
        if session.index == 0:
            share += (c >> _U(bits)) - _U(1 << (_OFFSET_BITS - bits))
        out.append(SharedTensor(session, share, x.shape, x.frac_bits - bits))
    return out


def reveal_many(xs: Sequence[SharedTensor], to: str | Sequence[str]) -> list[NDArray[np.float64]] | None:
    """Reveal several tensors to the named members in ONE round (re-randomised as :func:`ops.reveal`)."""
    session = xs[0].session
    receivers = reveal_receivers(session, to)
    session.start()
    session.stats.reveals += 1
    me = session.party.name
    own: list[NDArray[np.uint64]] | None = None
    if session.is_holder:
        own = []
        for x in xs:
            if x.share is None:
                raise InputValidationError("a holder's handle has no share")
            own.append(x.share + session.zero_share(x.shape))
        for r in receivers:
            if r != me:
                session.party.send(r, own)
    if me not in receivers:
        return None
    totals = [np.zeros(x.shape, dtype=_U) for x in xs] if own is None else [a.copy() for a in own]
    for h in session.holders:
        if h != me:
            parts = expect_array_list(session.party.recv(h), sender=h, shapes=[x.shape for x in xs], dtype=_U)
            for total, part in zip(totals, parts, strict=True):
                total += part
    return [t.view(np.int64).astype(np.float64) / 2.0**x.frac_bits for t, x in zip(totals, xs, strict=True)]


def times_public(
    x: SharedTensor, matrix: NDArray[np.float64], bits: int, *, left: bool = False
) -> SharedTensor:
    """``x @ P`` (or ``P @ x``) for a public real ``P`` encoded with ``bits`` fractional bits, untruncated (local)."""
    p = np.asarray(matrix, dtype=np.float64)
    limit = 2.0 ** (_OFFSET_BITS - bits)
    if p.size and float(np.max(np.abs(p))) >= limit:
        raise ProtocolError(
            f"a public factor of magnitude {float(np.max(np.abs(p))):.6g} does not fit {bits} bits"
        )
    enc = np.rint(p * 2.0**bits).astype(np.int64).astype(_U)
    shape = (p.shape[0], x.shape[1]) if left else (x.shape[0], p.shape[1])
    share = None
    if x.share is not None:
        share = enc @ x.share if left else x.share @ enc
    return SharedTensor(x.session, share, shape, x.frac_bits + bits)
