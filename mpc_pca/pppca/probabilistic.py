"""Probabilistic PCA's model of a fitted PCA (scikit-learn's ``get_covariance``, ``get_precision``, ``score``).

A mixin for :class:`~mpc_pca.PPPCA`: everything here is computed locally from
its fitted attributes (``components_``, ``explained_variance_``,
``noise_variance_``, ``mean_``, ``scale_``, ``whiten``); no party is involved.
"""

from __future__ import annotations

from math import log, pi
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.base import transform_rows


class ProbabilisticPCAMixin:
    """scikit-learn ``PCA``'s probabilistic-PCA methods over the fitted attributes."""

    components_: NDArray[Any]
    explained_variance_: NDArray[Any]
    noise_variance_: float
    mean_: NDArray[Any]
    scale_: NDArray[Any] | None
    whiten: bool

    if TYPE_CHECKING:

        def _check_fitted(self) -> None:
            """The estimator's fitted check (:class:`~mpc_pca.base.SubspaceMixin`)."""

    def get_covariance(self) -> NDArray[np.float64]:
        """Covariance of the probabilistic PCA model, as scikit-learn's ``PCA.get_covariance``.

        ``components_.T @ diag(max(explained_variance_ - noise_variance_, 0))
        @ components_ + noise_variance_ * I`` (with ``whiten``, scikit-learn
        first multiplies each component by ``sqrt(explained_variance_)``; so
        does this).

        Returns
        -------
        ndarray of shape (n_features, n_features)
        """
        self._check_fitted()
        components = self._generative_components()
        excess = np.maximum(self.explained_variance_ - self.noise_variance_, 0.0)
        cov: NDArray[np.float64] = (components.T * excess) @ components
        cov[np.diag_indices_from(cov)] += self.noise_variance_
        return cov

    def get_precision(self) -> NDArray[np.float64]:
        """Inverse of :meth:`get_covariance` by the matrix inversion lemma (scikit-learn's ``get_precision``).

        Returns
        -------
        ndarray of shape (n_features, n_features)
        """
        from scipy.linalg import inv

        self._check_fitted()
        if self.noise_variance_ == 0.0:
            inverse: NDArray[np.float64] = inv(self.get_covariance())
            return inverse
        components = self._generative_components()
        excess = self.explained_variance_ - self.noise_variance_
        with np.errstate(divide="ignore"):
            inner = components @ components.T / self.noise_variance_
            inner[np.diag_indices_from(inner)] += 1.0 / np.where(excess > 0, excess, 0.0)
        precision: NDArray[np.float64] = components.T @ inv(inner) @ components
        precision /= -(self.noise_variance_**2)
        precision[np.diag_indices_from(precision)] += 1.0 / self.noise_variance_
        return precision

    def score_samples(self, X: Any) -> NDArray[np.float64]:
        """Log-likelihood of each row under the probabilistic PCA model (scikit-learn's ``score_samples``).

        Bishop, "Pattern Recognition and Machine Learning", 12.2.1. With
        ``standardize`` the rows are standardized first.

        Parameters
        ----------
        X : array_like of shape (n, d), or list of array_like or DataFrame
            Rows, or parts stacked in part order (as :meth:`transform`).

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        rows = transform_rows(self, X).astype(np.float64, copy=False) - self.mean_
        if self.scale_ is not None:
            rows = rows / self.scale_
        precision = self.get_precision()
        sign, logdet = np.linalg.slogdet(precision)
        logdet = logdet if sign > 0 else -np.inf
        log_like: NDArray[np.float64] = -0.5 * np.sum(rows * (rows @ precision), axis=1)
        log_like -= 0.5 * (rows.shape[1] * log(2.0 * pi) - logdet)
        return log_like

    def score(self, X: Any, y: None = None) -> float:
        """Average log-likelihood of the rows (scikit-learn's ``PCA.score``).

        Parameters
        ----------
        X : array_like of shape (n, d), or list of array_like or DataFrame
            Rows, or parts.
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return float(np.mean(self.score_samples(X)))

    def _generative_components(self) -> NDArray[np.float64]:
        """``components_``, times ``sqrt(explained_variance_)`` with ``whiten`` (scikit-learn's convention)."""
        if self.whiten:
            scaled: NDArray[np.float64] = self.components_ * np.sqrt(self.explained_variance_[:, np.newaxis])
            return scaled
        return np.asarray(self.components_, dtype=np.float64)


__all__ = ["ProbabilisticPCAMixin"]
