"""The capePCA estimator: scikit-learn front end of :mod:`mpc_pca.dp.cape` (Imtiaz & Sarwate, JSTSP 2018)."""

from __future__ import annotations

from typing import Any, ClassVar

from mpc_pca.base import ParamCheck, validated_by
from mpc_pca.dp.cape import CapeModel, check_calibration, effective_epsilon, joint_view_factor
from mpc_pca.dp.cape_deploy import CapeDeployment
from mpc_pca.dp.common import DPSubspaceMixin, check_privacy, dp_constraints, preflight_parts
from mpc_pca.dp.mechanisms import RandomState, gaussian_noise_scale
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.threads import ThreadsRun
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant


class CapePCA(DPSubspaceMixin, ProtocolEstimator):
    """capePCA: distributed DP PCA with CAPE correlated noise (Imtiaz & Sarwate, JSTSP 2018, Alg. 1).

    A trusted noise generator and an untrusted aggregator. The aggregator
    sees every site's release; because the CAPE noise terms are correlated
    across sites, that joint view leaks more than any single release (module
    docstring: per site it is a Gaussian mechanism with noise
    ``tau_s sqrt((S + 1) / (2S))``). Two calibrations:

    * ``"joint"`` (default): all noise scaled by ``sqrt(2S / (S + 1))`` so the
      aggregator's joint view is ``(epsilon, delta)``-DP for every site; the
      aggregate then carries the pooled Analyze-Gauss noise of
      ``epsilon / sqrt(2S / (S + 1))``.
    * ``"paper"``: the JSTSP 2018 variances; the aggregate carries exactly the
      pooled Analyze-Gauss noise, but the joint view is only
      ``(epsilon sqrt(2S / (S + 1)), delta)``-DP per site
      (``effective_epsilon_``), e.g. ``1.35 epsilon`` for ``S = 10``.

    Neither protects a site at level ``epsilon`` against an aggregator that
    colludes with other sites (module docstring).

    Parameters
    ----------
    n_components : int, optional
        ``K``; ``None`` keeps all ``D`` directions.
    epsilon : float, default=1.0
        Privacy parameter of every site (``inf`` disables the noise).
    delta : float, default=1e-5
        Privacy parameter in ``(0, 1)``.
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Neighbour relation; ``tau_s`` uses ``sqrt(2)/N_s`` or ``1/N_s``.
    noise_calibration : {"analytic", "classical"}, default="analytic"
        Gaussian formula for ``sigma`` (Balle & Wang 2018, or the paper's
        classical one, refused for ``epsilon >= 1``). Distinct from
        ``calibration``, which chooses the joint-view scaling.
    calibration : {"joint", "paper"}, default="joint"
        ``"joint"``: the aggregator's view of all releases is
        ``(epsilon, delta)``-DP per site. ``"paper"``: the JSTSP 2018
        calibration (pooled-AG aggregate noise), joint view only
        ``(epsilon sqrt(2S / (S + 1)), delta)``-DP.
    row_norm : {"clip", "error"}, default="clip"
        How sites enforce ``||x|| <= 1``.
    random_state : int, SeedSequence, Generator or None
        Seed of all parties' DP noise (aggregator's ``f_s``, noise
        generator's ``e_s``, sites' ``g_s``); ``None`` draws one from
        :mod:`secrets`. For reproducible experiments only; a run with a known
        seed is not private.
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    accountant : PrivacyAccountant, optional
        Charged once per run, after the inputs are checked and before anything
        is sent (sites hold disjoint rows: parallel composition), for what
        every site's data spends against the aggregator's joint view: the
        Gaussian mechanism ``(epsilon, delta)`` under ``"joint"``;
        ``(effective_epsilon_, delta)`` with the correspondingly smaller noise
        under ``"paper"``.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (K, D)
        Released top-``K`` eigenvectors of ``Â`` as rows.
    explained_variance_ : ndarray of shape (K,)
        Top eigenvalues of ``Â`` (DP, post-processing).
    mean_ : ndarray of shape (D,)
        Zeros (second-moment PCA, no centring).
    weights_ : ndarray of shape (S,)
        ``mu_s = N_s / N``.
    site_noise_scales_ : ndarray of shape (S,)
        ``tau_s``, including the factor ``sqrt(2S / (S + 1))`` under ``"joint"``.
    noise_scale_ : float
        Standard deviation of the aggregate noise: the pooled AG scale under
        ``"paper"``, ``sqrt(2S / (S + 1))`` times it under ``"joint"``.
    effective_epsilon_ : float
        ``epsilon`` of every site against the aggregator's joint view (same
        ``delta``): ``epsilon`` under ``"joint"``; under ``"paper"``
        ``epsilon sqrt(2S / (S + 1))`` with ``noise_calibration="classical"``,
        and with ``"analytic"`` (the default) the analytic-Gaussian ``epsilon``
        of noise ``sqrt(2S / (S + 1))`` times smaller, slightly larger (1.171
        rather than 1.155 for ``S = 2``, ``epsilon = 1``, ``delta = 1e-5``).
        This is what the fit charges the accountant (``accountant_``); a zCDP
        accountant's ``spent_epsilon`` then converts the charge's ``rho`` at
        its own ``delta``, which gives more than this figure after one fit
        (:attr:`~protocols.dp.accounting.PrivacyAccountant.spent_epsilon`).
    n_samples_, n_features_in_, n_components_ : int
    report_ : dict
        Per-role bytes, messages, rounds and seconds.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the aggregator eigendecomposes the sum
    of the sites' noisy second-moment matrices (CAPE, Alg. 1), computed from statistics aggregated
    over the parties (no party holds the pooled rows that scikit-learn's SVD solvers work on);
    ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's only.
    ``random_state`` here seeds the DP noise, not a solver.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(n, 5)) / 5 for n in (100, 300)]
    >>> CapePCA(n_components=2, epsilon=2.0, random_state=1).fit(parts).weights_
    array([0.25, 0.75])
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
        calibration=validated_by(check_calibration),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        neighbour: str = "replace-one",
        calibration: str = "joint",
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
        self.neighbour = neighbour
        self.calibration = calibration
        self.noise_calibration = noise_calibration
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout

    def _protocol(self) -> CapeDeployment:
        return CapeDeployment("capepca")

    def _settings(self) -> dict[str, Any]:
        return {
            "n_components": self.n_components,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbour": self.neighbour,
            "noise_calibration": self.noise_calibration,
            "cape_calibration": self.calibration,
            "row_norm": self.row_norm,
        }

    def _prepare(self, parts: list[Any]) -> list[Any]:
        self._charge(parts)
        return parts  # checked; each site bounds its own rows (clipping twice would move them by round-off)

    def _store(self, run: ThreadsRun) -> None:
        model: CapeModel = run.output
        self._store_fit(model.components, model.explained_variance, sum(model.site_samples), run.run)
        self.weights_ = model.weights
        self.site_noise_scales_ = model.site_scales
        self.noise_scale_ = model.noise_scale
        self.effective_epsilon_ = model.effective_epsilon

    def _charge(self, parts: list[Any]) -> None:
        """Charge the accountant for one run, after every input check and before any party starts."""
        eps, dlt, _ = check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)
        mode = check_calibration(self.calibration)
        arrays, _ = preflight_parts(parts, self.n_components, self.row_norm)
        n_sites = len(arrays)
        # Against the joint view, site s's release is a Gaussian mechanism with noise
        # tau_s sqrt((S + 1) / (2S)) = c sigma(Delta_s) / joint_view_factor(S).
        factor = joint_view_factor(n_sites) if mode == "joint" else 1.0
        unit = (
            factor * gaussian_noise_scale(1.0, eps, dlt, self.noise_calibration) / joint_view_factor(n_sites)
        )
        spent = effective_epsilon(eps, n_sites, mode, dlt, self.noise_calibration)
        charge_gaussian(fit_accountant(self), spent, dlt, unit, "CapePCA")


__all__ = ["CapePCA"]
