"""Row norms, clipping and the norm check that every differentially private protocol shares.

The DP sensitivities of this package assume every row has Euclidean norm at
most 1 (:mod:`mpc_pca.dp.preprocessing` explains why and how each protocol
meets it). These primitives sit below both protocol families, so that
pppca-dp (:mod:`mpc_pca.pppca.dp_sum`) and the DP family (:mod:`mpc_pca.dp`)
clip and check rows the same way. Norms are computed after dividing each row
by its largest absolute entry, so no square overflows or underflows whatever
the magnitude.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

#: Rows whose norm exceeds the bound by at most this relative amount are round-off
#: of data already scaled to the bound (``X /= norm.max()`` gives norms up to
#: ``1 + 2^-52``): they are accepted by :func:`check_row_norms` and rescaled by
#: :func:`clip_rows` without being counted, or warned about, as clipped.
NORM_TOLERANCE = 1e-9


#: A party clipping more than this share of its rows is told that its data are probably not
#: scaled for DP at all (the clip still keeps the guarantee, but the release describes
#: mostly clipped rows), with the ``row_norm`` options.
CLIP_SHARE_LIMIT = 0.10


def clipped_hint(count: int, total: int, row_norm_option: bool = True) -> str:
    """The advice a clipping warning ends with: stronger when more than :data:`CLIP_SHARE_LIMIT` of the rows were clipped.

    Examples
    --------
    >>> clipped_hint(1, 100)[:22]
    'Rescale the data so th'
    >>> clipped_hint(20, 100)[:40]
    'that is 20% of the rows, more than 10%: '

    ``row_norm_option=False``: the protocol always clips (pppca-dp), so the
    advice is only to rescale.
    """
    if total > 0 and count > CLIP_SHARE_LIMIT * total:
        refuse = ", or pass row_norm='error' to refuse rows longer than 1" if row_norm_option else ""
        return (
            f"that is {100 * count / total:.0f}% of the rows, more than {100 * CLIP_SHARE_LIMIT:.0f}%: "
            "the data are probably not scaled to norm <= 1, and the release describes the clipped rows. "
            f"Rescale every row to norm <= 1 before the run{refuse}"
        )
    return "Rescale the data so that every row has norm <= 1 to avoid clipping"


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

    Every row longer than ``bound`` is rescaled, so the bound holds exactly
    (the DP sensitivities assume it); a row longer by at most
    :data:`NORM_TOLERANCE` relative is round-off, not data, and is not
    counted.

    Returns
    -------
    clipped : ndarray
        A new array; rows within the bound are copied unchanged.
    n_clipped : int
        How many rows were longer than ``bound (1 + NORM_TOLERANCE)``.

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
    return out, int(np.count_nonzero(norms > bound * (1.0 + NORM_TOLERANCE)))


def check_row_norms(X: NDArray[np.float64], index: int, bound: float = 1.0) -> None:
    """Raise if a row of part ``index`` is longer than ``bound``, naming the row and its norm."""
    norms = row_norms(X)
    worst = int(np.argmax(norms)) if norms.size else 0
    if norms.size and norms[worst] > bound * (1.0 + NORM_TOLERANCE):
        raise InputValidationError(
            f"part {index} row {worst} has Euclidean norm {norms[worst]:.6g} > {bound:g}; the DP "
            "sensitivities assume every row has norm <= 1. Rescale the data or pass row_norm='clip'"
        )
