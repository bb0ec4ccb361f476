"""Correlated randomness of the tensor engine: Beaver triples and truncation pairs, dealt or taken from a store.

For operation number ``t`` holder ``i`` expands its dealer seed under nonce
``t`` into its shares; the dealer expands the same streams, so it knows every
share without sending them. Only the last holder gets explicit words: the
difference between the correct share and its stream output (one array per
triple, two per truncation pair). Every item is numbered and recorded in the
session's :class:`~protocols.tensor.session.RandomnessLedger`; using an item
twice raises :class:`~protocols.errors.TripleReuseError`.

Beaver triple (elementwise): uniform ``A``, ``B`` and ``C = A * B``.
Matrix triple: uniform ``A`` (m x n), ``B`` (n x p) and ``C = A @ B``
(Beaver, CRYPTO 1991; matrix form as in Mohassel-Zhang, SecureML 2017).
Truncation pair: uniform ``r``, with shares of ``r >> f`` and of
``msb(r) * 2^(64-f)`` (see :func:`protocols.tensor.ops.truncate`).

In a dealer-free session (``randomness="providers"``) each holder takes the
next item of the matching kind and shapes from its offline store instead
(:class:`~protocols.tensor.offline_store.OfflineStore`, made by the holders
among themselves), numbered as the store numbers it; nothing is sent, and
the dealer (then only the output receiver) gets ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from protocols.messages import expect_array, expect_array_list
from protocols.tensor.session import TensorSession

Kind = Literal["mul", "matmul"]
_U = np.uint64


def _product(kind: Kind, a: NDArray[np.uint64], b: NDArray[np.uint64]) -> NDArray[np.uint64]:
    return a * b if kind == "mul" else a @ b


def product_shape(kind: Kind, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of ``A * B`` or ``A @ B`` for 2-d matrices."""
    if kind == "mul":
        return a_shape
    return (a_shape[0], b_shape[1])


@dataclass
class Triple:
    """A holder's shares of one Beaver triple; usable exactly once."""

    ident: int
    kind: Kind
    a: NDArray[np.uint64]
    b: NDArray[np.uint64]
    c: NDArray[np.uint64]
    session: TensorSession

    def consume(self) -> None:
        """Mark the triple used; raises :class:`TripleReuseError` the second time."""
        self.session.ledger.consume(self.ident)


@dataclass
class TruncationPair:
    """A holder's shares of ``r``, ``r >> f`` and ``msb(r) 2^(64-f)``; usable exactly once."""

    ident: int
    r: NDArray[np.uint64]
    r_shifted: NDArray[np.uint64]
    msb_term: NDArray[np.uint64]
    session: TensorSession

    def consume(self) -> None:
        self.session.ledger.consume(self.ident)


def triple(
    session: TensorSession, kind: Kind, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> Triple | None:
    """Deal (at the dealer) or receive (at a holder) one fresh triple; ``None`` elsewhere.

    Every session member calls this in the same order with the same shapes.
    """
    if not (session.is_holder or session.is_dealer):
        return None
    if session.dealer_free:
        if session.offline is None:
            return None
        ident, a, b, c = session.offline.take_triple(kind, a_shape, b_shape)
        session.stats.triples += 1
        session.stats.triple_words += int(np.prod(c.shape))
        session.ledger.issue(ident, kind, (a_shape, b_shape))
        return Triple(ident, kind, a, b, c, session)
    ident = session.next_op()
    c_shape = product_shape(kind, a_shape, b_shape)
    session.stats.triples += 1
    session.stats.triple_words += int(np.prod(c_shape))
    if session.is_dealer:
        a_sum = np.zeros(a_shape, dtype=_U)
        b_sum = np.zeros(b_shape, dtype=_U)
        c_sum = np.zeros(c_shape, dtype=_U)
        for stream in session.dealer_streams(ident):
            a_sum += stream.ring_elements(a_shape)
            b_sum += stream.ring_elements(b_shape)
            c_sum += stream.ring_elements(c_shape)
        session.party.send(session.holders[-1], _product(kind, a_sum, b_sum) - c_sum)
        return None
    stream = session.holder_stream(ident)
    a = stream.ring_elements(a_shape)
    b = stream.ring_elements(b_shape)
    c = stream.ring_elements(c_shape)
    if session.is_last_holder:
        c += expect_array(session.party.recv(session.dealer), sender=session.dealer, shape=c_shape, dtype=_U)
    session.ledger.issue(ident, kind, (a_shape, b_shape))
    return Triple(ident, kind, a, b, c, session)


def truncation_pair(session: TensorSession, shape: tuple[int, ...], bits: int) -> TruncationPair | None:
    """Deal or receive one fresh truncation pair for dropping ``bits`` low bits."""
    if not (session.is_holder or session.is_dealer):
        return None
    if session.dealer_free:
        if session.offline is None:
            return None
        ident, r, r_shifted, msb_term = session.offline.take_truncation(shape, bits)
        session.stats.truncations += 1
        session.ledger.issue(ident, "truncation", (shape,), bits=bits)
        return TruncationPair(ident, r, r_shifted, msb_term, session)
    ident = session.next_op()
    session.stats.truncations += 1
    shift, top = _U(bits), _U(64 - bits)
    if session.is_dealer:
        r = np.zeros(shape, dtype=_U)
        s_sum = np.zeros(shape, dtype=_U)
        m_sum = np.zeros(shape, dtype=_U)
        for stream in session.dealer_streams(ident):
            r += stream.ring_elements(shape)
            s_sum += stream.ring_elements(shape)
            m_sum += stream.ring_elements(shape)
        shifted = r >> shift
        msb_term = (r >> _U(63)) << top
        session.party.send(session.holders[-1], [shifted - s_sum, msb_term - m_sum])
        return None
    stream = session.holder_stream(ident)
    r = stream.ring_elements(shape)
    r_shifted = stream.ring_elements(shape)
    msb_term = stream.ring_elements(shape)
    if session.is_last_holder:
        d_shift, d_msb = expect_array_list(
            session.party.recv(session.dealer), sender=session.dealer, shapes=[shape, shape], dtype=_U
        )
        r_shifted += d_shift
        msb_term += d_msb
    session.ledger.issue(ident, "truncation", (shape,), bits=bits)
    return TruncationPair(ident, r, r_shifted, msb_term, session)


@dataclass
class OperandMask:
    """Shares of the mask ``A`` of a left operand opened once (see :func:`protocols.tensor.ops.fix_left`).

    At the dealer ``a`` is the whole mask ``A``; at a holder it is its share.
    """

    ident: int
    a: NDArray[np.uint64]


def operand_mask(session: TensorSession, shape: tuple[int, ...]) -> OperandMask | None:
    """Deal or receive a uniform mask ``A`` for a left operand used in many products."""
    if not (session.is_holder or session.is_dealer):
        return None
    if session.dealer_free:
        if session.offline is None:
            return None
        ident, a = session.offline.take_mask(shape)
        session.ledger.issue(ident, "mask", (shape,))
        session.ledger.consume(ident)  # opened once, right away
        return OperandMask(ident, a)
    ident = session.next_op()
    if session.is_dealer:
        a_sum = np.zeros(shape, dtype=_U)
        for stream in session.dealer_streams(ident):
            a_sum += stream.ring_elements(shape)
        return OperandMask(ident, a_sum)
    session.ledger.issue(ident, "mask", (shape,))
    session.ledger.consume(ident)  # opened once, right away
    return OperandMask(ident, session.holder_stream(ident).ring_elements(shape))


def fixed_triple(session: TensorSession, mask: OperandMask | None, b_shape: tuple[int, ...]) -> Triple | None:
    """A fresh ``(B, C = A B)`` for the fixed mask ``A``; the returned triple is one-time as usual."""
    if mask is None:
        return None
    if session.dealer_free:
        if session.offline is None:
            return None
        ident, b, c = session.offline.take_fixed(mask.ident, b_shape)
        session.stats.triples += 1
        session.stats.triple_words += int(np.prod(c.shape))
        session.ledger.issue(ident, "fixed", (b_shape,), mask=mask.ident)
        return Triple(ident, "matmul", mask.a, b, c, session)
    ident = session.next_op()
    c_shape = (mask.a.shape[0], b_shape[1])
    session.stats.triples += 1
    session.stats.triple_words += int(np.prod(c_shape))
    if session.is_dealer:
        b_sum = np.zeros(b_shape, dtype=_U)
        c_sum = np.zeros(c_shape, dtype=_U)
        for stream in session.dealer_streams(ident):
            b_sum += stream.ring_elements(b_shape)
            c_sum += stream.ring_elements(c_shape)
        session.party.send(session.holders[-1], mask.a @ b_sum - c_sum)
        return None
    stream = session.holder_stream(ident)
    b = stream.ring_elements(b_shape)
    c = stream.ring_elements(c_shape)
    if session.is_last_holder:
        c += expect_array(session.party.recv(session.dealer), sender=session.dealer, shape=c_shape, dtype=_U)
    session.ledger.issue(ident, "fixed", (b_shape,), mask=mask.ident)
    return Triple(ident, "matmul", mask.a, b, c, session)
