"""``PPPCADP``: the scikit-learn-style front end of :mod:`mpc_pca.pppca.dp_sum` (pppca-dp)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpc_pca.base import (
    ParamCheck,
    SubspaceMixin,
    boolean,
    instance_of,
    integer,
    n_components_check,
    validated_by,
)
from mpc_pca.deployment_kit import check_noise_seed
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.pppca.dp_deploy import PPPCADPDeployment
from mpc_pca.pppca.dp_sum import (
    DEFAULT_FRAC_BITS,
    DPSumModel,
    DPSumPlan,
    charge_dp_run,
    check_dp_run,
    check_plan_parameters,
)
from mpc_pca.threads import ThreadsRun
from mpc_pca.validation import warn_privacy_leaks
from protocols.backends import SecureSumBackend, make_backend
from protocols.dp.accounting import PrivacyAccountant, fit_accountant
from protocols.dp.calibration import check_calibration, check_delta_value, check_epsilon_value
from protocols.errors import InputValidationError
from protocols.runtime import check_timeout


def _check_mean_share(mean_share: object) -> None:
    """pppca-dp's own check of ``mean_share`` (the other arguments are valid placeholders)."""
    check_plan_parameters(1.0, 0.5, 1, None, mean_share, 0)


class PPPCADP(SubspaceMixin, ProtocolEstimator):
    """PPPCA with differential privacy inside the secure sum (pppca-dp).

    Each provider adds its share of discrete-Gaussian Analyze-Gauss noise to
    its integer payloads in the ring before the secure sum, so the server only
    reconstructs ``C + E`` (see :mod:`mpc_pca.pppca.dp_sum` for the neighbour
    relation, the sensitivities, the noisy mean and the collusion threshold).

    Parameters
    ----------
    n_components : int, optional
    epsilon : float, default=1.0
        ``> 0``; ``inf`` adds no noise (then this is PPPCA on clipped, rounded rows).
    delta : float, default=1e-5
        In ``(0, 1)``.
    min_honest : int, optional
        ``h``: the guarantee holds as long as ``h`` providers do not collude with
        the server; each provider adds variance ``sigma^2 / h``. ``None`` means
        ``M`` (pooled-AG noise, no collusion tolerance).
    centre : bool, default=True
        Centre at the noisy pooled mean (which is released, paid for with
        ``mean_share`` of the budget); ``False`` releases only ``G + E`` and
        uses the second moment ``G / N`` (centre the data beforehand).
    mean_share : float, default=0.1
        Share of the squared privacy loss spent on the column sums (``0 < w < 1``).
    noise_calibration : {"analytic", "classical"}, default="analytic"
    backend : str or SecureSumBackend, default="additive"
        ``"additive"``, ``"additive-masks"`` or ``"paillier"``; a name gets
        ``frac_bits=32``.
    timeout : float, default=120
    accountant : PrivacyAccountant, optional
        Charged ``rho = 1 / (2 u^2)`` (both releases together) before anything is sent.
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).
    random_state : int, optional
        ``None`` (the default, and the only private choice): every provider
        draws its noise from :mod:`secrets`. An integer seeds each provider's
        noise source (:func:`~mpc_pca.pppca.dp_sum.noise_source`), so two fits
        add the same noise, and a deployed run with the same noise seed adds
        it too: for reproducible experiments only, **not private**.

    Attributes
    ----------
    components_, explained_variance_, mean_ (noisy, or zeros), n_samples_, n_components_, n_features_in_
    noise_std_ : float
        Standard deviation of each entry of the server's matrix noise (real units, before
        centring's second-order term): Gram noise ``/ (N - 1)`` (or ``/ N``).
    gram_noise_std_ : float
        Standard deviation of each noisy Gram entry at the server, real units.
    epsilon_by_colluders_ : list of float
        ``epsilon`` against the server colluding with ``c = 0, ..., M`` providers.
    plan_ : DPSumPlan
    model_ : DPSumModel
    report_ : dict

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the server eigendecomposes the noisy
    pooled covariance ``C + E`` it reconstructs from the secure sums, computed from statistics
    aggregated over the parties (no party holds the pooled rows that scikit-learn's SVD solvers work
    on); ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's
    only. There is no ``random_state``: the noise is drawn from :mod:`secrets` inside the providers.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(300, 4)) / 4 for _ in range(3)]
    >>> PPPCADP(2, epsilon=1.0).fit(parts).components_.shape
    (2, 4)
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = {
        "n_components": n_components_check(),
        "epsilon": validated_by(check_epsilon_value),
        "delta": validated_by(check_delta_value),
        # its range, 1 to the number of providers, is checked once the parts are known
        "min_honest": integer(none=True),
        "centre": boolean(),
        "mean_share": validated_by(_check_mean_share),
        "noise_calibration": validated_by(check_calibration),
        "backend": instance_of(str, SecureSumBackend),
        "timeout": validated_by(check_timeout),
        "accountant": instance_of(PrivacyAccountant, None),
        "random_state": validated_by(check_noise_seed),
    }

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        min_honest: int | None = None,
        centre: bool = True,
        mean_share: float = 0.1,
        noise_calibration: str = "analytic",
        backend: str | SecureSumBackend = "additive",
        timeout: float = 120.0,
        accountant: PrivacyAccountant | None = None,
        random_state: int | None = None,
    ) -> None:
        self.accountant = accountant
        self.random_state = random_state
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.min_honest = min_honest
        self.centre = centre
        self.mean_share = mean_share
        self.noise_calibration = noise_calibration
        self.backend = backend
        self.timeout = timeout

    def _backend(self) -> SecureSumBackend:
        """The backend object every party shares in-process (a name gets ``frac_bits=32``)."""
        if isinstance(self.backend, SecureSumBackend):
            return self.backend
        if isinstance(self.backend, str):
            return make_backend(self.backend, frac_bits=DEFAULT_FRAC_BITS)
        raise InputValidationError(
            f"backend must be a SecureSumBackend or a backend name, got {type(self.backend).__name__}"
        )

    def _protocol(self) -> PPPCADPDeployment:
        backend = self._backend()
        return PPPCADPDeployment(
            "pppca-dp",
            backend_factory=lambda settings: backend,
            centre=bool(self.centre),
            mean_share=self.mean_share,
            public_rows=True,
        )

    def _settings(self) -> dict[str, Any]:
        backend = self._backend()
        return {
            "n_components": self.n_components,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "noise_calibration": self.noise_calibration,
            "min_honest": self.min_honest,
            "backend": backend.name,
            "frac_bits": backend.codec.frac_bits,
        }

    def _prepare(self, parts: list[Any]) -> list[Any]:
        plan = check_dp_run(
            parts,
            self.n_components,
            self._backend(),
            epsilon=self.epsilon,
            delta=self.delta,
            min_honest=self.min_honest,
            centre=self.centre,
            mean_share=self.mean_share,
            noise_calibration=self.noise_calibration,
        )
        charge_dp_run(fit_accountant(self), plan)
        return parts

    def _store(self, run: ThreadsRun) -> None:
        model: DPSumModel = run.output
        plan: DPSumPlan = run.config.plan
        scale = 2.0**plan.frac_bits
        self.components_ = model.components
        self.explained_variance_ = model.explained_variance
        self.explained_variance_ratio_ = (
            model.explained_variance / model.total_variance
            if model.total_variance > 0
            else np.zeros_like(model.explained_variance)
        )
        self.mean_ = model.mean
        self.n_samples_ = model.n_samples
        self.n_components_ = model.components.shape[0]
        self.gram_noise_std_ = plan.server_std(plan.gram_sigma) / scale
        divisor = model.n_samples - 1 if plan.centre else model.n_samples
        self.noise_std_ = self.gram_noise_std_ / divisor
        self.epsilon_by_colluders_ = [plan.epsilon_with_colluders(c) for c in range(plan.n_parties + 1)]
        self.plan_ = plan
        self.model_ = model
        self.report_ = run.run.report_dict()
        warn_privacy_leaks(
            epsilon=self.epsilon,
            delta=self.delta,
            n_samples=self.n_samples_,
            random_state=self.random_state,
        )


__all__ = ["PPPCADP"]
