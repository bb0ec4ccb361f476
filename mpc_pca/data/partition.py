"""Split a pooled data matrix into horizontal parts, one per simulated party."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


def split_rows(
    X: NDArray[np.float64],
    n_parties: int,
    how: Literal["even", "random"] = "even",
    seed: int | None = None,
) -> list[NDArray[np.float64]]:
    """Split the rows of ``X`` among ``n_parties`` parties.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    n_parties : int
        Number of parts, between 1 and ``n``.
    how : {"even", "random"}
        ``even``: contiguous blocks of near-equal size (``numpy.array_split``).
        ``random``: rows shuffled, then cut at random points so every party
        gets at least one row (uneven sizes).
    seed : int, optional
        Seed for ``random`` (a simulation choice, not a secret); a non-negative
        integer, as :func:`numpy.random.default_rng` takes.
    """
    n = X.shape[0]
    check_split_seed(seed)
    if isinstance(n_parties, bool) or not isinstance(n_parties, (int, np.integer)) or not 1 <= n_parties <= n:
        raise InputValidationError(
            f"parties={n_parties!r} is out of range; it must be between 1 and {n} (rows)"
        )
    if how == "even":
        return [np.ascontiguousarray(p) for p in np.array_split(X, n_parties)]
    if how == "random":
        rng = np.random.default_rng(seed)
        order = rng.permutation(n)
        cuts: NDArray[np.int64] | list[int] = (
            np.sort(rng.choice(np.arange(1, n), size=n_parties - 1, replace=False)) if n_parties > 1 else []
        )
        return [np.ascontiguousarray(X[idx]) for idx in np.split(order, cuts)]
    raise InputValidationError(f"unknown split {how!r}; choose 'even' or 'random'")


def check_split_seed(seed: object) -> None:
    """Refuse a seed of the random split that is not ``None`` or an integer >= 0 (naming it and the limit)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise InputValidationError(
            f"seed={seed!r} is out of range; the seed of the random split must be an integer >= 0"
        )
