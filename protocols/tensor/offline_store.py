"""An offline store of dealer-free correlated randomness, consumed once, in the ledger's numbering.

The providers run :func:`generate_offline` before any data is read: for a list
of :class:`Request` (kind and shapes, the same list at every provider; it
depends only on ``d``, ``k``, ``M`` and the iteration budget) each provider
gets its shares of every item, numbered ``0, 1, 2, ...`` in request order,
the numbers :meth:`~protocols.tensor.session.TensorSession.next_op` hands out
to the dealer-assisted operations of :mod:`protocols.tensor.correlated`
(``triple``, ``truncation_pair``, ``operand_mask`` and ``fixed_triple`` each
take one number). The engine then takes item ``t`` when it reaches operation
``t``: :class:`OfflineStore` checks the kind and shapes against the recorded
request (:class:`OfflineMismatchError` otherwise) and refuses a second use of
any number through a :class:`~protocols.tensor.session.RandomnessLedger`
(:class:`~protocols.errors.TripleReuseError`).

Kinds
    ``"mul"``, ``"matmul"``: Beaver triples (:func:`provider_triple`), shapes
    ``(a_shape, b_shape)``; ``"truncation"``: truncation pairs
    (:mod:`protocols.tensor.provider_truncation`), shapes ``(shape,)`` and
    ``bits``; ``"mask"``: a shared uniform operand mask (each provider's share
    is local randomness, no message), shapes ``(shape,)``; ``"fixed"``: a
    triple ``(B, A B)`` for the mask numbered ``mask``, shapes ``(b_shape,)``.

Measured cost and the 5-minute goal (issue 39, d = 100, k = 5, M = 3): see
:mod:`protocols.tensor.offline_cost`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError
from protocols.tensor.provider_products import (
    ProviderGroup,
    fresh_ring,
    provider_fixed_triple,
    provider_triple,
)
from protocols.tensor.provider_truncation import provider_truncation_pair
from protocols.tensor.session import RandomnessLedger

RequestKind = Literal["mul", "matmul", "truncation", "mask", "fixed"]
Shape = tuple[int, ...]


class OfflineMismatchError(ProtocolError):
    """The engine asked for an item that is not the one recorded under that number."""


@dataclass(frozen=True)
class Request:
    """One item of correlated randomness to generate (see the module docstring for the kinds)."""

    kind: RequestKind
    shapes: tuple[Shape, ...]
    bits: int = 0
    mask: int = -1

    def __post_init__(self) -> None:
        expected = 2 if self.kind in ("mul", "matmul") else 1
        if self.kind not in ("mul", "matmul", "truncation", "mask", "fixed"):
            raise InputValidationError(f"unknown request kind {self.kind!r}")
        if len(self.shapes) != expected:
            raise InputValidationError(
                f"a {self.kind!r} request needs {expected} shape(s), got {self.shapes}"
            )
        if self.kind == "truncation" and not 1 <= self.bits <= 63:
            raise InputValidationError(f"a truncation request drops 1 to 63 bits, got {self.bits}")
        if self.kind == "fixed" and self.mask < 0:
            raise InputValidationError("a 'fixed' request names the number of its mask")


@dataclass(frozen=True)
class Item:
    """A provider's shares of one generated item.

    ``arrays`` holds ``(A, B, C)`` for triples, ``(r, r >> bits, msb term)``
    for truncation pairs, ``(A,)`` for masks and ``(B, C)`` for fixed triples.
    """

    ident: int
    request: Request
    arrays: tuple[NDArray[np.uint64], ...]


def _generate_one(
    group: ProviderGroup, request: Request, made: Sequence[Item]
) -> tuple[NDArray[np.uint64], ...]:
    if request.kind in ("mul", "matmul"):
        kind: Literal["mul", "matmul"] = "mul" if request.kind == "mul" else "matmul"
        return provider_triple(group, kind, request.shapes[0], request.shapes[1])
    if request.kind == "truncation":
        return provider_truncation_pair(group, request.shapes[0], request.bits)
    if request.kind == "mask":
        return (fresh_ring(request.shapes[0]),)
    if not 0 <= request.mask < len(made) or made[request.mask].request.kind != "mask":
        raise InputValidationError(f"'fixed' request names item {request.mask}, which is no earlier mask")
    return provider_fixed_triple(group, made[request.mask].arrays[0], request.shapes[0])


def generate_offline(group: ProviderGroup, requests: Sequence[Request]) -> OfflineStore:
    """Generate every request in order with the other providers (collective: same list everywhere)."""
    items: list[Item] = []
    for ident, request in enumerate(requests):
        items.append(Item(ident, request, _generate_one(group, request, items)))
    return OfflineStore(items)


class OfflineStore:
    """A provider's generated items, each usable once, taken by number with its kind and shapes checked.

    Parameters
    ----------
    items : sequence of Item
        Numbered ``0 .. len - 1`` in order.
    """

    def __init__(self, items: Sequence[Item]) -> None:
        self._items = list(items)
        self.ledger = RandomnessLedger()
        for position, item in enumerate(self._items):
            if item.ident != position:
                raise InputValidationError(
                    f"item #{position} is numbered {item.ident}; items must be 0, 1, 2, ..."
                )
            request = item.request
            self.ledger.issue(item.ident, request.kind, request.shapes, request.bits, request.mask)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def remaining(self) -> int:
        """Items not yet taken."""
        return len(self._items) - self.ledger.consumed

    def _take(self, ident: int, wanted: Request) -> tuple[NDArray[np.uint64], ...]:
        if not 0 <= ident < len(self._items):
            raise OfflineMismatchError(
                f"correlated randomness number {ident} was not generated offline "
                f"(the store holds numbers 0 to {len(self._items) - 1})"
            )
        item = self._items[ident]
        if item.request != wanted:
            raise OfflineMismatchError(
                f"correlated randomness number {ident} was generated as {item.request}, "
                f"but the computation asks for {wanted}; the offline requests do not match this run"
            )
        self.ledger.consume(ident)
        return item.arrays

    def take_triple(
        self, ident: int, kind: Literal["mul", "matmul"], a_shape: Shape, b_shape: Shape
    ) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
        """Shares ``(A, B, C)`` of triple ``ident``."""
        a, b, c = self._take(ident, Request(kind, (tuple(a_shape), tuple(b_shape))))
        return a, b, c

    def take_truncation(
        self, ident: int, shape: Shape, bits: int
    ) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
        """Shares ``(r, r >> bits, msb(r) 2^(64-bits))`` of truncation pair ``ident``."""
        r, shifted, msb = self._take(ident, Request("truncation", (tuple(shape),), bits=bits))
        return r, shifted, msb

    def take_mask(self, ident: int, shape: Shape) -> NDArray[np.uint64]:
        """Share of operand mask ``ident``."""
        (a,) = self._take(ident, Request("mask", (tuple(shape),)))
        return a

    def take_fixed(
        self, ident: int, mask: int, b_shape: Shape
    ) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
        """Shares ``(B, C = A B)`` of fixed triple ``ident`` for the mask numbered ``mask``."""
        b, c = self._take(ident, Request("fixed", (tuple(b_shape),), mask=mask))
        return b, c
