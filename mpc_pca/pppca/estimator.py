"""The PPPCA estimator: scikit-learn front end of the PPPCA protocol object (:mod:`mpc_pca.pppca.deployment`).

Liu et al., "Privacy Preserving PCA for Multiparty Modeling", AAAI 2020,
Algorithms 1 (Paillier) and 2 (secret sharing): ``fit`` runs steps 1-8,
``fit_transform`` also steps 9-10.
"""

from __future__ import annotations

from math import log, pi
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.base import (
    ParamCheck,
    SubspaceMixin,
    boolean,
    instance_of,
    integer,
    n_components_check,
    real,
    transform_rows,
    validated_by,
)
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.pppca.components import (
    MAX_EIGENGAP,
    MIN_EIGENGAP,
    ComponentsSettings,
    check_eigensolver,
    check_reveal,
)
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.pppca.protocol import PPPCAModel
from mpc_pca.pppca.sklearn_params import as_pca
from mpc_pca.threads import ThreadsRun
from protocols.backends import SecureSumBackend, make_backend
from protocols.errors import InputValidationError, ProtocolError
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


class PPPCA(SubspaceMixin, ProtocolEstimator):
    """Privacy-preserving PCA over horizontally partitioned data (Liu et al., AAAI 2020).

    Parameters
    ----------
    n_components : int, float, "mle" or None, default=None
        Number of components ``k``; ``None`` keeps ``min(n_samples, n_features)``.
        As in scikit-learn's ``PCA(svd_solver="full")``, a float in ``(0, 1)``
        keeps the fewest components whose explained variance ratio exceeds it,
        and ``"mle"`` chooses ``k`` by Minka's MLE (needs ``n_samples >=
        n_features``). Both are chosen by the server from the whole eigenvalue
        spectrum, so ``reveal="covariance"`` only: that server holds the whole
        covariance matrix anyway, so it learns nothing new; the providers learn
        ``k`` from the shape of ``T``. ``reveal="components"`` and
        ``"spectrum"`` refuse them (``k`` is fixed before the secure eigensolve).
    backend : str or SecureSumBackend, default="additive"
        ``"additive"`` (Alg. 2, share distribution), ``"additive-masks"``,
        ``"paillier"`` (Alg. 1) or ``"crypten"``, or a backend object.
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    reveal : {"covariance", "components", "spectrum"}, default="covariance"
        ``"covariance"`` is the paper's protocol: the server reconstructs the
        covariance matrix, and the providers' check that ``T`` is the top ``k``
        shows them its action on a few public directions (all of it when
        ``d - k`` is small, e.g. wine; docs/explanation/trust-model.md). ``"components"`` keeps it secret-shared among the
        providers; they compute the top-k eigenvectors on shares with the
        server as dealer (:mod:`mpc_pca.pppca.components`, tens of rounds), and
        the server learns only the components, their eigenvalues, the total
        variance and the public quantities of docs/secure_tensor.md section 8.
        ``"spectrum"`` (a handful of rounds) shows the server ``Q C Q^T`` for a
        Haar-random rotation ``Q`` it does not know: every eigenvalue
        (``model_.secure_eigensolve["spectrum"]``) and the top-k components, nothing
        else (docs/secure_tensor.md section 9).
    eigengap : float, default=0.1
        ``reveal="components"``: assumed lower bound on
        ``1 - lambda_{k+1} / lambda_k``, from ``1e-8`` to ``0.9``
        (:data:`~mpc_pca.pppca.components.MIN_EIGENGAP`,
        :data:`~mpc_pca.pppca.components.MAX_EIGENGAP`); sets the contraction the stopping
        rule assumes per iteration. A gap the revealed trace contradicts is refused
        (:func:`~mpc_pca.pppca.components.check_assumed_gap`).
    min_ratio : float, default=0.01
        ``reveal="components"`` with the CrypTen engine (the older subspace
        iteration): assumed lower bound on the share of the total variance the
        k-th component explains; sets the orthonormalization steps.
    eigensolver : {"subspace", "krylov"}, default="subspace"
        ``reveal="components"``, native engine: the ladder's subspace iteration or block
        Krylov (:mod:`protocols.tensor.krylov_eig`: about ``1 / sqrt(gap)`` blocks of five
        rounds; 42 rounds where the ladder needs 334 at a 0.75 % gap, benchmarks/bench_reveal.py).
    tol : float, default=1e-6
        ``reveal="components"``: target tangent of the angle between the
        computed and the true top-k subspace (the bound reached is
        ``model_.secure_eigensolve["achieved_tol"]``); must be > 0 there.
        Validated as scikit-learn's ``tol`` (a float >= 0); the other modes
        do not use it (see Notes).
    standardize : bool, default=False
        Divide every column by its pooled standard deviation before the
        eigendecomposition: scikit-learn's ``StandardScaler`` followed by
        ``PCA`` on the pooled rows. The server takes the variances from the
        diagonal of the pooled Gram matrix it reconstructs anyway
        (:mod:`mpc_pca.pppca.standardize`); the providers learn them through
        the projection they receive. Not with ``reveal="components"`` or
        ``"spectrum"``, which keep that diagonal secret.
    whiten : bool, default=False
        ``transform`` (and ``fit_transform``) divide each component by
        ``sqrt(explained_variance_)``; ``inverse_transform`` undoes it. The
        consumer still receives the unwhitened ``X T``; the division is local.
    dropout_threshold : int, optional
        Run step 1 as the dropout-tolerant secure sum (``backend="additive-masks"``
        only; :mod:`protocols.backends.dropout`): between organisations
        (``mpc-pca party`` with ``dropout_threshold=T``) the run survives providers
        that drop before their masked input arrives, as long as ``T`` remain.
        In-process no provider drops; the protocol, its extra round and its
        traffic are the same.
    copy : bool, default=True
        Accepted as scikit-learn's ``PCA`` accepts it; ``fit``,
        ``fit_transform`` and ``transform`` never change the rows given,
        whatever its value.
    svd_solver : {"auto", "full", "covariance_eigh", "arpack", "randomized"}, default="auto"
    iterated_power : int >= 0 or "auto", default="auto"
    n_oversamples : int >= 1, default=10
    power_iteration_normalizer : {"auto", "QR", "LU", "none"}, default="auto"
    random_state : int, RandomState instance or None, default=None
        scikit-learn's ``PCA`` solver parameters: accepted and validated as
        scikit-learn validates them (its wording), without effect (see
        Notes: the result is the same for every value).

    Attributes
    ----------
    dropped_providers_ : list of str
        With ``dropout_threshold``: the providers whose rows are not in the model.
    components_ : ndarray of shape (k, d)
        Principal axes, largest-magnitude entry of each positive
        (scikit-learn's ``svd_flip`` convention for ``PCA``).
    explained_variance_ : ndarray of shape (k,)
        Eigenvalues of the sample covariance (denominator ``N - 1``), of the
        standardized columns if ``standardize``.
    explained_variance_ratio_ : ndarray of shape (k,)
        Share of the total variance each component explains.
    singular_values_ : ndarray of shape (k,)
        Singular values of the centred pooled rows (of the standardized rows
        if ``standardize``): ``sqrt(explained_variance_ * (n_samples_ - 1))``.
    noise_variance_ : float
        Probabilistic PCA's noise variance, scikit-learn's definition: the mean
        of the ``min(n_samples, n_features) - k`` discarded eigenvalues, i.e.
        ``(total variance - sum(explained_variance_)) / (min(n, d) - k)``;
        0 when ``k = min(n, d)``. From the total variance (the trace), which
        the server learns in both modes.
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
    >>> PPPCA(n_components=0.9).fit(parts).n_components_
    4

    Notes
    -----
    Parity with scikit-learn's ``PCA(svd_solver="full")`` on the pooled rows:
    ``transform``, ``inverse_transform``, ``fit_transform``, ``score``,
    ``score_samples``, ``get_covariance``, ``get_precision`` and every fitted
    attribute above agree up to the fixed-point rounding
    (``variance_error_bound_``). ``transform`` also takes the list of parts
    ``fit`` took (rows stacked in part order) and keeps float32 rows float32;
    a fit on float32 rows has float32 attributes, as scikit-learn's (the
    protocol still computes in float64; ``model_`` keeps its float64 output).
    scipy.sparse rows (one CSR/CSC ``X``, or parts, sparse and dense mixed)
    are fitted without densifying them, as scikit-learn's
    ``PCA(svd_solver="covariance_eigh")`` does: each provider reads its column
    sums, column peaks and ``X^T X`` from the stored entries and the centring
    happens on the statistics; ``transform`` and ``fit_transform`` project
    them as ``X W - mean_ W`` (:mod:`mpc_pca.sparse_rows`). ``score`` and
    ``score_samples`` refuse them, as scikit-learn's. With ``standardize``,
    ``score``, ``score_samples``, ``get_covariance`` and ``get_precision`` are
    those of the standardized rows (``StandardScaler`` then ``PCA``).

    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``,
    ``n_oversamples``, ``power_iteration_normalizer`` and ``random_state`` are
    accepted and validated, but do not apply: no party holds the pooled rows
    those SVD solvers work on; the secure protocol computes one exact
    eigendecomposition of the pooled covariance the server reconstructs from
    the aggregated statistics (step 8; a symmetric eigensolver,
    deterministic, so nothing to seed), or with ``reveal="components"`` a
    secret-shared eigensolver runs on shares of it. Every value gives the same
    model (scikit-learn's ``svd_solver="full"`` or ``"covariance_eigh"``
    result). ``tol`` here is that secure eigensolver's tolerance, not
    ARPACK's. ``copy`` does not apply either: ``fit`` never changes the rows,
    so both values behave as scikit-learn's ``copy=True``.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = {
        "n_components": n_components_check(rules=True),
        "backend": instance_of(str, SecureSumBackend),
        "timeout": validated_by(check_timeout),
        "reveal": validated_by(check_reveal),
        "eigengap": real(MIN_EIGENGAP, MAX_EIGENGAP),
        "min_ratio": real(0.0, 1.0, low_open=True),
        "eigensolver": validated_by(check_eigensolver),
        "tol": as_pca(),
        "standardize": boolean(),
        "whiten": boolean(),
        "dropout_threshold": integer(2, none=True),
        **{name: as_pca() for name in ("copy", "svd_solver", "iterated_power", "n_oversamples")},
        **{name: as_pca() for name in ("power_iteration_normalizer", "random_state")},
    }
    _accepts_sparse: ClassVar[bool] = True

    def __init__(
        self,
        n_components: int | float | str | None = None,
        *,
        backend: str | SecureSumBackend = "additive",
        timeout: float = 120.0,
        reveal: str = "covariance",
        eigengap: float = 0.1,
        min_ratio: float = 0.01,
        eigensolver: str = "subspace",
        tol: float = 1e-6,
        standardize: bool = False,
        whiten: bool = False,
        dropout_threshold: int | None = None,
        copy: bool = True,
        svd_solver: str = "auto",
        iterated_power: int | str = "auto",
        n_oversamples: int = 10,
        power_iteration_normalizer: str = "auto",
        random_state: Any = None,
    ) -> None:
        self.n_components = n_components
        self.backend = backend
        self.timeout = timeout
        self.reveal = reveal
        self.eigengap = eigengap
        self.min_ratio = min_ratio
        self.eigensolver = eigensolver
        self.tol = tol
        self.standardize = standardize
        self.whiten = whiten
        self.dropout_threshold = dropout_threshold
        self.copy = copy
        self.svd_solver = svd_solver
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state

    def fit_transform(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> NDArray[np.float64]:
        """Run the whole protocol (steps 1-10); return the data consumer's ``X T``.

        Rows are stacked in provider order, each provider's rows in their
        order; with ``groups``, returned in the rows' original order.
        """
        self._with_consumer = True
        try:
            run = self._run(self._intake(X, groups))
        finally:
            self._with_consumer = False
        self._store(run)
        projection = run.protocol.projection(run.layout, run.run.outputs)
        if projection is None:  # pragma: no cover - a run with a consumer always has its rows
            raise ProtocolError("the consumer returned no projected rows")
        divisor = self._output_scale()
        if divisor is not None:
            projection = projection / divisor
        if self._fit_float32:
            projection = projection.astype(np.float32)
        if self._group_order is None:
            return projection
        out = np.empty_like(projection)
        out[self._group_order] = projection
        return out

    def _intake(self, X: Any, groups: ArrayLike | None) -> list[Any]:
        """The parts; also notes whether the rows are float32 and, with ``groups``, the rows' order."""
        self._fit_float32 = _all_float32(X)
        parts = super()._intake(X, groups)
        self._group_order = None
        if groups is not None:
            labels = np.asarray(groups)
            self._group_order = np.concatenate([np.flatnonzero(labels == g) for g in np.unique(labels)])
        return parts

    def _noise_seed(self) -> None:
        """None: PPPCA draws no noise, and ``random_state`` (scikit-learn's solver seed) seeds nothing."""
        return None

    def _protocol(self) -> PPPCADeployment:
        if self.tol == 0 and check_reveal(self.reveal) != "covariance":
            raise InputValidationError(
                f"tol=0 is invalid with reveal={self.reveal!r}: the secure eigensolver needs a tolerance > 0"
            )
        backend = resolve_backend(self.backend)
        name = "pppca-he" if backend.name == "paillier" else "pppca-ss"
        components = ComponentsSettings(
            eigengap=self.eigengap, min_ratio=self.min_ratio, tol=self.tol, method=self.eigensolver
        )
        return PPPCADeployment(
            name,
            lambda settings: backend,
            with_consumer=getattr(self, "_with_consumer", False),
            components=components,
        )

    def _settings(self) -> dict[str, Any]:
        return {
            "n_components": self.n_components,
            "backend": resolve_backend(self.backend).name,
            "reveal": check_reveal(self.reveal),
            "standardize": bool(self.standardize),
            **({} if self.dropout_threshold is None else {"dropout_threshold": self.dropout_threshold}),
        }

    def _store(self, run: ThreadsRun) -> None:
        """PPPCA steps 1-8's model: the fitted attributes of scikit-learn's ``PCA``, and the error bounds."""
        model: PPPCAModel = run.output
        self.mean_ = model.mean
        if self.dropout_threshold is not None:
            self.dropped_providers_ = list(model.dropped_providers or ())
        self.scale_ = model.scale
        self.n_samples_ = model.n_samples
        self.components_ = model.components
        self.n_components_ = model.components.shape[0]
        self.n_features_in_ = model.components.shape[1]
        self.explained_variance_ = model.explained_variance
        self.explained_variance_ratio_ = model.explained_variance_ratio
        self.singular_values_ = np.sqrt(model.explained_variance * (model.n_samples - 1))
        rank = min(model.n_samples, self.n_features_in_)
        discarded = model.total_variance - float(np.sum(model.explained_variance))
        self.noise_variance_ = (
            max(discarded, 0.0) / (rank - self.n_components_) if self.n_components_ < rank else 0.0
        )
        self.variance_error_bound_ = model.variance_error_bound
        self.component_error_bounds_ = model.component_error_bounds
        if self._fit_float32:  # scikit-learn keeps float32 fits float32; the protocol ran in float64
            for name in ("mean_", "components_", "explained_variance_", "explained_variance_ratio_"):
                setattr(self, name, getattr(self, name).astype(np.float32))
            self.singular_values_ = self.singular_values_.astype(np.float32)
            if self.scale_ is not None:
                self.scale_ = self.scale_.astype(np.float32)
        self.report_ = run.run.report_dict()
        self.model_ = model

    def _output_scale(self) -> NDArray[np.float64] | None:
        """With ``whiten``: ``sqrt(explained_variance_)``, at least float64 epsilon (as scikit-learn)."""
        if not self.whiten:
            return None
        return np.maximum(np.sqrt(self.explained_variance_), np.finfo(self.explained_variance_.dtype).eps)

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


def _all_float32(X: Any) -> bool:
    """Whether ``fit``'s data are float32 (every part, when a list of parts)."""
    blocks = X if isinstance(X, (list, tuple)) and all(hasattr(p, "dtype") for p in X) else [X]
    return len(blocks) > 0 and all(getattr(b, "dtype", None) == np.float32 for b in blocks)
