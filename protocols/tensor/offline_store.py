"""An offline store of dealer-free correlated randomness: pools by kind and shape, each item used once.

The providers run :func:`generate_offline` before any data is read, for a
list of :class:`Request` (kind and shapes, the same list at every provider;
it depends only on ``d``, ``k``, ``M`` and the iteration budget: see
:mod:`protocols.tensor.offline_plan`). Each generated :class:`Item` keeps
its position in that list as its number. The engine then takes, for each
dealer-assisted operation of :mod:`protocols.tensor.correlated`, the next
unused item of the matching kind and shapes (:class:`OfflineStore`); every
provider runs the same control flow, so every provider takes the same item.
Pools rather than fixed numbers, because the computation's sequence is not
fixed in advance: the ladder eigensolver's squarings and early stop depend on
the data, so the plan holds the worst case and the leftovers are discarded.
A run that needs more than was made stops with :class:`OfflineExhaustedError`
before anything of that operation is sent; a second use of any number is
refused through a :class:`~protocols.tensor.session.RandomnessLedger`
(:class:`~protocols.errors.TripleReuseError`).

Kinds
    ``"mul"``, ``"matmul"``: Beaver triples (:func:`provider_triple`), shapes
    ``(a_shape, b_shape)``; ``"truncation"``: the 64 shared random bits of a
    truncation pair (:func:`~protocols.tensor.provider_truncation.shared_random_bits`),
    shapes ``(shape,)``; the bits to drop are chosen when the pair is taken
    (the ladder's normalising shifts depend on the data), and ``r``,
    ``r >> bits`` and ``msb(r) 2^(64-bits)`` follow linearly from the bits;
    ``"mask"``: a shared uniform operand mask (each provider's share is local
    randomness, no message), shapes ``(shape,)``; ``"fixed"``: a triple
    ``(B, A B)`` for the mask numbered ``mask``, shapes ``(b_shape,)``.

Measured cost and the 5-minute goal (issue 39, d = 100, k = 5, M = 3): see
:mod:`protocols.tensor.offline_cost`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
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
from protocols.tensor.provider_truncation import RING_BITS, pair_from_bits, shared_random_bits
from protocols.tensor.session import RandomnessLedger

RequestKind = Literal["mul", "matmul", "truncation", "mask", "fixed"]
Shape = tuple[int, ...]


@dataclass(frozen=True)
class Request:
    """One item of correlated randomness to generate (see the module docstring for the kinds)."""

    kind: RequestKind
    shapes: tuple[Shape, ...]
    mask: int = -1

    def __post_init__(self) -> None:
        expected = 2 if self.kind in ("mul", "matmul") else 1
        if self.kind not in ("mul", "matmul", "truncation", "mask", "fixed"):
            raise InputValidationError(f"unknown request kind {self.kind!r}")
        if len(self.shapes) != expected:
            raise InputValidationError(
                f"a {self.kind!r} request needs {expected} shape(s), got {self.shapes}"
            )
        if self.kind == "fixed" and self.mask < 0:
            raise InputValidationError("a 'fixed' request names the number of its mask")


@dataclass(frozen=True)
class Item:
    """A provider's shares of one generated item.

    ``arrays`` holds ``(A, B, C)`` for triples, ``(bits,)`` (shape
    ``(*shape, 64)``, bit ``t`` of ``r`` last) for truncation pairs, ``(A,)``
    for masks and ``(B, C)`` for fixed triples.
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
        return (shared_random_bits(group, (*request.shapes[0], RING_BITS)),)
    if request.kind == "mask":
        return (fresh_ring(request.shapes[0]),)
    if not 0 <= request.mask < len(made) or made[request.mask].request.kind != "mask":
        raise InputValidationError(f"'fixed' request names item {request.mask}, which is no earlier mask")
    return provider_fixed_triple(group, made[request.mask].arrays[0], request.shapes[0])


def generate_offline(
    group: ProviderGroup,
    requests: Sequence[Request],
    on_item: Callable[[int, int], None] | None = None,
) -> OfflineStore:
    """Generate every request in order with the other providers (collective: same list everywhere).

    ``on_item(done, total)`` is called after each item (e.g. to report progress).
    """
    items: list[Item] = []
    for ident, request in enumerate(requests):
        items.append(Item(ident, request, _generate_one(group, request, items)))
        if on_item is not None:
            on_item(ident + 1, len(requests))
    return OfflineStore(items)


class OfflineExhaustedError(ProtocolError):
    """The computation needs an item of a kind and shape of which the offline phase made too few."""


class OfflineStore:
    """A provider's generated items in pools by request, each item usable once.

    Parameters
    ----------
    items : sequence of Item
        Numbered ``0 .. len - 1`` in order.
    """

    def __init__(self, items: Sequence[Item]) -> None:
        self._items = list(items)
        self.ledger = RandomnessLedger()
        self._pools: dict[Request, deque[int]] = {}
        for position, item in enumerate(self._items):
            if item.ident != position:
                raise InputValidationError(
                    f"item #{position} is numbered {item.ident}; items must be 0, 1, 2, ..."
                )
            request = item.request
            self.ledger.issue(item.ident, request.kind, request.shapes, 0, request.mask)
            self._pools.setdefault(request, deque()).append(item.ident)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> tuple[Item, ...]:
        """Every item, taken or not, in number order (what :mod:`protocols.tensor.offline_file` saves)."""
        return tuple(self._items)

    @property
    def remaining(self) -> int:
        """Items not yet taken."""
        return len(self._items) - self.ledger.consumed

    def _take(self, wanted: Request) -> tuple[int, tuple[NDArray[np.uint64], ...]]:
        pool = self._pools.get(wanted)
        if not pool:
            made = sum(1 for item in self._items if item.request == wanted)
            raise OfflineExhaustedError(
                f"the computation asks for {wanted}, of which the offline phase made {made}, all used: "
                "the offline plan does not cover this run (a larger iteration budget, or other d, k, M?)"
            )
        ident = pool[0]
        self.ledger.consume(ident)
        pool.popleft()
        return ident, self._items[ident].arrays

    def take_triple(
        self, kind: Literal["mul", "matmul"], a_shape: Shape, b_shape: Shape
    ) -> tuple[int, NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
        """The next triple of this kind and shapes: its number and shares ``(A, B, C)``."""
        ident, (a, b, c) = self._take(Request(kind, (tuple(a_shape), tuple(b_shape))))
        return ident, a, b, c

    def take_truncation(
        self, shape: Shape, bits: int
    ) -> tuple[int, NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
        """The next truncation pair of this shape, for dropping ``bits``: number, ``r``, ``r >> bits``, msb term."""
        if not 1 <= bits < RING_BITS:
            raise InputValidationError(f"a truncation pair drops between 1 and 63 bits, got {bits}")
        ident, (shared_bits,) = self._take(Request("truncation", (tuple(shape),)))
        return (ident, *pair_from_bits(shared_bits, bits))

    def take_mask(self, shape: Shape) -> tuple[int, NDArray[np.uint64]]:
        """The next operand mask of this shape: its number and share."""
        ident, (a,) = self._take(Request("mask", (tuple(shape),)))
        return ident, a

    def take_fixed(self, mask: int, b_shape: Shape) -> tuple[int, NDArray[np.uint64], NDArray[np.uint64]]:
        """The next fixed triple ``(B, C = A B)`` for the mask numbered ``mask``: number, ``B``, ``C``."""
        ident, (b, c) = self._take(Request("fixed", (tuple(b_shape),), mask=mask))
        return ident, b, c
