"""The PPPCA estimator: scikit-learn front end of :mod:`mpc_pca.pppca.driver`.

Liu et al., "Privacy Preserving PCA for Multiparty Modeling", AAAI 2020,
Algorithms 1 (Paillier) and 2 (secret sharing): ``fit`` runs steps 1-8,
``fit_transform`` also steps 9-10.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.base import ParamCheck, SubspaceMixin, boolean, instance_of, integer, real, validated_by
from mpc_pca.pppca.components import ComponentsSettings, check_reveal
from mpc_pca.pppca.driver import run_pppca
from protocols.backends import SecureSumBackend, make_backend
from protocols.errors import InputValidationError
from protocols.runtime import check_timeout


def resolve_backend(backend: str | SecureSumBackend) -> SecureSumBackend:
    """Accept a backend object or its command-line name."""
    if isinstance(backend, SecureSumBackend):
        return backend
    if isinstance(backend, str):
        return make_backend(backend)
    raise InputValidationError(
        f"backend must be a SecureSumBackend or a backend name, got {type(backend).__name__}"
    )


class PPPCA(SubspaceMixin):
    """Privacy-preserving PCA over horizontally partitioned data (Liu et al., AAAI 2020).

    Parameters
    ----------
    n_components : int, optional
        Number of components ``k``; ``None`` keeps ``min(n_samples, n_features)``.
    backend : str or SecureSumBackend, default="additive"
        ``"additive"`` (Alg. 2, share distribution), ``"additive-masks"``,
        ``"paillier"`` (Alg. 1) or ``"crypten"``, or a backend object.
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    reveal : {"covariance", "components"}, default="covariance"
        ``"covariance"`` is the paper's protocol: the server reconstructs the
        covariance matrix. ``"components"`` keeps it secret-shared among the
        providers; they compute the top-k eigenvectors on shares with the
        server as dealer (:mod:`mpc_pca.pppca.components`), and the server
        learns only the components, their eigenvalues and the total variance.
    eigengap : float, default=0.1
        ``reveal="components"``: assumed lower bound on
        ``1 - lambda_{k+1} / lambda_k``; sets the number of iterations
        (:func:`protocols.tensor.eig.plan_iterations`).
    min_ratio : float, default=0.01
        ``reveal="components"``: assumed lower bound on the share of the total
        variance the k-th component explains; sets the orthonormalization steps.
    tol : float, default=1e-6
        ``reveal="components"``: target tangent of the angle between the
        computed and the true top-k subspace.
    standardize : bool, default=False
        Divide every column by its pooled standard deviation before the
        eigendecomposition: scikit-learn's ``StandardScaler`` followed by
        ``PCA`` on the pooled rows. The server takes the variances from the
        diagonal of the pooled Gram matrix it reconstructs anyway
        (:mod:`mpc_pca.pppca.standardize`); the providers learn them through
        the projection they receive. Not with ``reveal="components"``, which
        keeps that diagonal secret.

    Attributes
    ----------
    components_ : ndarray of shape (k, d)
        Principal axes, largest-magnitude entry of each positive
        (scikit-learn's ``svd_flip`` convention for ``PCA``).
    explained_variance_ : ndarray of shape (k,)
        Eigenvalues of the sample covariance (denominator ``N - 1``), of the
        standardized columns if ``standardize``.
    explained_variance_ratio_ : ndarray of shape (k,)
        Share of the total variance each component explains.
    mean_ : ndarray of shape (d,)
        Pooled feature means.
    scale_ : ndarray of shape (d,) or None
        Pooled standard deviations (population, as ``StandardScaler.scale_``;
        1 for a constant column) if ``standardize``, else ``None``.
    n_samples_ : int
        Total rows over all parties.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Column names, when the data came as DataFrames.
    n_components_ : int
        Number of components kept.
    variance_error_bound_ : float
        Largest change fixed-point rounding can cause in any eigenvalue.
    component_error_bounds_ : ndarray of shape (k,)
        Largest change rounding can cause in any entry of each component
        (Davis-Kahan; large when eigenvalues are close: see
        :func:`~mpc_pca.pppca.bounds.rounding_error_bounds`).
    report_ : dict
        Per-role traffic and wall time: bytes and messages sent/received,
        rounds, seconds.
    model_ : PPPCAModel
        The server's output as computed in step 8.

    Examples
    --------
    >>> import numpy as np
    >>> from mpc_pca import PPPCA
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(50, 4)), rng.normal(size=(30, 4))]
    >>> PPPCA(n_components=2).fit(parts).components_.shape
    (2, 4)
    >>> secure = PPPCA(n_components=2, reveal="components").fit(parts)
    >>> bool(np.allclose(secure.explained_variance_, PPPCA(n_components=2).fit(parts).explained_variance_))
    True
    >>> X, groups = np.vstack(parts), np.repeat([0, 1], [50, 30])
    >>> PPPCA(n_components=2, standardize=True).fit(X, groups=groups).scale_.shape
    (4,)
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = {
        "n_components": integer(1, none=True),
        "backend": instance_of(str, SecureSumBackend),
        "timeout": validated_by(check_timeout),
        "reveal": validated_by(check_reveal),
        "eigengap": real(0.0, 1.0, low_open=True, high_open=True),
        "min_ratio": real(0.0, 1.0, low_open=True),
        "tol": real(0.0, low_open=True),
        "standardize": boolean(),
    }

    def __init__(
        self,
        n_components: int | None = None,
        *,
        backend: str | SecureSumBackend = "additive",
        timeout: float = 120.0,
        reveal: str = "covariance",
        eigengap: float = 0.1,
        min_ratio: float = 0.01,
        tol: float = 1e-6,
        standardize: bool = False,
    ) -> None:
        self.n_components = n_components
        self.backend = backend
        self.timeout = timeout
        self.reveal = reveal
        self.eigengap = eigengap
        self.min_ratio = min_ratio
        self.tol = tol
        self.standardize = standardize

    def fit(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> PPPCA:
        """Run PPPCA steps 1-8 over the parties' data; no rows leave any party.

        Parameters
        ----------
        X : list of array_like or DataFrame, or array_like of shape (n, d)
            One ``(n_i, d)`` block per data provider (DataFrames are aligned
            by column name), or all rows with ``groups``.
        y : None
            Ignored.
        groups : array_like of shape (n,), optional
            With a single ``X``: the provider of each row (one provider if omitted).

        Returns
        -------
        self
        """
        self._fit(X, groups, with_consumer=False)
        return self

    def fit_transform(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> NDArray[np.float64]:
        """Run the whole protocol (steps 1-10); return the data consumer's ``X T``.

        Rows are stacked in provider order, each provider's rows in their
        order; with ``groups``, returned in the rows' original order.
        """
        projection = self._fit(X, groups, with_consumer=True)
        assert projection is not None  # with_consumer=True always yields the projection
        if groups is None or getattr(self, "_group_order", None) is None:
            return projection
        out = np.empty_like(projection)
        out[self._group_order] = projection
        return out

    def _fit(self, X: Any, groups: ArrayLike | None, *, with_consumer: bool) -> NDArray[np.float64] | None:
        parts = self._intake(X, groups)
        backend = resolve_backend(self.backend)
        settings = ComponentsSettings(eigengap=self.eigengap, min_ratio=self.min_ratio, tol=self.tol)
        self._group_order = None
        if groups is not None:
            labels = np.asarray(groups)
            self._group_order = np.concatenate([np.flatnonzero(labels == g) for g in np.unique(labels)])
        model, projection, run = run_pppca(
            parts,
            self.n_components,
            backend,
            with_consumer=with_consumer,
            timeout=self.timeout,
            reveal=check_reveal(self.reveal),
            components=settings,
            standardize=bool(self.standardize),
        )
        self.mean_ = model.mean
        self.scale_ = model.scale
        self.n_samples_ = model.n_samples
        self.components_ = model.components
        self.n_components_ = model.components.shape[0]
        self.n_features_in_ = model.components.shape[1]
        self.explained_variance_ = model.explained_variance
        self.explained_variance_ratio_ = model.explained_variance_ratio
        self.variance_error_bound_ = model.variance_error_bound
        self.component_error_bounds_ = model.component_error_bounds
        self.report_ = run.report_dict()
        self.model_ = model
        return projection
