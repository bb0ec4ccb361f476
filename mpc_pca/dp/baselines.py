"""Centralized baselines: AG, non-private pooled PCA and local PCA (the curator protocol's estimators).

The centralized methods assume a **trusted curator** who sees the pooled
data; they are run as a two-role protocol so that they report traffic like
every other system: each provider sends its row count and the upper
triangle of its Gram matrix ``X_s^T X_s`` to the curator, the curator forms
the pooled second-moment matrix ``A = X^T X / N`` (no centring, as in the
papers), applies the mechanism and sends the components back. ``LocalPCA``
runs Analyze Gauss on a single site's rows and sends nothing (the ``q_local``
curve of ICASSP 2018).

Mechanisms (sensitivities and neighbour relations in :mod:`mpc_pca.dp.mechanisms`; SN, PPM and
PPCA, the other mechanisms of ICASSP 2016's comparison, are in :mod:`mpc_pca.dp.mechanism_baselines`):

* **AG** (Dwork et al. 2014; ICASSP 2016 §3): ``A + E``, top-``K`` eigenvectors;
  sensitivity ``sqrt(2)/N`` (replace-one) or ``1/N`` (add-remove).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.base import ParamCheck, integer, one_of
from mpc_pca.dp.common import (
    DPSubspaceMixin,
    check_privacy,
    dp_constraints,
    prepare_parts,
    refuse_accountant,
)
from mpc_pca.dp.curator import Mechanism, Release, run_centralized
from mpc_pca.dp.mechanisms import (
    RandomState,
    gaussian_noise_scale,
    second_moment_sensitivity,
    spawn_generators,
    symmetric_gaussian_noise,
)
from mpc_pca.linalg import flip_signs, top_eigenpairs
from mpc_pca.roles import provider_names
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant
from protocols.errors import InputValidationError
from protocols.party import Party
from protocols.runtime import run_inprocess, single_threaded_blas


class CuratorPCA(DPSubspaceMixin, ABC):
    """Common ``fit`` of the curator-based estimators."""

    row_norm: str
    timeout: float
    n_components: int | None

    @abstractmethod
    def _mechanism(self, k: int) -> Mechanism:
        """The curator's mechanism for ``k`` components."""

    def _validate(self) -> None:
        """Check the privacy parameters before any party starts."""

    def fit(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> CuratorPCA:
        """Run the curator protocol over the parties' rows; return ``self``.

        Parameters
        ----------
        X : list of array_like or DataFrame, or array_like of shape (N, D)
            One ``(N_s, D)`` block per party (DataFrames are aligned by column
            name), or all rows with ``groups``.
        y : None
            Ignored.
        groups : array_like of shape (N,), optional
            With a single ``X``: the party of each row (one party if omitted).

        Returns
        -------
        self
        """
        parts = self._intake(X, groups)
        self._validate()
        model, run = run_centralized(
            parts,
            self.n_components,
            self._mechanism,
            row_norm=self.row_norm,
            random_state=getattr(self, "random_state", 0),
            timeout=self.timeout,
        )
        self._store_fit(model.components, model.explained_variance, model.n_samples, run)
        for attribute, value in model.fitted.items():
            setattr(self, attribute, value)
        return self


class PooledPCA(CuratorPCA):
    """Non-private PCA of the pooled second-moment matrix (the reference ``q_o``).

    Parameters
    ----------
    n_components : int, optional
    row_norm : {"clip", "error"}, default="clip"
        Kept so the subspace is that of the same rows the DP methods see.
    timeout : float, default=120
    accountant : None
        Only ``None``: the release is the exact pooled subspace, not DP (it
        has ``epsilon = inf``), so no finite budget can pay for it and an
        accountant is refused rather than charged nothing.

    Attributes
    ----------
    components_, explained_variance_, mean_ (zeros), n_samples_, report_

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components are the eigenvectors of
    the pooled second-moment matrix, computed from statistics aggregated over the parties (no party
    holds the pooled rows that scikit-learn's SVD solvers work on); ``copy`` does not apply either
    (``fit`` never changes the rows) and ``whiten`` is PPPCA's only. There is no ``random_state``:
    nothing is random.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "row_norm",
        "timeout",
        accountant=refuse_accountant("PooledPCA releases the exact, non-private pooled subspace"),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        row_norm: str = "clip",
        timeout: float = 120.0,
        accountant: None = None,
    ) -> None:
        self.n_components = n_components
        self.row_norm = row_norm
        self.timeout = timeout
        self.accountant = accountant

    def _mechanism(self, k: int) -> Mechanism:
        def exact(A: NDArray[np.float64], n: int, rng: np.random.Generator) -> Release:
            values, components, _ = top_eigenpairs(A, k)
            return Release(components, values)

        return exact


class AnalyzeGaussPCA(CuratorPCA):
    """Analyze Gauss on the pooled data (Dwork et al. 2014; the ``q_pooled`` of ICASSP 2018).

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
    delta : float, default=1e-5
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Sensitivity ``sqrt(2)/N`` or ``1/N``.
    row_norm : {"clip", "error"}, default="clip"
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    timeout : float, default=120
    noise_calibration : {"analytic", "classical"}, default="analytic"
        Analytic Gaussian (Balle & Wang 2018) or the classical
        ``sqrt(2 ln(1.25/delta))/epsilon`` (refused for ``epsilon >= 1``).
    accountant : PrivacyAccountant, optional
        Charged ``(epsilon, delta)`` and ``rho`` (:mod:`protocols.dp.accounting`)
        after the inputs are checked and before anything is sent; a run beyond
        its budget is refused.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_, explained_variance_ (top eigenvalues of ``A + E``), mean_ (zeros),
    noise_scale_, n_samples_, report_

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components are the eigenvectors of
    the noisy pooled second-moment matrix (Analyze Gauss), computed from statistics aggregated over
    the parties (no party holds the pooled rows that scikit-learn's SVD solvers work on); ``copy``
    does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's only.
    ``random_state`` here seeds the DP noise, not a solver.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "delta",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        "noise_calibration",
        "accountant",
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        neighbour: str = "replace-one",
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        noise_calibration: str = "analytic",
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.neighbour = neighbour
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout
        self.noise_calibration = noise_calibration
        self.accountant = accountant

    def _validate(self) -> None:
        check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)

    def _mechanism(self, k: int) -> Mechanism:
        eps, dlt, relation = check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)
        calibration = self.noise_calibration
        # called after the rows are validated and before any party sends anything
        charge_gaussian(
            fit_accountant(self),
            eps,
            dlt,
            gaussian_noise_scale(1.0, eps, dlt, calibration),
            "AnalyzeGaussPCA",
        )

        def ag(A: NDArray[np.float64], n: int, rng: np.random.Generator) -> Release:
            scale = gaussian_noise_scale(second_moment_sensitivity(n, relation), eps, dlt, calibration)
            values, components, _ = top_eigenpairs(A + symmetric_gaussian_noise(A.shape[0], scale, rng), k)
            return Release(components, values, {"noise_scale_": scale})

        return ag


class LocalPCA(DPSubspaceMixin):
    """Analyze Gauss on one site's rows only (the ``q_local`` of ICASSP 2018).

    The chosen site perturbs its own ``A_s = X_s^T X_s / N_s`` with sensitivity
    ``Delta / N_s`` and keeps the top-``K`` eigenvectors; nothing is sent.

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
        ``inf`` gives the non-private local PCA.
    delta : float, default=1e-5
    site : int, default=0
        Which part of ``parts`` is the local site.
    ordering : {"eigenvalue", "magnitude"}, default="eigenvalue"
        Keep the ``K`` largest eigenvalues of ``Â_s``, or the ``K`` largest
        singular values (largest ``|eigenvalue|``), which is what the SVD in
        the ICASSP 2018 authors' code does for ``q_local``.
    neighbour, row_norm, timeout, noise_calibration
        As for :class:`AnalyzeGaussPCA`.
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    accountant : PrivacyAccountant, optional
        Charged once, ``(epsilon, delta)`` and ``rho`` of the site's Analyze
        Gauss release, after the inputs are checked and before the site computes anything.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the components are the eigenvectors of
    one site's noisy second-moment matrix, eigendecomposed whole once the noise is added (an
    iterative or randomized solver on the rows would bypass the noise the guarantee rests on);
    ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's only.
    ``random_state`` here seeds the DP noise, not a solver.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "delta",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        "noise_calibration",
        "accountant",
        site=integer(0),
        ordering=one_of("eigenvalue", "magnitude"),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        site: int = 0,
        ordering: str = "eigenvalue",
        neighbour: str = "replace-one",
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        noise_calibration: str = "analytic",
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.accountant = accountant
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.noise_calibration = noise_calibration
        self.site = site
        self.ordering = ordering
        self.neighbour = neighbour
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout

    def fit(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> LocalPCA:
        """Fit on the ``site``-th party's rows only (the other parts are validated but unused); return ``self``.

        Parameters
        ----------
        X : list of array_like or DataFrame, or array_like of shape (N, D)
            One ``(N_s, D)`` block per party (DataFrames are aligned by column
            name), or all rows with ``groups``.
        y : None
            Ignored.
        groups : array_like of shape (N,), optional
            With a single ``X``: the party of each row, parties in sorted label
            order (one party if omitted).

        Returns
        -------
        self
        """
        parts = self._intake(X, groups)
        eps, dlt, relation = check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)
        calibration = self.noise_calibration
        arrays, k = prepare_parts(parts, self.n_components, self.row_norm)
        if (
            isinstance(self.site, bool)
            or not isinstance(self.site, Integral)
            or not 0 <= self.site < len(arrays)
        ):
            raise InputValidationError(f"site={self.site!r} must index one of the {len(arrays)} parts")
        by_magnitude = self.ordering == "magnitude"
        data = arrays[int(self.site)]
        (rng,) = spawn_generators(self.random_state, 1)
        name = provider_names(len(arrays))[int(self.site)]
        charge_gaussian(
            fit_accountant(self), eps, dlt, gaussian_noise_scale(1.0, eps, dlt, calibration), "LocalPCA"
        )

        def local(party: Party) -> tuple[Any, Any, float]:
            n_s = data.shape[0]
            scale = gaussian_noise_scale(second_moment_sensitivity(n_s, relation), eps, dlt, calibration)
            noisy = data.T @ data / n_s + symmetric_gaussian_noise(data.shape[1], scale, rng)
            if by_magnitude:
                all_values, vectors = np.linalg.eigh(noisy)
                order = np.argsort(np.abs(all_values))[::-1][:k]
                return flip_signs(vectors[:, order].T), np.abs(all_values[order]), scale
            values, components, _ = top_eigenpairs(noisy, k)
            return components, values, scale

        with single_threaded_blas():
            run = run_inprocess({name: local}, timeout=self.timeout)
        components, values, scale = run.outputs[name]
        self._store_fit(components, values, data.shape[0], run)
        self.noise_scale_ = scale
        return self


__all__ = ["AnalyzeGaussPCA", "CuratorPCA", "LocalPCA", "PooledPCA"]
