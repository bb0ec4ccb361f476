"""Slot packing of Z_{2^64} ring elements into Paillier plaintexts.

One 2048-bit plaintext has room for many 64-bit fixed-point values. A
:class:`PackingLayout` puts ``slots`` values side by side, each in a field of
``slot_bits = 64 + headroom_bits`` bits::

    P = v_0 + v_1 2^b + v_2 2^(2b) + ... + v_(s-1) 2^((s-1) b),   b = slot_bits

with ``s = floor((key_bits - 1) / b)`` so that ``P < 2^(key_bits-1) <= n``.
Adding ``w`` packed plaintexts (homomorphically: multiplying ciphertexts)
adds slot by slot; as long as every slot sum stays below ``2^b`` no carry
reaches the neighbouring slot. Every slot holds less than ``2^64``, so the
sum of ``w <= 2^headroom_bits`` of them fits: ``capacity = 2^headroom_bits``
is the largest number of summands (more generally, the largest total
*weight*, the sum of the non-negative integer multipliers applied).

Offset encoding: a ring element ``x`` (two's complement) is stored as
``x + 2^63 mod 2^64``, i.e. its signed value plus ``2^63``. A slot sum over
``w`` summands is then ``sum(signed values) + w 2^63``, so the key holder
learns exactly the sum and nothing else. (Storing the raw unsigned words would
reveal ``sum + 2^64 * (number of negative summands)``: the count of negative
inputs per entry.) :meth:`PackingLayout.unpack` subtracts ``w 2^63`` and
reduces modulo ``2^64``, giving the ring sum.

Packing supports one non-negative integer scalar for all slots of a
ciphertext (it multiplies the weight); per-element scalars need the unpacked
representation (:mod:`protocols.paillier.arrays`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, RingOverflowError

RING_BITS = 64
SLOT_OFFSET = 1 << (RING_BITS - 1)
_RING_MASK = (1 << RING_BITS) - 1


class PackingOverflowError(RingOverflowError):
    """A packed slot would carry into its neighbour (more summands than the headroom allows)."""


def headroom_for(n_summands: int) -> int:
    """Headroom bits needed so that ``n_summands`` packed arrays can be added: ``ceil(log2 M)``."""
    if isinstance(n_summands, bool) or not isinstance(n_summands, (int, np.integer)) or n_summands < 1:
        raise InputValidationError(f"n_summands must be a positive integer, got {n_summands!r}")
    return (int(n_summands) - 1).bit_length()


@dataclass(frozen=True)
class PackingLayout:
    """How ring elements are laid out in the plaintexts of one key size.

    Parameters
    ----------
    key_bits : int
        Bit length of the Paillier modulus ``n``.
    headroom_bits : int
        Extra bits per slot above the 64 ring bits; ``2^headroom_bits`` packed
        arrays can be added without a carry between slots.

    Attributes
    ----------
    slot_bits : int
        ``64 + headroom_bits``.
    slots : int
        Slots per plaintext, ``floor((key_bits - 1) / slot_bits)``.
    capacity : int
        Largest total weight (number of summands) a packed ciphertext may carry.
    """

    key_bits: int
    headroom_bits: int

    def __post_init__(self) -> None:
        if self.headroom_bits < 0:
            raise InputValidationError(f"headroom_bits must be >= 0, got {self.headroom_bits}")
        if self.slots < 1:
            raise InputValidationError(
                f"a {self.key_bits}-bit key has no room for one {self.slot_bits}-bit slot "
                f"(64 ring bits + {self.headroom_bits} headroom bits)"
            )

    @classmethod
    def for_summands(cls, key_bits: int, n_summands: int) -> PackingLayout:
        """The densest layout that lets ``n_summands`` packed arrays be added."""
        return cls(int(key_bits), headroom_for(n_summands))

    @property
    def slot_bits(self) -> int:
        return RING_BITS + self.headroom_bits

    @property
    def slots(self) -> int:
        return (self.key_bits - 1) // self.slot_bits

    @property
    def capacity(self) -> int:
        return 1 << self.headroom_bits

    def plaintext_count(self, size: int) -> int:
        """Number of plaintexts (ciphertexts) that hold ``size`` ring elements."""
        return -(-int(size) // self.slots)

    def check_weight(self, weight: int) -> None:
        """Raise :class:`PackingOverflowError` if ``weight`` exceeds :attr:`capacity`."""
        if weight > self.capacity:
            raise PackingOverflowError(
                f"a packed ciphertext would carry weight {weight} (number of summands times scalars), "
                f"but {self.headroom_bits} headroom bit(s) per slot allow at most {self.capacity}; "
                "use a layout with more headroom"
            )

    def pack(self, ring: NDArray[np.uint64]) -> list[int]:
        """Pack ring elements (any shape, C order) into plaintext integers.

        Parameters
        ----------
        ring : ndarray of uint64
            Fixed-point ring elements, e.g. from
            :meth:`~protocols.encoding.FixedPointCodec.encode`.

        Returns
        -------
        list of int
            :meth:`plaintext_count` integers, each below ``2^(key_bits-1)``.
        """
        arr = np.asarray(ring)
        if arr.dtype != np.uint64:
            raise InputValidationError(f"packing takes uint64 ring elements, got dtype {arr.dtype}")
        words = (arr.ravel() ^ np.uint64(SLOT_OFFSET)).tolist()
        shift, slots = self.slot_bits, self.slots
        out = []
        for start in range(0, len(words), slots):
            packed = 0
            for word in reversed(words[start : start + slots]):
                packed = (packed << shift) | word
            out.append(packed)
        return out

    def unpack(self, plaintexts: Sequence[int], size: int, weight: int) -> NDArray[np.uint64]:
        """Recover the ring sum from decrypted plaintexts.

        Parameters
        ----------
        plaintexts : sequence of int
            Decrypted packed plaintexts.
        size : int
            Number of ring elements they hold.
        weight : int
            Number of packed arrays added together (times any scalar applied);
            it fixes the offset ``weight * 2^63`` to subtract.

        Returns
        -------
        ndarray of uint64, shape (size,)
            The slot-wise sums modulo ``2^64``.

        Raises
        ------
        PackingOverflowError
            If ``weight`` exceeds the capacity, or a slot or the bits above the
            last slot hold more than ``weight`` summands can produce (the
            plaintext was not made with this layout and weight).
        """
        if weight < 0:
            raise InputValidationError(f"weight must be non-negative, got {weight}")
        self.check_weight(weight)
        expected = self.plaintext_count(size)
        if len(plaintexts) != expected:
            raise InputValidationError(
                f"{size} packed values need {expected} plaintexts, got {len(plaintexts)}"
            )
        shift, mask = self.slot_bits, (1 << self.slot_bits) - 1
        ceiling = weight * _RING_MASK
        offset = weight * SLOT_OFFSET
        out: list[int] = []
        remaining = int(size)
        for index, plaintext in enumerate(plaintexts):
            value = int(plaintext)
            for _ in range(min(self.slots, remaining)):
                slot = value & mask
                if slot > ceiling:
                    raise PackingOverflowError(
                        f"slot {len(out)} holds {slot}, more than {weight} summand(s) of 64 bits can "
                        f"produce ({ceiling}); the plaintext does not match this layout or weight"
                    )
                out.append((slot - offset) & _RING_MASK)
                value >>= shift
            remaining -= self.slots
            if value:
                raise PackingOverflowError(
                    f"plaintext #{index} has bits set above its last slot; "
                    "it does not match this layout or weight"
                )
        return np.array(out, dtype=np.uint64)

    def describe(self) -> list[int]:
        """``[key_bits, headroom_bits]``: what a peer must agree on (sent on the wire)."""
        return [self.key_bits, self.headroom_bits]
