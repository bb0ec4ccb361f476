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
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mpc_pca.base import ParamCheck, integer, one_of
from mpc_pca.dp.common import (
    DPSubspaceMixin,
    check_privacy,
    dp_constraints,
    prepare_parts,
    refuse_accountant,
)
from mpc_pca.dp.curator import CuratorModel, Mechanism, Release
from mpc_pca.dp.curator_deploy import VARIANTS as CURATOR_VARIANTS
from mpc_pca.dp.curator_deploy import CuratorDeployment
from mpc_pca.dp.local_deploy import LocalDeployment, LocalRelease
from mpc_pca.dp.mechanisms import (
    RandomState,
    gaussian_noise_scale,
    second_moment_sensitivity,
    symmetric_gaussian_noise,
)
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.linalg import top_eigenpairs
from mpc_pca.threads import ThreadsRun
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value; anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


class CuratorPCA(DPSubspaceMixin, ProtocolEstimator, ABC):
    """The curator-based estimators: each runs :class:`~mpc_pca.dp.curator_deploy.CuratorDeployment` with its mechanism.

    A subclass names its registry variant (:attr:`_protocol_name`) and its
    mechanism (:meth:`_mechanism`); the curator takes generator 0 of
    ``random_state`` (:meth:`CuratorDeployment.generator
    <mpc_pca.dp.curator_deploy.CuratorDeployment.generator>`).
    """

    #: The registry name of the curator variant whose mechanism this estimator is.
    _protocol_name: ClassVar[str]

    row_norm: str
    timeout: float
    n_components: int | None

    @abstractmethod
    def _mechanism(self, k: int) -> Mechanism:
        """The curator's mechanism for ``k`` components."""

    def _validate(self) -> None:
        """Check the privacy parameters before any party starts."""

    def _protocol(self) -> CuratorDeployment:
        return CuratorDeployment(self._protocol_name, mechanism=self._mechanism)

    def _settings(self) -> dict[str, Any]:
        """``n_components`` (``None``: every feature), ``row_norm`` and the variant's privacy keys."""
        k = self.n_features_in_ if self.n_components is None else self.n_components
        options = CURATOR_VARIANTS[self._protocol_name].options
        values = {key: getattr(self, key) for key in options}
        # announced as JSON values: a numpy scalar (e.g. epsilon=np.float32(1)) as its Python value
        return {"n_components": k, **{key: _plain(value) for key, value in values.items()}}

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """The privacy parameters, then the rows (checked and bounded, as the curator's providers get them)."""
        self._validate()
        return prepare_parts(parts, self.n_components, self.row_norm)[0]

    def _store(self, run: ThreadsRun) -> None:
        model: CuratorModel = run.output
        self._store_fit(model.components, model.explained_variance, model.n_samples, run.run)
        for attribute, value in model.fitted.items():
            setattr(self, attribute, value)


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

    _protocol_name = "pooled"
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

    _protocol_name = "ag"
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


class LocalPCA(DPSubspaceMixin, ProtocolEstimator):
    """Analyze Gauss on one site's rows only (the ``q_local`` of ICASSP 2018).

    The chosen site perturbs its own ``A_s = X_s^T X_s / N_s`` with sensitivity
    ``Delta / N_s`` and keeps the top-``K`` eigenvectors; nothing is sent. The
    other parts are validated but unused (:class:`~mpc_pca.dp.local_deploy.LocalDeployment`).

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

    def _protocol(self) -> LocalDeployment:
        return LocalDeployment("local", site=self.site, ordering=self.ordering)

    def _settings(self) -> dict[str, Any]:
        """``n_components`` (``None``: every feature), the privacy parameters and ``row_norm``."""
        k = self.n_features_in_ if self.n_components is None else self.n_components
        return {
            "n_components": k,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbour": self.neighbour,
            "noise_calibration": self.noise_calibration,
            "row_norm": self.row_norm,
        }

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """Check the privacy parameters, the rows and ``site``, then charge the accountant."""
        eps, dlt, _ = check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)
        arrays = prepare_parts(parts, self.n_components, self.row_norm)[0]
        self._protocol().site_name(len(arrays))  # refuses a site that indexes no part, before the charge
        unit = gaussian_noise_scale(1.0, eps, dlt, self.noise_calibration)
        charge_gaussian(fit_accountant(self), eps, dlt, unit, "LocalPCA")
        return arrays

    def _store(self, run: ThreadsRun) -> None:
        release: LocalRelease = run.output
        self._store_fit(release.components, release.explained_variance, release.n_samples, run.run)
        self.noise_scale_ = release.noise_scale


__all__ = ["AnalyzeGaussPCA", "CuratorPCA", "LocalPCA", "PooledPCA"]
