"""The capeAGN estimator: scikit-learn front end of :mod:`mpc_pca.dp.capeagn` (Imtiaz & Sarwate, JSTSP 2018, §5)."""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, ClassVar

import numpy as np

from mpc_pca.base import ParamCheck, integer, real, validated_by
from mpc_pca.dp.agn_core import PowerMethodOptions
from mpc_pca.dp.agn_privacy import check_budget_split
from mpc_pca.dp.cape import check_calibration, effective_epsilon, joint_view_factor
from mpc_pca.dp.capeagn import AGNConfig, AGNModel, make_agn_config
from mpc_pca.dp.capeagn_deploy import CapeAGNDeployment
from mpc_pca.dp.common import dp_constraints
from mpc_pca.dp.mechanisms import RandomState, gaussian_noise_scale
from mpc_pca.dp.moments import check_model, check_sigma
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.threads import ThreadsRun
from mpc_pca.validation import RowsClippedWarning, warn_privacy_leaks
from protocols.dp.accounting import PrivacyAccountant, fit_accountant, gaussian_rho
from protocols.errors import InputValidationError


class CapeAGN(ProtocolEstimator):
    """capeAGN: distributed DP orthogonal tensor decomposition (Imtiaz & Sarwate, JSTSP 2018, §5).

    Learns ``K`` topic-word distributions of a single topic model or ``K``
    means of a mixture of spherical Gaussians, plus their mixing weights,
    from sites holding disjoint rows, with a trusted noise generator and an
    untrusted aggregator (module docstring).

    Not a subspace estimator (no ``transform``), but it takes its data and
    parameters as every other estimator here: ``fit(parts)`` or
    ``fit(X, groups=...)`` with DataFrame columns aligned by name,
    keyword-only parameters after ``n_components``, declared constraints.

    Parameters
    ----------
    n_components : int, default=2
        ``K``, the number of topics / mixture components, ``1 <= K <= D``.
    model : {"stm", "mog"}, default="stm"
        ``"stm"``: rows are word counts, non-negative integers (a document
        of fewer than 3 words counts in ``N`` but contributes nothing to the
        moments, with a :class:`~mpc_pca.dp.moments.ShortDocumentsWarning`);
        ``"mog"``: rows are points of norm ``<= 1``.
    epsilon : float, default=1.0
        Privacy parameter of every site, split between ``M2`` and ``M3``
        (``inf`` disables the noise).
    delta : float, default=1e-5
        Privacy parameter in ``(0, 1)``, split like ``epsilon``.
    sigma : float, optional
        Common standard deviation of the Gaussians; required for ``"mog"``,
        ignored for ``"stm"``.
    random_state : int, SeedSequence, Generator or None
        Seed of every party's noise and of the power method's starts; for
        reproducible experiments only (a run with a known seed is not private).
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Neighbour relation of the sensitivities (:mod:`mpc_pca.dp.moments`).
    calibration : {"joint", "paper"}, default="joint"
        ``"joint"``: every noise term scaled by ``sqrt(2S / (S + 1))`` so the
        aggregator's joint view is ``(epsilon, delta)``-DP per site.
        ``"paper"``: the JSTSP 2018 variances (pooled-data aggregate noise),
        joint view ``(epsilon sqrt(2S / (S + 1)), delta)``-DP.
    budget_split : float, default=0.5
        Share of ``epsilon`` and ``delta`` spent on ``M2`` (the paper: 1/2).
    noise_calibration : {"analytic", "classical"}, default="analytic"
        Gaussian-mechanism calibration of each release
        (:func:`protocols.dp.calibration.gaussian_sigma`); ``"classical"`` is
        the paper's formula, refused when a release's epsilon is ``>= 1``.
    row_norm : {"clip", "error"}, default="clip"
        ``"mog"`` only: how sites enforce ``||x|| <= 1``.
    n_restarts, n_iter, tol : default 10, 100, 1e-12
        Robust tensor power method (:mod:`mpc_pca.dp.tensor_power`).
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    accountant : PrivacyAccountant, optional
        Charged once per run, after the inputs are checked and before anything
        is sent (sites hold disjoint rows: parallel composition): the two
        Gaussian releases together, ``(epsilon, delta)`` (``(effective_epsilon_, delta)``
        under ``"paper"``) and the sum of their ``rho``.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (K, D)
        Topic-word distributions (rows on the simplex) or mixture means.
    weights_ : ndarray of shape (K,)
        Mixing weights, summing to 1.
    whitening_ : ndarray of shape (D, K)
        ``W`` computed from the DP ``M2`` (public).
    tensor_eigenvalues_ : ndarray of shape (K,)
        Eigenvalues ``lambda_k`` of the DP whitened ``M3``.
    m2_noise_scale_, m3_noise_scale_ : float
        Standard deviation per entry of the aggregate noise of each stage.
    effective_epsilon_ : float
        ``epsilon`` of every site against the aggregator's joint view (same ``delta``).
    site_weights_ : ndarray of shape (S,)
        ``mu_s = N_s / N``.
    n_samples_, n_features_in_, n_components_ : int
    feature_names_in_ : ndarray of str
        Column names, when the data came as DataFrames.
    report_ : dict
        Per-role bytes, messages, rounds and seconds.

    Examples
    --------
    >>> import numpy as np
    >>> from mpc_pca.data.latent import make_topic_model
    >>> from mpc_pca.dp.recovery import recovery_error
    >>> sample = make_topic_model(6000, n_words=20, n_topics=3, n_sites=3, rng=np.random.default_rng(0))
    >>> model = CapeAGN(3, model="stm", epsilon=4.0, delta=1e-5, random_state=0).fit(sample.parts)
    >>> model.components_.shape, round(float(model.weights_.sum()), 6)
    ((3, 20), 1.0)
    >>> recovery_error(sample.components, sample.weights, model.components_, model.weights_).component_error < 0.2
    True
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "epsilon",
        "delta",
        "random_state",
        "neighbour",
        "row_norm",
        "timeout",
        "noise_calibration",
        "accountant",
        n_components=integer(1),
        model=validated_by(check_model),
        sigma=validated_by(partial(check_sigma, "mog"), none=True),
        calibration=validated_by(check_calibration),
        budget_split=validated_by(check_budget_split),
        n_restarts=integer(1),
        n_iter=integer(1),
        tol=real(0.0),
    )

    def __init__(
        self,
        n_components: int = 2,
        *,
        model: str = "stm",
        epsilon: float = 1.0,
        delta: float = 1e-5,
        sigma: float | None = None,
        random_state: RandomState = None,
        neighbour: str = "replace-one",
        calibration: str = "joint",
        budget_split: float = 0.5,
        row_norm: str = "clip",
        n_restarts: int = 10,
        n_iter: int = 100,
        tol: float = 1e-12,
        timeout: float = 120.0,
        noise_calibration: str = "analytic",
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.accountant = accountant
        self.n_components = n_components
        self.model = model
        self.epsilon = epsilon
        self.delta = delta
        self.sigma = sigma
        self.random_state = random_state
        self.neighbour = neighbour
        self.calibration = calibration
        self.budget_split = budget_split
        self.row_norm = row_norm
        self.n_restarts = n_restarts
        self.n_iter = n_iter
        self.tol = tol
        self.timeout = timeout
        self.noise_calibration = noise_calibration

    def _power(self) -> PowerMethodOptions:
        return PowerMethodOptions(self.n_restarts, self.n_iter, self.tol)

    def _protocol(self) -> CapeAGNDeployment:
        return CapeAGNDeployment("capeagn", power=self._power())

    def _settings(self) -> dict[str, Any]:
        return {
            "n_components": self.n_components,
            "model": self.model,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sigma": self.sigma,
            "neighbour": self.neighbour,
            "cape_calibration": self.calibration,
            "budget_split": self.budget_split,
            "noise_calibration": self.noise_calibration,
            "row_norm": self.row_norm,
        }

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: a single topic model (``model="stm"``) takes word counts, non-negative integers.

        ``positive_only`` and ``categorical`` are how scikit-learn's checks learn
        that an estimator takes non-negative integers (``CategoricalNB`` declares
        them for its category codes): with both, ``check_estimator`` hands the
        estimator rounded, shifted rows. Word counts are such integers, so
        ``model="stm"`` declares both; ``model="mog"`` takes real points and
        declares neither. The tags only describe the input: a non-integer or
        negative entry is refused (:meth:`fit`), never rounded.
        """
        tags = super().__sklearn_tags__()
        counts = self.model == "stm"
        tags.input_tags.positive_only = counts
        tags.input_tags.categorical = counts
        return tags

    def _prepare(self, parts: list[Any]) -> list[Any]:
        if self.model == "stm":
            _refuse_negative(parts)
        accountant = fit_accountant(self)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RowsClippedWarning)
            config = self._config(parts)
        self._charge(config, accountant)
        return parts  # checked; each site bounds its own rows (clipping twice would move them by round-off)

    def _config(self, parts: list[Any]) -> AGNConfig:
        """Every pre-flight check of the run (:func:`~mpc_pca.dp.capeagn.make_agn_config`): its configuration."""
        return make_agn_config(
            parts,
            self.n_components,
            model=self.model,
            epsilon=self.epsilon,
            delta=self.delta,
            sigma=self.sigma,
            neighbour=self.neighbour,
            calibration=self.calibration,
            budget_split=self.budget_split,
            row_norm=self.row_norm,
            power=self._power(),
            noise_calibration=self.noise_calibration,
        )[1]

    def _store(self, run: ThreadsRun) -> None:
        fitted: AGNModel = run.output
        self.components_ = fitted.components
        self.weights_ = fitted.weights
        self.whitening_ = fitted.whitening
        self.tensor_eigenvalues_ = fitted.tensor_eigenvalues
        self.m2_noise_scale_ = fitted.aggregate_scale(2)
        self.m3_noise_scale_ = fitted.aggregate_scale(3)
        self.effective_epsilon_ = fitted.effective_epsilon
        self.site_weights_ = fitted.site_weights
        self.n_samples_ = int(sum(fitted.site_samples))
        warn_privacy_leaks(
            epsilon=self.epsilon, delta=self.delta, n_samples=self.n_samples_, random_state=self.random_state
        )
        self.n_features_in_ = int(fitted.components.shape[1])
        self.n_components_ = int(fitted.components.shape[0])
        self.report_ = run.run.report_dict()

    def _charge(self, config: AGNConfig, accountant: PrivacyAccountant) -> None:
        """Charge the accountant for both releases, after every input check and before any party starts."""
        budget = config.budget
        # Against the aggregator's joint view each stage is a Gaussian mechanism with noise
        # c sigma_i / joint_view_factor(S) (module docstring of mpc_pca.dp.capeagn); rho adds up.
        ratio = config.scale_factor / joint_view_factor(config.n_parties)
        rho = 0.0
        for eps_i, delta_i in (budget.m2_privacy, budget.m3_privacy):
            unit = ratio * gaussian_noise_scale(1.0, eps_i, delta_i, budget.noise_calibration)
            rho += gaussian_rho(unit)
        spent = effective_epsilon(budget.epsilon, config.n_parties, config.calibration)
        accountant.charge(spent, budget.delta, rho=rho, label="CapeAGN")


def _refuse_negative(parts: list[Any]) -> None:
    """Word counts are non-negative: a negative entry is refused in scikit-learn's wording (``positive_only`` tag)."""
    for index, part in enumerate(parts):
        rows = np.asarray(part, dtype=float)
        if rows.size and float(np.min(rows)) < 0:
            raise InputValidationError(
                f"Negative values in data passed to CapeAGN (part {index}, minimum {float(np.min(rows)):g}); "
                "model='stm' takes word counts"
            )


__all__ = ["CapeAGN"]
