"""Centralized baselines that compare mechanisms: SN (retracted), PPM and PPCA (ICASSP 2016 §3).

Each runs the trusted-curator protocol of :mod:`mpc_pca.dp.curator` through
:class:`~mpc_pca.dp.baselines.CuratorPCA`, like AG and pooled PCA in
:mod:`mpc_pca.dp.baselines`:

* **SN** (ICASSP 2016, Alg. 1), **retracted, not DP**: ``X^T X + Z Z^T``.
* **PPM** (Hardt & Price 2014, Fig. 3; ICASSP 2016 §3): ``L`` noisy power
  iterations ``Y_l = A X_{l-1} + G_l``, ``X_l = QR(Y_l)``. The iteration
  count is a parameter and its default ``max(2, ceil(3 ln D))`` depends only
  on ``D``. ICASSP 2016 instead picks ``L = O(sigma_K / (sigma_K - sigma_{K+1}) log D)``
  from the data's singular values, which uses the private data outside the
  privacy budget; this package does not do that. The zCDP analysis gives
  ``(epsilon, delta)``-DP only for ``epsilon <= 8 (1 - 1/sqrt(2)) ln(1/delta)``
  (about ``2.343 ln(1/delta)``); larger finite ``epsilon`` is rejected before
  any party sends anything.
* **PPCA** (Chaudhuri, Sarwate & Sinha 2013; ICASSP 2016 §3): the exponential
  mechanism with utility ``tr(V^T X^T X V)`` (sensitivity 1 for unit-norm rows
  under either neighbour relation), i.e. a sample from the matrix Bingham
  density ``exp((epsilon/2) tr(V^T X^T X V))`` on the Stiefel manifold, drawn
  by Gibbs sampling (:func:`sample_matrix_bingham`). As the papers note,
  MCMC makes the sample, hence the guarantee, approximate.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from mpc_pca.base import ParamCheck, integer
from mpc_pca.dp.baselines import CuratorPCA
from mpc_pca.dp.bingham import sample_matrix_bingham
from mpc_pca.dp.common import (
    check_privacy,
    dp_constraints,
    refuse_accountant,
)
from mpc_pca.dp.curator import Mechanism, Release
from mpc_pca.dp.mechanisms import (
    RandomState,
    check_epsilon,
    check_power_method_privacy,
    gram_sensitivity,
    power_method_noise_scale,
    second_moment_sensitivity,
    warn_retracted_sn,
    wishart_noise_retracted_not_dp,
)
from mpc_pca.dp.power_method import default_power_iterations, private_power_method
from mpc_pca.linalg import flip_signs, top_eigenpairs
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant
from protocols.errors import InputValidationError

#: Smallest epsilon SN accepts: below it ``(Delta / (2 epsilon))^2`` overflows float64.
SN_MIN_EPSILON = 1e-100
#: Largest finite epsilon PPCA accepts: above it ``(epsilon / 2) X^T X`` can overflow float64.
PPCA_MAX_EPSILON = 1e100


class RetractedSNPCA(CuratorPCA):
    """SN, Wishart noise (Imtiaz & Sarwate ICASSP 2016, Alg. 1): RETRACTED, NOT differentially private.

    Its authors withdrew the privacy claim; it is here only to compare with
    the published curves. Every fit emits
    :class:`~mpc_pca.dp.mechanisms.RetractedMechanismWarning`.

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
        Sets the Wishart scale ``(Delta / (2 epsilon))^2 I`` (no privacy meaning).
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        ``Delta`` of the unnormalised ``X^T X``: ``sqrt(2)`` or 1 (the authors').
    row_norm, timeout
        As for :class:`AnalyzeGaussPCA`.
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    accountant : None
        Only ``None``: SN is not differentially private (its privacy claim was
        retracted), so there is no ``(epsilon, delta)`` an accountant could
        honestly charge; passing one is refused.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components are the eigenvectors of
    the Wishart-perturbed pooled second-moment matrix, computed from statistics aggregated over the
    parties (no party holds the pooled rows that scikit-learn's SVD solvers work on); ``copy`` does
    not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's only.
    ``random_state`` here seeds the DP noise, not a solver.
    """

    _protocol_name = "sn"
    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        accountant=refuse_accountant(
            "RetractedSNPCA is not differentially private (its privacy claim was retracted)"
        ),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        neighbour: str = "replace-one",
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        accountant: None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.neighbour = neighbour
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout
        self.accountant = accountant

    def _validate(self) -> None:
        eps, _, _ = check_privacy(self.epsilon, 0.5, self.neighbour)
        warn_retracted_sn(stacklevel=6)  # the caller of fit: fit, _run, _prepare, here
        if eps < SN_MIN_EPSILON:
            raise InputValidationError(
                f"epsilon={self.epsilon!r} is below {SN_MIN_EPSILON:g}: SN's Wishart noise, of entry scale "
                "(d + 1) (Delta / (2 epsilon))^2, would overflow a float"
            )

    def _mechanism(self, k: int) -> Mechanism:
        eps, _, relation = check_privacy(self.epsilon, 0.5, self.neighbour)
        sensitivity = gram_sensitivity(relation)

        def sn(A: NDArray[np.float64], n: int, rng: np.random.Generator) -> Release:
            noisy = n * A + wishart_noise_retracted_not_dp(A.shape[0], eps, rng, sensitivity, warn=False)
            values, components, _ = top_eigenpairs(noisy / n, k)
            return Release(components, values)

        return sn


class PrivatePowerMethodPCA(CuratorPCA):
    """PPM: the private power method (Hardt & Price 2014, Fig. 3) on the pooled data.

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
        Must satisfy ``epsilon <= 8 (1 - 1/sqrt(2)) ln(1/delta)`` (about
        ``2.343 ln(1/delta)``, the zCDP conversion's range); ``inf`` disables
        the noise (no privacy).
    delta : float, default=1e-5
    n_iter : int, optional
        ``L``; ``None`` uses :func:`default_power_iterations` (depends on ``D`` only,
        never on the private data).
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Per-iteration sensitivity ``sqrt(2)/N`` or ``1/N``.
    row_norm, timeout
        As for :class:`AnalyzeGaussPCA`.
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    accountant : PrivacyAccountant, optional
        Charged once per run, after the inputs are checked and before anything
        is sent: ``(epsilon, delta)`` and the ``rho = epsilon^2 / (8 ln(1/delta))``
        of the ``L`` Gaussian iterations together.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (K, D)
        ``X_L``'s columns as rows.
    explained_variance_ : ndarray of shape (K,)
        ``|diag(R_L)|``, the noisy eigenvalue estimates of the last iteration.
    n_iter_ : int
    noise_scale_ : float
        Per-iteration noise standard deviation.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components come from noisy power
    iterations on the pooled ``X^T X`` whose count ``n_iter`` the privacy analysis fixes (Hardt &
    Price 2014, Fig. 3); ``copy`` does not apply either (``fit`` never changes the rows) and
    ``whiten`` is PPPCA's only. ``random_state`` here seeds the DP noise, not a solver.
    """

    _protocol_name = "ppm"
    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "delta",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        "accountant",
        n_iter=integer(1, none=True),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        n_iter: int | None = None,
        neighbour: str = "replace-one",
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.accountant = accountant
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.neighbour = neighbour
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout

    def _validate(self) -> None:
        check_privacy(self.epsilon, self.delta, self.neighbour)
        check_power_method_privacy(self.epsilon, self.delta)

    def _mechanism(self, k: int) -> Mechanism:
        eps, dlt, relation = check_privacy(self.epsilon, self.delta, self.neighbour)
        check_power_method_privacy(eps, dlt)
        n_iter = default_power_iterations(self.n_features_in_) if self.n_iter is None else int(self.n_iter)
        # L Gaussian releases with sigma / Delta = u compose to rho = L / (2 u^2) (zCDP), the rho of
        # one release with sigma / Delta = u / sqrt(L); charged after the rows are validated and
        # before any party sends anything.
        charge_gaussian(
            fit_accountant(self),
            eps,
            dlt,
            power_method_noise_scale(1.0, eps, dlt, n_iter) / math.sqrt(n_iter),
            "PrivatePowerMethodPCA",
        )

        def ppm(A: NDArray[np.float64], n: int, rng: np.random.Generator) -> Release:
            scale = power_method_noise_scale(second_moment_sensitivity(n, relation), eps, dlt, n_iter)
            result = private_power_method(A, k, scale, n_iter, rng)
            return Release(result.components, result.eigenvalues, {"n_iter_": n_iter, "noise_scale_": scale})

        return ppm


class ExponentialMechanismPCA(CuratorPCA):
    """PPCA: the exponential mechanism of Chaudhuri, Sarwate & Sinha (2013) via Gibbs sampling.

    Samples ``V`` with density proportional to ``exp((epsilon/2) tr(V^T X^T X V))``
    (utility ``tr(V^T X^T X V)`` has sensitivity 1 for rows of norm <= 1), a
    matrix Bingham distribution, with :func:`sample_matrix_bingham`.
    Pure ``epsilon``-DP for exact samples; the Gibbs chain is approximate.
    ``epsilon = inf`` returns the mode (the top-``K`` eigenvectors).

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
    n_sweeps : int, default=100
        Gibbs sweeps over the columns.
    inner_sweeps : int, default=3
        Vector-Bingham pair sweeps per column update.
    row_norm, timeout
        As for :class:`AnalyzeGaussPCA`.
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    accountant : PrivacyAccountant, optional
        Charged ``(epsilon, 0)`` once per run (pure DP; ``rho = epsilon^2 / 2``
        under zCDP), after the inputs are checked and before anything is sent.
        Like the guarantee, this holds for exact samples; the Gibbs chain is approximate.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (K, D)
    explained_variance_ : ndarray of shape (K,)
        All NaN: the exponential mechanism releases only the subspace.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components are a Gibbs sample of
    the matrix Bingham distribution of the pooled ``X^T X`` (``n_sweeps`` sets its iterations), not
    an SVD; ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is
    PPPCA's only. ``random_state`` here seeds the DP noise, not a solver.
    """

    _protocol_name = "ppca"
    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "row_norm",
        "random_state",
        "timeout",
        "accountant",
        n_sweeps=integer(1),
        inner_sweeps=integer(1),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        n_sweeps: int = 100,
        inner_sweeps: int = 3,
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.accountant = accountant
        self.n_components = n_components
        self.epsilon = epsilon
        self.n_sweeps = n_sweeps
        self.inner_sweeps = inner_sweeps
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout

    def _validate(self) -> None:
        eps = check_epsilon(self.epsilon)
        if math.isfinite(eps) and eps > PPCA_MAX_EPSILON:
            raise InputValidationError(
                f"epsilon={self.epsilon!r} exceeds {PPCA_MAX_EPSILON:g}: the Bingham parameter "
                "(epsilon / 2) X^T X would overflow the Gibbs sampler; pass epsilon=inf for the exact "
                "top-K eigenvectors (no privacy)"
            )

    def _mechanism(self, k: int) -> Mechanism:
        eps = check_epsilon(self.epsilon)
        # pure epsilon-DP (for exact samples): charged (epsilon, 0), i.e. rho = epsilon^2 / 2 under
        # zCDP; after the rows are validated and before any party sends anything
        fit_accountant(self).charge(eps, 0.0, label="ExponentialMechanismPCA")

        def ppca(A: NDArray[np.float64], n: int, rng: np.random.Generator) -> Release:
            if math.isinf(eps):
                components = top_eigenpairs(A, k)[1]
            else:
                v = sample_matrix_bingham(
                    (eps / 2.0) * n * A, k, rng, n_sweeps=self.n_sweeps, inner_sweeps=self.inner_sweeps
                )
                components = flip_signs(v.T)
            return Release(components, np.full(k, np.nan))

        return ppca


__all__ = ["ExponentialMechanismPCA", "PrivatePowerMethodPCA", "RetractedSNPCA"]
