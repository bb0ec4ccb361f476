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

import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.row_norms import check_row_norms, clip_rows, clipped_hint, row_norms
from mpc_pca.validation import PrivacyLeakWarning, RowsClippedWarning
from protocols.errors import InputValidationError

ROW_NORM_MODES = ("clip", "error")


def bound_rows(
    parts: Sequence[NDArray[np.float64]], mode: str, *, first: int = 0
) -> list[NDArray[np.float64]]:
    """Apply the row-norm policy ``mode`` (``"clip"`` or ``"error"``) to every part.

    Warnings and errors name part ``i`` as site or part ``first + i`` (``first``: the
    index of the first part's site, for one site's own rows in a deployed run).
    """
    if mode not in ROW_NORM_MODES:
        raise InputValidationError(
            f"row_norm={mode!r} is not supported; choose one of {list(ROW_NORM_MODES)}"
        )
    if mode == "error":
        for i, part in enumerate(parts, start=first):
            check_row_norms(part, i)
        return list(parts)
    out = []
    for i, part in enumerate(parts, start=first):
        clipped, count = clip_rows(part)
        if count:
            # Emitted where the site's rows are processed; the count is never sent to a party.
            warnings.warn(
                f"site {i}: {count} of {part.shape[0]} rows had norm > 1 and were clipped to norm 1 "
                "before the DP noise (local information, not sent); utility metrics on these rows "
                f"describe the clipped data; {clipped_hint(count, part.shape[0])}",
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

    Warns
    -----
    PrivacyLeakWarning
        Always: a release from rows scaled this way is not differentially private.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise InputValidationError(f"expected a non-empty 2-D array, got shape {arr.shape}")
    warnings.warn(
        "row norms scaled by the pooled data's largest row norm (row_norm='scale', the papers' "
        "preprocessing) depend on every row: the release is NOT private; use row_norm='clip' or row_norm='error' "
        "for a private run",
        PrivacyLeakWarning,
        stacklevel=2,
    )
    centred = arr - arr.mean(axis=0)
    largest = float(row_norms(centred).max())
    return centred / largest if largest > 0 else centred
