"""A fixed-point tensor additively secret-shared over Z_2^64."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

if TYPE_CHECKING:
    from protocols.tensor.session import TensorSession


@dataclass(frozen=True)
class SharedTensor:
    """One member's handle on a secret-shared tensor.

    Holders carry their additive share; the dealer and observers carry only the
    (public) shape, as ``share=None``. Local operations (``+``, ``-``,
    transpose, slicing) need no communication and every member applies them
    to its own handle.

    Attributes
    ----------
    session : TensorSession
    share : ndarray of uint64 or None
        This holder's share; ``None`` at non-holders.
    shape : tuple of int
        Public shape.
    frac_bits : int
        Fractional bits of the encoding the shares sum to.
    """

    session: TensorSession
    share: NDArray[np.uint64] | None
    shape: tuple[int, ...]
    frac_bits: int

    def _like(self, share: NDArray[np.uint64] | None, shape: tuple[int, ...]) -> SharedTensor:
        return SharedTensor(self.session, share, tuple(shape), self.frac_bits)

    def _check_same(self, other: SharedTensor) -> None:
        if other.session is not self.session:
            raise InputValidationError("shared tensors belong to different sessions")
        if other.shape != self.shape:
            raise InputValidationError(f"shapes differ: {self.shape} vs {other.shape}")
        if other.frac_bits != self.frac_bits:
            raise InputValidationError(f"fractional bits differ: {self.frac_bits} vs {other.frac_bits}")

    def __add__(self, other: SharedTensor) -> SharedTensor:
        self._check_same(other)
        share = None if self.share is None or other.share is None else self.share + other.share
        return self._like(share, self.shape)

    def __sub__(self, other: SharedTensor) -> SharedTensor:
        self._check_same(other)
        share = None if self.share is None or other.share is None else self.share - other.share
        return self._like(share, self.shape)

    def __neg__(self) -> SharedTensor:
        share = None if self.share is None else np.negative(self.share)
        return self._like(share, self.shape)

    @property
    def T(self) -> SharedTensor:  # noqa: N802 - numpy spelling
        """Transpose (local)."""
        share = None if self.share is None else np.ascontiguousarray(self.share.T)
        return self._like(share, self.shape[::-1])

    def __getitem__(self, index: Any) -> SharedTensor:
        shape = np.empty(self.shape, dtype=np.bool_)[index].shape
        share = None if self.share is None else np.ascontiguousarray(self.share[index])
        return self._like(share, shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)
