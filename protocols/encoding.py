"""Fixed-point codec between float64 arrays and the ring Z_{2^64}.

A real ``x`` is represented by the integer ``round(x * 2^f) mod 2^64`` where
``f`` is the number of fractional bits. Ring elements are held in ``numpy.uint64``
so additions wrap modulo 2^64 for free. Decoding reads the element as a signed
two's-complement integer and divides by ``2^f``.

Summing ``m`` encoded values is exact as long as the true integer sum stays in
the signed range ``[-2^63, 2^63)``; :meth:`FixedPointCodec.encode` therefore
checks ``|x| * 2^f * m < 2^63`` for the number of summands ``m`` the caller
declares, and raises :class:`~protocols.errors.RingOverflowError` otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.errors import InputValidationError, RingOverflowError

RING_BITS = 64
_SIGNED_LIMIT = 2.0**63
_CAST_BLOCK = 1 << 15  # elements per in-place float -> int64 cast


def check_finite(x: NDArray[np.floating], name: str = "value") -> None:
    """Raise :class:`InputValidationError` if ``x`` holds NaN or infinity."""
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise InputValidationError(
            f"{name} contains a non-finite entry {float(x[tuple(bad)])} at index {tuple(bad.tolist())}; "
            "only finite numbers are accepted"
        )


class FixedPointCodec:
    """Encode float64 arrays as fixed-point elements of Z_{2^64}.

    Parameters
    ----------
    frac_bits : int, default=20
        Number of fractional bits ``f``. The resolution is ``2^-f`` and encoding
        rounds to the nearest multiple, so the encoding error is at most
        ``2^-(f+1)`` per entry.

    Notes
    -----
    The largest magnitude that ``m`` summands may each have is
    ``2^(63-f) / m`` (:meth:`max_abs`). With the default ``f = 20`` a single
    value may reach about 8.8e12.
    """

    def __init__(self, frac_bits: int = 20) -> None:
        if not isinstance(frac_bits, (int, np.integer)) or isinstance(frac_bits, bool):
            raise InputValidationError(f"frac_bits must be an integer, got {frac_bits!r}")
        if not 0 <= int(frac_bits) <= 52:
            raise InputValidationError(
                f"frac_bits={frac_bits} is out of range; it must be between 0 and 52 "
                "(float64 carries 53 significant bits)"
            )
        self.frac_bits = int(frac_bits)
        self.scale = float(2**self.frac_bits)

    def __repr__(self) -> str:
        return f"FixedPointCodec(frac_bits={self.frac_bits})"

    @property
    def resolution(self) -> float:
        """Distance between neighbouring representable values, ``2^-f``."""
        return 1.0 / self.scale

    def max_abs(self, n_summands: int = 1) -> float:
        """Largest magnitude each of ``n_summands`` values may have so their sum fits."""
        if n_summands < 1:
            raise InputValidationError(f"n_summands must be at least 1, got {n_summands}")
        return _SIGNED_LIMIT / self.scale / n_summands

    def check_range(self, x: NDArray[np.floating], n_summands: int = 1, name: str = "value") -> None:
        """Raise if ``x`` is not finite or ``n_summands`` copies of it could wrap around the ring.

        Raises
        ------
        InputValidationError
            For a NaN or infinite entry (named with its index).
        RingOverflowError
            For an entry too large for ``n_summands`` summands.
        """
        limit = self.max_abs(n_summands)
        if x.size == 0:
            return
        peak = max(float(np.max(x)), -float(np.min(x)))  # max |x| without a full-size temporary
        if not np.isfinite(peak):  # NaN or infinity somewhere: say where
            check_finite(x, name)
        # ``>=`` because rounding may push a value sitting exactly at the limit over it.
        if peak >= limit:
            raise RingOverflowError(
                f"{name} has an entry of magnitude {peak:.6g}, but with {n_summands} summand(s) "
                f"and {self.frac_bits} fractional bits each value must stay below {limit:.6g} "
                "so that the sum cannot leave the ring Z_2^64; rescale the data or lower frac_bits"
            )

    def encode(self, x: ArrayLike, n_summands: int = 1, name: str = "value") -> NDArray[np.uint64]:
        """Encode ``x`` into ring elements after checking finiteness and range.

        Parameters
        ----------
        x : array_like
            Real values.
        n_summands : int, default=1
            How many encoded values will be added together; the range check
            guarantees that such a sum cannot wrap around.
        name : str
            Name of the value, used in error messages.

        Returns
        -------
        numpy.ndarray of uint64
            Ring elements of the same shape as ``x``.
        """
        arr = np.asarray(x, dtype=np.float64)
        self.check_range(arr, n_summands, name)  # also rejects NaN and infinity
        # One buffer: scale, round in place, then cast in place to two's
        # complement, a cache-sized block at a time (a whole-array in-place cast
        # makes numpy allocate a full temporary for the overlap).
        flat = np.multiply(arr.reshape(-1), self.scale, out=np.empty(arr.size))
        np.rint(flat, out=flat)
        ring = flat.view(np.int64)
        for start in range(0, flat.size, _CAST_BLOCK):
            block = slice(start, start + _CAST_BLOCK)
            np.copyto(ring[block], flat[block], casting="unsafe")
        return ring.view(np.uint64).reshape(arr.shape)

    def decode(self, ring: NDArray[np.uint64]) -> NDArray[np.float64]:
        """Decode ring elements (two's complement) back to float64."""
        arr = np.asarray(ring)
        if arr.dtype != np.uint64:
            raise InputValidationError(f"ring elements must have dtype uint64, got {arr.dtype}")
        out = arr.view(np.int64).astype(np.float64)
        out /= self.scale  # in place: one output array
        return out
