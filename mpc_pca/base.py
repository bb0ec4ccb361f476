"""Behaviour shared by every estimator that ends with a fitted subspace.

The estimators are scikit-learn estimators (:class:`~sklearn.base.BaseEstimator`
parameters, repr and ``clone``; :class:`~sklearn.base.TransformerMixin`;
``check_is_fitted`` / ``NotFittedError``; ``feature_names_in_`` and
``get_feature_names_out``). Their data arrive either as a list with one
array (or DataFrame) per party, or as one array ``X`` with ``groups``
labelling each row's party (:func:`split_parts`).

Parameters are declared once per estimator class in ``_parameter_constraints``
(as scikit-learn's): a dict from each ``__init__`` parameter to a check
built from :func:`one_of`, :func:`integer`, :func:`real`, :func:`boolean`,
:func:`instance_of` or :func:`validated_by` (which wraps an existing
validator such as :func:`mpc_pca.dp.mechanisms.check_epsilon`).
:func:`validate_params` runs them all at the start of ``fit``, before any
party starts; each error names the parameter, the value and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

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
    dtype = np.float32 if all(b.dtype == np.float32 for b in blocks) else np.float64
    if any(issparse(b) for b in blocks):
        from scipy.sparse import vstack

        return vstack(blocks, format="csr", dtype=dtype)
    return np.vstack(blocks).astype(dtype, copy=False)


#: A parameter check: called with the parameter's name and value, raises
#: :class:`InputValidationError` naming both and what is allowed.
ParamCheck = Callable[[str, Any], None]


def one_of(*allowed: object) -> ParamCheck:
    """A parameter that must be one of ``allowed`` (strings, ``None``, ...)."""

    def check(name: str, value: Any) -> None:
        if not any(value is a or (type(value) is type(a) and value == a) for a in allowed):
            raise InputValidationError(f"{name}={value!r} is not supported; choose one of {list(allowed)}")

    return check


def integer(low: int | None = None, high: int | None = None, *, none: bool = False) -> ParamCheck:
    """An integer (not a bool) in ``[low, high]`` (either bound optional); ``None`` too if ``none``."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        is_integer = isinstance(value, Integral) and not isinstance(value, bool)
        if not is_integer or (low is not None and value < low) or (high is not None and value > high):
            bounds = [f">= {low}"] * (low is not None) + [f"<= {high}"] * (high is not None)
            allowed = (
                "an integer" + (" " + " and ".join(bounds) if bounds else "") + (" or None" if none else "")
            )
            raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def real(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    none: bool = False,
) -> ParamCheck:
    """A real number (not a bool, not NaN) between ``low`` and ``high``; open ends on request."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        ok = not isinstance(value, bool) and isinstance(value, Real) and not math.isnan(float(value))
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            bounds = []
            if low is not None:
                bounds.append(f"{'>' if low_open else '>='} {low:g}")
            if high is not None:
                bounds.append(f"{'<' if high_open else '<='} {high:g}")
            allowed = (
                "a real number"
                + (" " + " and ".join(bounds) if bounds else "")
                + (" or None" if none else "")
            )
            raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def n_components_check(*, rules: bool = False, none: bool = True) -> ParamCheck:
    """``n_components``: an integer >= 1 (or ``None`` if ``none``); with ``rules`` also a variance fraction or ``"mle"``.

    An integer below 1 gets scikit-learn's ``PCA`` wording ("must be between 1
    and min(n_samples, n_features)"); the upper limit is checked with the data
    (:func:`mpc_pca.validation.check_n_components`).

    Examples
    --------
    >>> n_components_check()("n_components", 0)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: n_components=0 is out of range; it must be between 1 and min(n_samples, n_features)
    """

    def check(name: str, value: Any) -> None:
        if (none and value is None) or (rules and isinstance(value, str) and value == "mle"):
            return
        if isinstance(value, Integral) and not isinstance(value, bool):
            if value < 1:
                raise InputValidationError(
                    f"{name}={value!r} is out of range; it must be between 1 and min(n_samples, n_features)"
                )
            return
        if rules and isinstance(value, float) and 0.0 < value < 1.0:
            return
        allowed = (
            "an integer >= 1, a variance fraction (a float > 0 and < 1), 'mle' or None"
            if rules
            else ("an integer >= 1 or None")
        )
        raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def boolean() -> ParamCheck:
    """``True`` or ``False`` (numpy booleans too)."""

    def check(name: str, value: Any) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise InputValidationError(f"{name} must be True or False, got {value!r}")

    return check


def instance_of(*types: type | None) -> ParamCheck:
    """An instance of one of ``types``; ``None`` in ``types`` allows ``None``."""

    def check(name: str, value: Any) -> None:
        if value is None and None in types:
            return
        classes = tuple(t for t in types if isinstance(t, type))
        if not isinstance(value, classes):
            allowed = " or ".join("None" if t is None else t.__name__ for t in types)
            raise InputValidationError(f"{name} must be {allowed}, got {value!r}")

    return check


def validated_by(validator: Callable[[Any], object], *, none: bool = False) -> ParamCheck:
    """Reuse an existing validator ``validator(value)`` (it raises naming the value and the limit)."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        try:
            validator(value)
        except InputValidationError as exc:
            if name in str(exc):
                raise
            raise type(exc)(f"{name}={value!r}: {exc}") from exc

    return check


def all_of(*checks: ParamCheck) -> ParamCheck:
    """Every one of ``checks`` must pass (in order)."""

    def check(name: str, value: Any) -> None:
        for one in checks:
            one(name, value)

    return check


def validate_params(estimator: BaseEstimator) -> None:
    """Check every constructor parameter of ``estimator`` against its class's ``_parameter_constraints``.

    Raises
    ------
    InputValidationError
        Naming the parameter, its value and what is allowed.
    TypeError
        If the class leaves a parameter undeclared (a bug in the class, not in the input).
    """
    constraints: dict[str, ParamCheck] = getattr(type(estimator), "_parameter_constraints", {})
    params = estimator.get_params(deep=False)
    undeclared = sorted(set(params) - set(constraints))
    if undeclared:
        raise TypeError(f"{type(estimator).__name__} declares no constraint for parameters {undeclared}")
    for name, check in constraints.items():
        check(name, params[name])


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
