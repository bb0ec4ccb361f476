"""Behaviour shared by every estimator that ends with a fitted subspace."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.validation import check_features_match
from protocols.errors import InputValidationError


class SubspaceMixin:
    """``transform``/``inverse_transform`` for estimators with ``components_`` and ``mean_``.

    Follows scikit-learn's conventions: parameters are set in ``__init__``
    only, ``fit`` returns ``self``, fitted attributes end in ``_``.
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise InputValidationError(f"this {type(self).__name__} is not fitted yet; call fit(parts) first")

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Project rows onto the fitted components: ``(X - mean_) @ components_.T``."""
        self._check_fitted()
        arr = check_features_match(X, self.components_.shape[1])
        return (arr - self.mean_) @ self.components_.T

    def inverse_transform(self, Z: ArrayLike) -> NDArray[np.float64]:
        """Map projected rows back to feature space: ``Z @ components_ + mean_``."""
        self._check_fitted()
        arr = np.asarray(Z, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.components_.shape[0]:
            raise InputValidationError(f"Z must have shape (n, {self.components_.shape[0]}), got {arr.shape}")
        return arr @ self.components_ + self.mean_

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, scikit-learn style."""
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: object) -> SubspaceMixin:
        """Set constructor parameters, scikit-learn style."""
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise InputValidationError(f"invalid parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self
