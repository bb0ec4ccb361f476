"""The interface a product engine offers :mod:`protocols.tensor.ops` (and so the eigensolver).

Every operation of :mod:`protocols.tensor.ops` is written once. Local steps
(additions, public integer products, slicing) and the steps that only use the
run's metered channel (input sharing, the dealer's correlated randomness,
re-randomised reveals to named parties) are the same for every engine. Two
steps are delegated to ``session.engine`` when one is installed:

``open(arrays)``
    The holders learn the sums of their masked shares (one round); used by
    :func:`~protocols.tensor.ops.truncate` and the symmetric-matrix check.
``product(x, y, kind)``
    The untruncated secret x secret product (elementwise ``"mul"`` or
    ``"matmul"``), ``2 f`` fractional bits, with one dealer triple
    (Beaver's step: open ``X - A`` and ``Y - B``, combine locally).

``fixed_operands`` tells :func:`~protocols.tensor.ops.fix_left` whether the
engine can reuse one opened left operand for many products; an engine that
cannot (CrypTen's Beaver code opens both operands each time) gets plain
:func:`~protocols.tensor.ops.matmul` calls instead, with a fresh triple each.

With no engine (``session.engine is None``) the package's own openings over
the metered channel are used; :mod:`protocols.tensor.crypten_engine` provides
the CrypTen one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from protocols.tensor.shared import SharedTensor

Kind = Literal["mul", "matmul"]


class ProductEngine(Protocol):
    """What :mod:`protocols.tensor.ops` asks of a product engine (see the module docstring)."""

    name: str
    fixed_operands: bool

    def open(self, arrays: list[NDArray[np.uint64]]) -> list[NDArray[np.uint64]]:
        """At a holder: the sums over all holders of ``arrays`` (one round)."""
        ...

    def product(self, x: SharedTensor, y: SharedTensor, kind: Kind) -> SharedTensor:
        """At every member: ``x * y`` or ``x @ y`` with ``2 f`` fractional bits, untruncated."""
        ...
