"""Behaviour shared by every estimator that ends with a fitted subspace.

The estimators are scikit-learn estimators (:class:`~sklearn.base.BaseEstimator`
parameters, repr and ``clone``; :class:`~sklearn.base.TransformerMixin`;
``check_is_fitted`` / ``NotFittedError``; ``feature_names_in_`` and
``get_feature_names_out``). Their data arrive either as a list with one
array (or DataFrame) per party, or as one array ``X`` with ``groups``
labelling each row's party (:func:`split_parts`).

Parameters are declared once per estimator class in ``_parameter_constraints``
(as scikit-learn's), with the checks of :mod:`mpc_pca.params`;
:func:`~mpc_pca.params.validate_params` runs them all at the start of ``fit``,
before any party starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from mpc_pca.params import (
    ParamCheck,
    all_of,
    boolean,
    instance_of,
    integer,
    n_components_check,
    one_of,
    real,
    validate_params,
    validated_by,
)
from mpc_pca.sparse_rows import centred_product
from mpc_pca.validation import align_columns
from protocols.errors import InputValidationError


def checked_data(
    estimator: BaseEstimator, X: Any, *, reset: bool, dtype: Any = np.float64, **kwargs: Any
) -> NDArray[Any]:
    """scikit-learn's ``validate_data`` with its ``ValueError`` raised as :class:`InputValidationError`.

    ``dtype`` is passed on (``[np.float64, np.float32]`` keeps float32 rows as
    float32, as scikit-learn's ``PCA.transform`` does). Sparse input is refused
    by ``validate_data`` with a ``TypeError`` that names ``.toarray()``.
    """
    try:
        return validate_data(estimator, X, reset=reset, dtype=dtype, **kwargs)
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
    accepts_sparse = bool(getattr(estimator, "_accepts_sparse", False))
    if isinstance(X, Iterator):  # a generator, map, zip, iter(...): one pass only, length unknown
        raise InputValidationError(
            f"X is a one-pass iterator ({type(X).__name__}); {type(estimator).__name__}.fit takes a list with "
            "one array per party or one array of rows, so nothing is consumed or dropped here: pass "
            "list(X) for parts (rows too large for memory: the parts of mpc_pca.pppca.chunked)"
        )
    if is_parts(X):
        if not accepts_sparse:
            refuse_sparse(X, type(estimator).__name__)
        if groups is not None:
            raise InputValidationError("pass groups only with a single X, not with a list of parts")
        return _split_list(estimator, X)
    if not accepts_sparse:
        refuse_sparse([X], type(estimator).__name__, "X")
    sparse_formats = ("csr", "csc") if accepts_sparse else False
    arr = checked_data(
        estimator, X, reset=True, ensure_min_samples=2, accept_sparse=sparse_formats, dtype=_fit_dtype(X)
    )
    feature_names = getattr(estimator, "feature_names_in_", None)
    if groups is None:
        return [arr], feature_names
    labels = np.asarray(groups)
    if labels.shape != (arr.shape[0],):
        raise InputValidationError(
            f"groups must have one label per row of X: shape ({arr.shape[0]},), got {labels.shape}"
        )
    return [arr[np.flatnonzero(labels == g)] for g in np.unique(labels)], feature_names


def _split_list(estimator: BaseEstimator, X: Sequence[Any]) -> tuple[list[Any], Any]:
    """:func:`split_parts` of a list of blocks: DataFrames aligned by column name, the width recorded."""
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


def _fit_dtype(X: Any) -> Any:
    """``fit``'s dtype for one array: sparse float32 rows stay float32 (the protocol widens what it sums)."""
    return [np.float64, np.float32] if issparse(X) else np.float64


def refuse_sparse(parts: Sequence[Any], estimator: str, what: str | None = None) -> None:
    """Refuse scipy.sparse parts for an estimator that cannot fit them, naming it and the alternatives.

    Only PPPCA fits sparse rows (:mod:`mpc_pca.sparse_rows`); the DP
    estimators clip and perturb dense rows, so they refuse them.
    """
    sparse = [i for i, p in enumerate(parts) if issparse(p)]
    if sparse:
        which = what or f"parts {sparse}"
        raise TypeError(
            f"{estimator} does not accept scipy.sparse input ({which} sparse); convert with .toarray() "
            "first, or use PPPCA, which fits sparse rows without densifying them"
        )


def transform_rows(estimator: BaseEstimator, X: Any, *, accept_sparse: bool = False) -> NDArray[Any]:
    """Validate the rows ``transform`` projects: one array, or the list of parts ``fit`` took.

    A list of parts (each 2-D: arrays or DataFrames) is stacked in part order,
    as ``fit_transform(parts)`` returns its rows; a DataFrame part whose
    columns are a permutation of ``feature_names_in_`` is reordered, as
    ``fit`` reorders it. float32 rows stay float32. With ``accept_sparse``
    scipy.sparse rows stay sparse (CSR or CSC; sparse parts are stacked as
    CSR with the dense ones).

    Raises
    ------
    TypeError
        For sparse input without ``accept_sparse`` (naming ``.toarray()``).
    InputValidationError
        For an empty list, a chunked part, or rows whose width or feature
        names differ from the fit's.
    """
    formats = ("csr", "csc") if accept_sparse else False
    if not (is_parts(X) and all(len(np.shape(p)) == 2 for p in X if hasattr(p, "shape"))):
        return checked_data(estimator, X, reset=False, dtype=[np.float64, np.float32], accept_sparse=formats)
    if not accept_sparse:
        refuse_sparse(X, type(estimator).__name__)
    blocks = _checked_blocks(estimator, X, formats)
    dtype = np.float32 if all(b.dtype == np.float32 for b in blocks) else np.float64
    if any(issparse(b) for b in blocks):
        from scipy.sparse import vstack

        return vstack(blocks, format="csr", dtype=dtype)
    return np.vstack(blocks).astype(dtype, copy=False)


class PartiesEstimator(BaseEstimator):
    """One intake for every estimator: declared parameters, then one block per party.

    Subclasses declare ``_parameter_constraints`` and start ``fit`` with
    ``parts = self._intake(X, groups)``.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = {}
    #: Whether ``fit`` takes scipy.sparse rows (PPPCA: :mod:`mpc_pca.sparse_rows`); the others refuse
    #: them by name (:func:`refuse_sparse`).
    _accepts_sparse: ClassVar[bool] = False

    def _intake(self, X: Any, groups: ArrayLike | None) -> list[Any]:
        """Validate the parameters, then split ``X`` into one block per party (:func:`split_parts`)."""
        validate_params(self)
        parts, _ = split_parts(self, X, groups)
        return parts

    def set_params(self, **params: Any) -> PartiesEstimator:
        """Set constructor parameters, scikit-learn style (an unknown name is an InputValidationError)."""
        valid = self.get_params(deep=False)
        for key in params:
            if key not in valid:
                raise InputValidationError(
                    f"invalid parameter {key!r} for {type(self).__name__}; valid: {sorted(valid)}"
                )
        return super().set_params(**params)

    @property
    def accountant_(self) -> Any:
        """The :class:`~protocols.dp.accounting.PrivacyAccountant` this estimator's last fit charged.

        The ``accountant`` parameter when given, else the estimator's own
        default accountant, kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`): its
        ``spent_budget`` lists every fit. A property, not a fitted attribute:
        a fit refused by the budget does not make the estimator look fitted.

        Raises
        ------
        AttributeError
            Before a fit has charged an accountant (and always for an estimator that is not DP).
        """
        charged = self.__dict__.get("_charged_accountant")
        if charged is None:
            raise AttributeError(
                f"{type(self).__name__} has charged no privacy accountant yet (fit it first; only the DP "
                "estimators charge one)"
            )
        return charged


class SubspaceMixin(ClassNamePrefixFeaturesOutMixin, TransformerMixin, PartiesEstimator):
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

    def __sklearn_tags__(self) -> Any:
        """scikit-learn tags: ``transform`` keeps float32 rows float32 (as ``PCA``); sparse rows if ``fit`` takes them."""
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = bool(self._accepts_sparse)
        return tags

    def _output_scale(self) -> NDArray[np.float64] | None:
        """Per-component divisor of the projection (whitening); ``None``: none."""
        return None

    def transform(self, X: Any) -> NDArray[Any]:
        """Project rows onto the fitted components: ``((X - mean_) / scale_) @ components_.T``.

        Parameters
        ----------
        X : array_like of shape (n, d), or list of array_like or DataFrame
            Rows to project; a list of parts (as ``fit`` takes them) is
            projected and stacked in part order. scipy.sparse rows are
            projected as ``X W - mean_ W`` without densifying them.

        Returns
        -------
        ndarray of shape (n, n_components_)
            float32 if the rows are float32, else float64.
        """
        self._check_fitted()
        arr = transform_rows(self, X, accept_sparse=True)
        return self._project(arr).astype(arr.dtype, copy=False)

    def _project(self, arr: NDArray[Any]) -> NDArray[np.float64]:
        """``((arr - mean_) / scale_) @ components_.T``, divided by :meth:`_output_scale`.

        Sparse rows: ``arr @ W - mean_ @ W`` with ``W = components_.T / scale_`` (the division
        by ``scale_`` moved onto the components; :func:`~mpc_pca.sparse_rows.centred_product`), no
        dense copy of the rows.
        """
        scale = getattr(self, "scale_", None)
        if issparse(arr):
            weights = self.components_.T if scale is None else self.components_.T / scale[:, np.newaxis]
            projected = centred_product(arr, self.mean_, weights)
        else:
            centred = arr - self.mean_
            if scale is not None:
                centred = centred / scale
            projected = centred @ self.components_.T
        divisor = self._output_scale()
        return projected if divisor is None else projected / divisor

    def inverse_transform(self, Z: ArrayLike) -> NDArray[np.float64]:
        """Map projected rows back to feature space: ``Z @ components_ * scale_ + mean_`` (undoing whitening)."""
        self._check_fitted()
        arr = np.asarray(Z, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.components_.shape[0]:
            raise InputValidationError(f"Z must have shape (n, {self.components_.shape[0]}), got {arr.shape}")
        divisor = self._output_scale()
        back = (arr if divisor is None else arr * divisor) @ self.components_
        scale = getattr(self, "scale_", None)
        if scale is not None:
            back = back * scale
        return back + self.mean_


def _checked_blocks(estimator: BaseEstimator, X: Sequence[Any], formats: Any) -> list[Any]:
    """:func:`transform_rows` of a list of parts: each checked, a permuted DataFrame put in the fit's order."""
    if len(X) == 0:
        raise InputValidationError("parts is empty; pass at least one block of rows to transform")
    chunked = [i for i, p in enumerate(X) if not hasattr(p, "shape")]
    if chunked:
        raise InputValidationError(
            f"parts {chunked} are read in chunks; transform takes arrays or DataFrames (the projection "
            "of a chunked part is fit_transform's, made by its provider)"
        )
    fitted = getattr(estimator, "feature_names_in_", None)
    fitted_names = None if fitted is None else [str(n) for n in fitted]
    blocks = []
    for part in X:
        names = _names_of(part)
        if fitted_names and names and names != fitted_names and sorted(names) == sorted(fitted_names):
            part = part.iloc[:, [names.index(n) for n in fitted_names]]
        blocks.append(
            checked_data(estimator, part, reset=False, dtype=[np.float64, np.float32], accept_sparse=formats)
        )
    return blocks


#: The parameter checks (:mod:`mpc_pca.params`) are importable from here too, beside the estimators' base.
__all__ = [
    "ParamCheck",
    "PartiesEstimator",
    "SubspaceMixin",
    "all_of",
    "boolean",
    "checked_data",
    "instance_of",
    "integer",
    "is_parts",
    "n_components_check",
    "one_of",
    "real",
    "refuse_sparse",
    "split_parts",
    "transform_rows",
    "validate_params",
    "validated_by",
]
