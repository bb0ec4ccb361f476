"""Bounding row norms, as every differentially private PCA here assumes.

The papers write the data as a ``D x N`` matrix whose **columns** are samples
and assume ``||x_n||_2 <= 1`` for every column (ICASSP 2018 §2, JSTSP 2018 §2,
ICASSP 2016 §2). This package stores samples as **rows** (``N x D``), so the
same assumption reads: every row has Euclidean norm at most 1, and the
papers' ``A = X X^T / N`` is ``X^T X / N`` here.

Two ways to meet the assumption inside a protocol, each applied by a site to
its own rows (a per-row map, so the privacy guarantee is unchanged):

``"clip"``
    rows longer than 1 are scaled down to norm 1, shorter rows are untouched;
    each site that clips warns locally with the count
    (:class:`~mpc_pca.validation.RowsClippedWarning`);
``"error"``
    any row longer than 1 raises :class:`~protocols.errors.InputValidationError`.

The papers' own preprocessing, centring and dividing by the largest row norm
of the pooled data, uses the data themselves and is **not** differentially
private (ICASSP 2018 §4 says so); :func:`center_and_scale_non_private`
reproduces it for experiments only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.validation import RowsClippedWarning
from protocols.errors import InputValidationError

ROW_NORM_MODES = ("clip", "error")

# Rows whose norm exceeds 1 by less than this relative amount (round-off after
# scaling) are accepted as having norm 1.
_NORM_TOLERANCE = 1e-9


def _row_scales(X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Split every row as ``x = m u`` with ``m = max_i |x_i|`` and ``max_i |u_i| = 1`` (``u = 0`` if ``m = 0``).

    ``||u||`` lies in ``[1, sqrt(D)]`` for a nonzero row, so squaring ``u``
    can neither overflow nor underflow whatever the magnitude of ``x``.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise InputValidationError(f"expected a 2-D array of rows, got shape {arr.shape}")
    if arr.shape[1] == 0:
        return np.zeros(arr.shape[0]), arr.copy()
    largest = np.max(np.abs(arr), axis=1)
    safe = np.where(largest > 0, largest, 1.0)
    return largest, arr / safe[:, None]


def row_norms(X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Euclidean norm of every row, computed without overflow or underflow of the squares.

    Each row is divided by its largest absolute entry before squaring (as
    ``hypot`` does), so a row like ``[1e200, 1e200]`` has norm
    ``1.414e200``, not ``inf``; the result is ``inf`` only when the norm
    itself exceeds the largest float.
    """
    largest, unit = _row_scales(X)
    with np.errstate(over="ignore"):
        return largest * np.sqrt(np.einsum("ij,ij->i", unit, unit))


def clip_rows(X: NDArray[np.float64], bound: float = 1.0) -> tuple[NDArray[np.float64], int]:
    """Scale every row longer than ``bound`` down to norm ``bound``, keeping its direction.

    A clipped row is computed as ``bound * u / ||u||`` with ``u`` the row
    divided by its largest absolute entry, so rows of any finite magnitude
    (even with norm beyond the largest float) come out with norm ``bound``
    up to round-off, pointing in their original direction.

    Returns
    -------
    clipped : ndarray
        A new array; rows within the bound are copied unchanged.
    n_clipped : int
        How many rows were shortened.

    Raises
    ------
    InputValidationError
        If ``bound`` is not a positive finite number or ``X`` is not 2-D.
    """
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound < math.inf:
        raise InputValidationError(f"bound={bound!r} must be a positive finite number")
    largest, unit = _row_scales(X)
    unit_norms = np.sqrt(np.einsum("ij,ij->i", unit, unit))
    with np.errstate(over="ignore"):
        norms = largest * unit_norms
    over = norms > bound
    out = np.array(X, dtype=np.float64, copy=True)
    if np.any(over):
        out[over] = bound * unit[over] / unit_norms[over][:, None]
    return out, int(np.count_nonzero(over))


def check_row_norms(X: NDArray[np.float64], index: int, bound: float = 1.0) -> None:
    """Raise if a row of part ``index`` is longer than ``bound``, naming the row and its norm."""
    norms = row_norms(X)
    worst = int(np.argmax(norms)) if norms.size else 0
    if norms.size and norms[worst] > bound * (1.0 + _NORM_TOLERANCE):
        raise InputValidationError(
            f"part {index} row {worst} has Euclidean norm {norms[worst]:.6g} > {bound:g}; the DP "
            "sensitivities assume every row has norm <= 1. Rescale the data or pass row_norm='clip'"
        )


def bound_rows(parts: Sequence[NDArray[np.float64]], mode: str) -> list[NDArray[np.float64]]:
    """Apply the row-norm policy ``mode`` (``"clip"`` or ``"error"``) to every part."""
    if mode not in ROW_NORM_MODES:
        raise InputValidationError(
            f"row_norm={mode!r} is not supported; choose one of {list(ROW_NORM_MODES)}"
        )
    if mode == "error":
        for i, part in enumerate(parts):
            check_row_norms(part, i)
        return list(parts)
    out = []
    for i, part in enumerate(parts):
        clipped, count = clip_rows(part)
        if count:
            # Emitted where the site's rows are processed; the count is never sent to a party.
            warnings.warn(
                f"site {i}: {count} of {part.shape[0]} rows had norm > 1 and were clipped to norm 1 "
                "before the DP noise (local information, not sent); utility metrics on these rows "
                "describe the clipped data. Rescale the data so that rows have norm <= 1 to avoid it",
                RowsClippedWarning,
                stacklevel=3,
            )
        out.append(clipped)
    return out


def center_and_scale_non_private(X: ArrayLike) -> NDArray[np.float64]:
    """The papers' preprocessing: subtract the mean, divide by the largest row norm.

    ICASSP 2018 §4: "We preprocessed the data by subtracting the mean
    (centering) and normalizing the samples with the maximum L2 norm". This
    reads the pooled data and is **not differentially private**; use it to
    reproduce experiments, not in a deployment.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise InputValidationError(f"expected a non-empty 2-D array, got shape {arr.shape}")
    centred = arr - arr.mean(axis=0)
    largest = float(row_norms(centred).max())
    return centred / largest if largest > 0 else centred
