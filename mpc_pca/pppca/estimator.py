"""The PPPCA estimator: scikit-learn front end of the PPPCA protocol object (:mod:`mpc_pca.pppca.deployment`).

Liu et al., "Privacy Preserving PCA for Multiparty Modeling", AAAI 2020,
Algorithms 1 (Paillier) and 2 (secret sharing): ``fit`` runs steps 1-8,
``fit_transform`` also steps 9-10.
"""

from __future__ import annotations

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
    one_of,
    real,
    validated_by,
)
from mpc_pca.deployment import Deployment
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.pppca.components import (
    MAX_EIGENGAP,
    MIN_EIGENGAP,
    ComponentsSettings,
    backend_engine,
    check_eigensolver,
    check_reveal,
)
from mpc_pca.pppca.dealer_free import DEALERS, check_dealer
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.pppca.probabilistic import ProbabilisticPCAMixin
from mpc_pca.pppca.protocol import PPPCAModel
from mpc_pca.pppca.randomized import (
    RANDOMIZED,
    components_for,
    randomized_settings,
    resolve_solver,
    shape_of,
    start_seed,
    store_randomized,
)
from mpc_pca.pppca.sklearn_params import arpack_components, as_pca, plain
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


class PPPCA(SubspaceMixin, ProbabilisticPCAMixin, ProtocolEstimator):
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
        ``"spectrum"`` refuse them (``k`` is fixed before the secure eigensolve),
        and so does ``svd_solver="randomized"`` (``None`` there is ``min(N, d)``).
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
    dealer : {"server", "providers"}, default="server"
        Hidden modes (not Krylov, native engine): who makes the secure
        eigensolve's Beaver triples and truncation pairs. ``"server"`` deals them (it must not
        collude with any provider); ``"providers"`` make them among themselves in an offline
        phase (:mod:`mpc_pca.pppca.dealer_free`), so no coalition short of all providers knows a
        mask (docs/explanation/trust-model.md).
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
        ``"randomized"`` runs ``pppca-randomized`` (wide data: randomized
        subspace iteration, one secure sum of a ``d x (k + n_oversamples)``
        block per product, no ``d x d`` matrix; the server, or ``provider0``
        with ``iterates="sites"``, sees those products ``C Q``); ``"full"``, ``"covariance_eigh"`` and ``"arpack"`` the exact
        covariance path (``"arpack"`` with scikit-learn's ARPACK range of
        ``n_components``: an integer ``1 <= k < min(N, d)``, ``None`` meaning
        ``min(N, d) - 1``); ``"auto"`` randomized from
        :data:`~mpc_pca.pppca.randomized.AUTO_MIN_FEATURES` columns on when the
        other settings allow it, with a
        :class:`~mpc_pca.pppca.randomized.SolverChoiceWarning`
        (:mod:`mpc_pca.pppca.randomized`; ``svd_solver_`` says which ran).
    iterated_power : int >= 0 or "auto", default="auto"
        Randomized: at most ``iterated_power + 1`` products (``"auto"``: 7 if
        ``k < 0.1 min(N, d)``, else 4, scikit-learn's); ``tol > 0`` may stop earlier.
    n_oversamples : int >= 1, default=10
        Randomized: columns of the block beyond ``k``.
    random_state : int, RandomState instance or None, default=None
        Randomized: the **public** seed of the start block (an int is used as
        is; else a seed is drawn from it). Not a secret: every party derives
        the block from it.
    iterates : {"server", "sites"}, default="server"
        Randomized: who leads the iterations and sees each product ``C Q``:
        the server, or ``"sites"`` (``provider0``; the server learns only the
        output). ``"sites"`` makes ``svd_solver="auto"`` randomized; the
        exact solvers refuse it (:mod:`mpc_pca.wide.roles`).
    power_iteration_normalizer : {"auto", "QR", "LU", "none"}, default="auto"
        Accepted as scikit-learn validates it, without effect: the randomized
        solver re-orthonormalises by QR at every product.

    Attributes
    ----------
    dropped_providers_ : list of str
        With ``dropout_threshold``: the providers whose rows are not in the model.
    svd_solver_ : {"covariance_eigh", "randomized"}
        The solver that ran (``"auto"`` resolved).
    solver_report_ : dict
        Randomized only: its stop rule (``stop``, ``n_products``, ``residual_bound``, ...).
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
        Largest change fixed-point rounding can cause in any eigenvalue (exact path).
    component_error_bounds_ : ndarray of shape (k,)
        Exact path: largest change rounding can cause in any entry of each component
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

    With the exact path, scikit-learn's ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``random_state`` do not apply: the
    pooled covariance is eigendecomposed exactly (deterministic, nothing to
    seed). ``tol`` is the ``reveal="components"`` eigensolver's tolerance, and
    with ``svd_solver="randomized"`` its stop rule (``tol=0``: no early stop),
    not ARPACK's. ``copy`` does not apply: ``fit`` never changes the rows.
    With ``svd_solver="randomized"``, ``fit_transform`` returns the PC scores
    each site computed of its own rows (there is no consumer), and
    ``explained_variance_ratio_`` divides by the total variance the server
    learns in the mean phase (:mod:`mpc_pca.wide.roles`).
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = {
        "n_components": n_components_check(rules=True),
        "backend": instance_of(str, SecureSumBackend),
        "timeout": validated_by(check_timeout),
        "reveal": validated_by(check_reveal),
        "eigengap": real(MIN_EIGENGAP, MAX_EIGENGAP),
        "min_ratio": real(0.0, 1.0, low_open=True),
        "eigensolver": validated_by(check_eigensolver),
        "dealer": one_of(*DEALERS),
        "tol": as_pca(),
        "standardize": boolean(),
        "whiten": boolean(),
        "dropout_threshold": integer(2, none=True),
        **{name: as_pca() for name in ("copy", "svd_solver", "iterated_power", "n_oversamples")},
        **{name: as_pca() for name in ("power_iteration_normalizer", "random_state")},
        "iterates": one_of("server", "sites"),
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
        dealer: str = "server",
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
        iterates: str = "server",
    ) -> None:
        self.n_components = n_components
        self.backend = backend
        self.timeout = timeout
        self.reveal = reveal
        self.eigengap = eigengap
        self.min_ratio = min_ratio
        self.eigensolver = eigensolver
        self.dealer = dealer
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
        self.iterates = iterates

    def __sklearn_tags__(self) -> Any:
        """As :class:`~mpc_pca.base.SubspaceMixin`'s, but no sparse rows with ``svd_solver="randomized"``."""
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.svd_solver != RANDOMIZED
        return tags

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
        projection: NDArray[np.float64] | None
        if self._fit_solver == RANDOMIZED:  # each site computed its own rows' scores
            holders = run.protocol.data_holders(len(run.layout) - 1)
            projection = np.vstack([np.asarray(run.run.outputs[name]["scores"]) for name in holders])
        else:
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

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """Choose the solver from the settings and the rows (refusing what cannot run) and the start seed."""
        self._fit_solver = resolve_solver(self, parts, resolve_backend(self.backend).name)
        randomized = self._fit_solver == RANDOMIZED
        self._start_seed = start_seed(self.random_state) if randomized else None
        self._fit_components = components_for(self.n_components, parts) if randomized else None
        arpack = self.svd_solver == "arpack"  # the exact path, with scikit-learn's ARPACK range of k
        self._fit_n_components = (
            arpack_components(self.n_components, shape_of(parts)) if arpack else plain(self.n_components)
        )
        return parts

    def _protocol(self) -> Deployment:
        if getattr(self, "_fit_solver", None) == RANDOMIZED:
            # wide sits above pppca; pyproject's layers contract allows this one import
            from mpc_pca.wide.deployment import WideDeployment

            return WideDeployment()
        if self.tol == 0 and check_reveal(self.reveal) != "covariance":
            raise InputValidationError(
                f"tol=0 is invalid with reveal={self.reveal!r}: the secure eigensolver needs a tolerance > 0"
            )
        backend = resolve_backend(self.backend)
        name = "pppca-he" if backend.name == "paillier" else "pppca-ss"
        reveal = check_reveal(self.reveal)
        dealer = check_dealer(
            self.dealer, reveal=reveal, method=self.eigensolver, engine=backend_engine(backend)
        )
        components = ComponentsSettings(
            eigengap=self.eigengap,
            min_ratio=self.min_ratio,
            tol=self.tol,
            method=self.eigensolver,
            dealer=dealer,
        )
        return PPPCADeployment(
            name,
            lambda settings: backend,
            with_consumer=getattr(self, "_with_consumer", False),
            components=components,
        )

    def _settings(self) -> dict[str, Any]:
        if getattr(self, "_fit_solver", None) == RANDOMIZED:
            backend = resolve_backend(self.backend)
            return randomized_settings(
                self, int(self._start_seed or 0), backend, int(self._fit_components or 0)
            )
        return {
            "n_components": getattr(self, "_fit_n_components", self.n_components),
            "backend": resolve_backend(self.backend).name,
            "reveal": check_reveal(self.reveal),
            "dealer": self.dealer,
            "standardize": bool(self.standardize),
            **({} if self.dropout_threshold is None else {"dropout_threshold": self.dropout_threshold}),
        }

    def _store(self, run: ThreadsRun) -> None:
        """The fitted attributes of scikit-learn's ``PCA`` from the run's model, and its error bounds."""
        self.svd_solver_ = self._fit_solver
        if self._fit_solver == RANDOMIZED:
            store_randomized(self, run.output)
        else:
            self._store_exact(run.output)
        self.singular_values_ = np.sqrt(self.explained_variance_ * (self.n_samples_ - 1))
        rank = min(self.n_samples_, self.n_features_in_)
        discarded = float(run.output.total_variance) - float(np.sum(self.explained_variance_))
        self.noise_variance_ = (
            max(discarded, 0.0) / (rank - self.n_components_) if self.n_components_ < rank else 0.0
        )
        if self._fit_float32:  # scikit-learn keeps float32 fits float32; the protocol ran in float64
            for name in ("mean_", "components_", "explained_variance_", "explained_variance_ratio_"):
                setattr(self, name, getattr(self, name).astype(np.float32))
            self.singular_values_ = self.singular_values_.astype(np.float32)
            if self.scale_ is not None:
                self.scale_ = self.scale_.astype(np.float32)
        self.report_ = run.run.report_dict()
        self.model_ = run.output

    def _store_exact(self, model: PPPCAModel) -> None:
        """PPPCA steps 1-8's model (the exact path)."""
        for stale in ("total_variance_", "solver_report_", "product_error_bound_"):
            self.__dict__.pop(stale, None)
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
        self.variance_error_bound_ = model.variance_error_bound
        self.component_error_bounds_ = model.component_error_bounds

    def _output_scale(self) -> NDArray[np.float64] | None:
        """With ``whiten``: ``sqrt(explained_variance_)``, at least float64 epsilon (as scikit-learn)."""
        if not self.whiten:
            return None
        return np.maximum(np.sqrt(self.explained_variance_), np.finfo(self.explained_variance_.dtype).eps)


def _all_float32(X: Any) -> bool:
    """Whether ``fit``'s data are float32 (every part, when a list of parts)."""
    blocks = X if isinstance(X, (list, tuple)) and all(hasattr(p, "dtype") for p in X) else [X]
    return len(blocks) > 0 and all(getattr(b, "dtype", None) == np.float32 for b in blocks)
