"""Behaviour shared by every estimator that ends with a fitted subspace.

The estimators are scikit-learn estimators (:class:`~sklearn.base.BaseEstimator`
parameters, repr and ``clone``; :class:`~sklearn.base.TransformerMixin`;
``check_is_fitted`` / ``NotFittedError``; ``feature_names_in_`` and
``get_feature_names_out``). Their data arrive either as a list with one
array (or DataFrame) per party, or as one array ``X`` with ``groups``
labelling each row's party (:func:`split_parts`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from mpc_pca.validation import align_columns
from protocols.errors import InputValidationError


def checked_data(estimator: BaseEstimator, X: Any, *, reset: bool, **kwargs: Any) -> NDArray[np.float64]:
    """scikit-learn's ``validate_data`` with its ``ValueError`` raised as :class:`InputValidationError`."""
    try:
        return validate_data(estimator, X, reset=reset, dtype=np.float64, **kwargs)
    except InputValidationError:
        raise
    except ValueError as exc:
        raise InputValidationError(str(exc)) from exc


def is_parts(X: object) -> bool:
    """Whether ``X`` is a list/tuple of per-party blocks, not a list of rows.

    A block is an array or DataFrame (it has a ``shape``) or a part read in
    chunks (it has ``n_features``; :mod:`mpc_pca.pppca.chunked`).
    """
    return isinstance(X, (list, tuple)) and all(hasattr(p, "shape") or hasattr(p, "n_features") for p in X)


def _names_of(part: object) -> list[str] | None:
    if hasattr(part, "n_features") and not hasattr(part, "shape"):
        return None  # a part read in chunks: its columns were chosen when it was opened
    columns = getattr(part, "columns", None)
    if columns is None:
        return None
    return [str(c) for c in columns]


def split_parts(
    estimator: BaseEstimator, X: Any, groups: ArrayLike | None
) -> tuple[list[Any], NDArray[np.object_] | None]:
    """Turn ``fit``'s input into one block per party; set ``n_features_in_``/``feature_names_in_``.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator being fitted (gets ``n_features_in_`` and, for named
        columns, ``feature_names_in_``).
    X : list of array_like or DataFrame, or array_like
        Either one ``(n_i, d)`` block per party (DataFrames are aligned by
        column name: a permutation is reordered, different names refused), or
        all rows in one ``(n, d)`` array.
    groups : array_like of shape (n,), optional
        With a single ``X``: each row's party; parties are taken in sorted
        label order. Without it, ``X`` is one party's rows.

    Returns
    -------
    parts : list
        One block per party (DataFrames converted to arrays).
    names : ndarray of str or None
        The feature names, if the input carried them.
    """
    if is_parts(X):
        if groups is not None:
            raise InputValidationError("pass groups only with a single X, not with a list of parts")
        if len(X) == 0:
            raise InputValidationError("parts is empty; at least one party must hold data")
        names = [_names_of(p) for p in X]
        if any(n is not None for n in names):
            if any(n is None for n in names):
                unnamed = [i for i, n in enumerate(names) if n is None]
                raise InputValidationError(f"parts {unnamed} have no column names but the others do")
            reference, orders = align_columns(names)  # type: ignore[arg-type]
            parts = [
                np.asarray(p.to_numpy() if order is None else p.iloc[:, order].to_numpy())
                for p, order in zip(X, orders, strict=True)
            ]
            feature_names = np.asarray(reference, dtype=object)
            estimator.feature_names_in_ = feature_names
        else:
            parts = list(X)
            feature_names = None
            if hasattr(estimator, "feature_names_in_"):
                del estimator.feature_names_in_
        width = getattr(parts[0], "n_features", None)
        shape = np.shape(parts[0]) if width is None else (None, width)
        if len(shape) == 2:  # otherwise the protocol's check_parts names the problem
            estimator.n_features_in_ = int(shape[1])
        return parts, feature_names
    arr = checked_data(estimator, X, reset=True, ensure_min_samples=2)
    feature_names = getattr(estimator, "feature_names_in_", None)
    if groups is None:
        return [arr], feature_names
    labels = np.asarray(groups)
    if labels.shape != (arr.shape[0],):
        raise InputValidationError(
            f"groups must have one label per row of X: shape ({arr.shape[0]},), got {labels.shape}"
        )
    return [arr[labels == g] for g in np.unique(labels)], feature_names


class SubspaceMixin(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """``transform``/``inverse_transform`` for estimators with ``components_`` and ``mean_``.

    Follows scikit-learn's conventions: parameters are set in ``__init__``
    only, ``fit`` returns ``self``, fitted attributes end in ``_``. When a
    fitted ``scale_`` is not ``None`` (standardized PCA) rows are divided by
    it after centring.
    """

    def _check_fitted(self) -> None:
        check_is_fitted(self, "components_")

    @property
    def _n_features_out(self) -> int:
        """Number of output features (``get_feature_names_out``)."""
        return int(self.components_.shape[0])

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Project rows onto the fitted components: ``((X - mean_) / scale_) @ components_.T``."""
        self._check_fitted()
        arr = checked_data(self, X, reset=False)
        centred = arr - self.mean_
        scale = getattr(self, "scale_", None)
        if scale is not None:
            centred = centred / scale
        return centred @ self.components_.T

    def inverse_transform(self, Z: ArrayLike) -> NDArray[np.float64]:
        """Map projected rows back to feature space: ``Z @ components_ * scale_ + mean_``."""
        self._check_fitted()
        arr = np.asarray(Z, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.components_.shape[0]:
            raise InputValidationError(f"Z must have shape (n, {self.components_.shape[0]}), got {arr.shape}")
        back = arr @ self.components_
        scale = getattr(self, "scale_", None)
        if scale is not None:
            back = back * scale
        return back + self.mean_

    def set_params(self, **params: Any) -> SubspaceMixin:
        """Set constructor parameters, scikit-learn style (an unknown name is an InputValidationError)."""
        valid = self.get_params(deep=False)
        for key in params:
            if key not in valid:
                raise InputValidationError(
                    f"invalid parameter {key!r} for {type(self).__name__}; valid: {sorted(valid)}"
                )
        return super().set_params(**params)

