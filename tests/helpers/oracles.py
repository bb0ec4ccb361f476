"""Reference computations the tests compare protocol outputs against."""

from __future__ import annotations

import numpy as np


def align_signs(components: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Flip each row of ``components`` to point the same way as ``reference``'s row."""
    signs = np.sign(np.sum(components * reference, axis=1))
    signs[signs == 0] = 1.0
    return components * signs[:, None]


def ring_sum_reference(values, codec) -> np.ndarray:
    """What every secure-sum backend must return exactly: the ring sum of the encodings, decoded."""
    total = np.zeros(np.shape(values[0]), dtype=np.uint64)
    for value in values:
        total += codec.encode(value, n_summands=len(values))
    return codec.decode(total)
