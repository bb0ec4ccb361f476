"""The DPDPCA estimator: scikit-learn front end of the Wang & Chang (IEEE DSC 2018) protocol.

The roles, their configuration and the protocol's deviations from the paper
are in :mod:`mpc_pca.dp.dpdpca`; this module validates the parameters, runs
the protocol object (:class:`~mpc_pca.dp.dpdpca_deploy.DPDPCADeployment`)
as threads and exposes the fitted subspace.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpc_pca.base import ParamCheck, boolean, integer, n_components_check, one_of, validated_by
from mpc_pca.dp.common import DPSubspaceMixin, check_privacy, dp_constraints, prepare_parts
from mpc_pca.dp.dpdpca import (
    DPDPCA_CALIBRATIONS,
    DPDPCAConfig,
    DPDPCAModel,
    centred_scatter_sensitivity,
    check_integer,
)
from mpc_pca.dp.dpdpca_deploy import DPDPCADeployment
from mpc_pca.dp.mechanisms import Neighbour, RandomState, parse_neighbour
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.threads import ThreadsRun
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant
from protocols.errors import InputValidationError
from protocols.paillier.keys import check_key_bits


class DPDPCA(DPSubspaceMixin, ProtocolEstimator):
    """Differentially private distributed PCA with Paillier and a proxy (Wang & Chang 2018).

    Parameters
    ----------
    n_components : int, default=2
        Number of components ``k``.
    epsilon : float, default=1.0
        Privacy parameter, > 0 (``inf`` disables the noise).
    delta : float, default=1e-5
        Privacy parameter, in (0, 1).
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Neighbouring data sets differ by one replaced row (the paper's
        fixed-size definition) or one added/removed row; sets the sensitivity,
        see :func:`centred_scatter_sensitivity`. The data user learns ``N``
        exactly, so ``"add-remove"`` protects the matrix with ``N`` public only.
    row_norm : {"clip", "error"}, default="clip"
        Rows must have norm <= 1 (the DP sensitivities assume it): clip a
        longer row locally at its owner, warning
        :class:`~mpc_pca.validation.RowsClippedWarning` with how many rows
        were clipped (:mod:`mpc_pca.dp.preprocessing`), as every DP estimator
        here and the command line do; or raise on it (``"error"``).
    key_bits : int, default=2048
        Paillier modulus size (2048 or 3072).
    frac_bits : int, default=40
        Fixed-point fractional bits of the integer encoding (Paillier's plaintext
        space is large, so this is far finer than the ring backends' 20 bits).
    mask_bits : int, default=128
        Statistical hiding of ``v`` by the mask ``b``.
    random_state : int, SeedSequence or Generator, optional
        Seed of the proxy's DP noise ``G'``; unset, it is drawn from :mod:`secrets`.
        For reproducible experiments only: anyone who knows the seed can remove
        the noise, so a seeded run is not private. The mask ``b`` and all
        encryption randomness always come from :mod:`secrets`.
    allow_insecure_key_size : bool, default=False
        Test-only: allow keys below 2048 bits.
    timeout : float, default=300
        Receive timeout of every party, in seconds.
    calibration : {"sensitivity", "paper"}, default="sensitivity"
        Size ``G'`` for the centred scatter's true sensitivity
        (:func:`centred_scatter_sensitivity`), or for the paper's ``Delta = 1``
        (then ``effective_epsilon_`` reports the weaker guarantee obtained).
    noise_calibration : {"analytic", "classical"}, default="analytic"
        Gaussian formula (Balle & Wang 2018, or ``sqrt(2 ln(1.25/delta))/epsilon``,
        refused for ``epsilon >= 1``).
    accountant : PrivacyAccountant, optional
        Charged once per run, after every input check and before any party
        starts, for the data user's ``S + G'``: a Gaussian mechanism with
        ``sigma / Delta = noise_sigma_ / Delta`` for the centred scatter's true
        ``Delta``, at ``(epsilon, delta)`` (``(effective_epsilon_, delta)``
        under ``calibration="paper"``).
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (k, d)
    explained_variance_ : ndarray of shape (k,)
        Eigenvalues of the noisy covariance ``S' / (N - 1)``.
    explained_variance_ratio_ : ndarray of shape (k,)
    noisy_scatter_ : ndarray of shape (d, d)
        ``S'`` as the data user obtained it.
    noise_sigma_ : float
        Standard deviation of each upper-triangle entry of ``G'``.
    effective_epsilon_ : float
        ``epsilon`` the release has for the true sensitivity at ``delta``
        (``> epsilon`` under ``calibration="paper"``).
    mean_ : ndarray of shape (d,)
        Zeros: the data user never learns the pooled mean (it is masked by
        ``b``), so :meth:`transform` projects rows without centring them.
    n_samples_ : int
    report_ : dict
        Per-role bytes, messages, rounds and seconds.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the data user eigendecomposes the noisy
    scatter matrix it decrypts from the Paillier sums (Wang & Chang 2018), computed from statistics
    aggregated over the parties (no party holds the pooled rows that scikit-learn's SVD solvers work
    on); ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's
    only. ``random_state`` here seeds the DP noise, not a solver.
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "epsilon",
        "delta",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        "noise_calibration",
        "accountant",
        n_components=n_components_check(none=False),
        key_bits=integer(),
        frac_bits=validated_by(lambda value: check_integer(value, "frac_bits", 1, 200)),
        mask_bits=validated_by(lambda value: check_integer(value, "mask_bits", 40, 512)),
        allow_insecure_key_size=boolean(),
        calibration=one_of(*DPDPCA_CALIBRATIONS),
    )

    def __init__(
        self,
        n_components: int = 2,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        neighbour: Neighbour | str = "replace-one",
        row_norm: str = "clip",
        key_bits: int = 2048,
        frac_bits: int = 40,
        mask_bits: int = 128,
        random_state: RandomState = None,
        allow_insecure_key_size: bool = False,
        timeout: float = 300.0,
        calibration: str = "sensitivity",
        noise_calibration: str = "analytic",
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.accountant = accountant
        self.calibration = calibration
        self.noise_calibration = noise_calibration
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.neighbour = neighbour
        self.row_norm = row_norm
        self.key_bits = key_bits
        self.frac_bits = frac_bits
        self.mask_bits = mask_bits
        self.random_state = random_state
        self.allow_insecure_key_size = allow_insecure_key_size
        self.timeout = timeout

    def _protocol(self) -> DPDPCADeployment:
        return DPDPCADeployment(
            "dpdpca",
            frac_bits=self.frac_bits,
            mask_bits=self.mask_bits,
            calibration=self.calibration,
            allow_insecure_key_size=self.allow_insecure_key_size,
            max_rows=self._run_rows,
        )

    def _settings(self) -> dict[str, Any]:
        return {
            "n_components": self.n_components,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbour": parse_neighbour(self.neighbour).value,
            "noise_calibration": self.noise_calibration,
            # _prepare bounded the rows by row_norm already: the parties check them, so none is clipped twice
            "row_norm": "error",
            "key_bits": self.key_bits,
        }

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """Check every parameter and owner's rows, then charge the accountant, before any party starts."""
        arrays, k = prepare_parts(parts, self.n_components, self.row_norm, min_total_rows=2)
        epsilon, delta, neighbour = check_privacy(
            self.epsilon, self.delta, self.neighbour, self.noise_calibration
        )
        check_key_bits(self.key_bits, self.allow_insecure_key_size)
        config = DPDPCAConfig(
            n_owners=len(arrays),
            n_features=arrays[0].shape[1],
            n_components=k,
            epsilon=epsilon,
            delta=delta,
            neighbour=neighbour,
            key_bits=self.key_bits,
            frac_bits=check_integer(self.frac_bits, "frac_bits", 1, 200),
            mask_bits=check_integer(self.mask_bits, "mask_bits", 40, 512),
            allow_insecure_key_size=self.allow_insecure_key_size,
            calibration=self.calibration,
            noise_calibration=self.noise_calibration,
        )
        n_samples = sum(a.shape[0] for a in arrays)
        budget = config.key_bits - 2  # signed residues must stay below n/2
        if config.plaintext_bits(n_samples) > budget:
            raise InputValidationError(
                f"values of up to {config.plaintext_bits(n_samples)} bits would be encrypted (N={n_samples}, "
                f"frac_bits={config.frac_bits}, mask_bits={config.mask_bits}, noise sigma "
                f"{config.noise_sigma:.3g}), but a {config.key_bits}-bit key holds signed values of at most "
                f"{budget} bits; lower frac_bits or mask_bits, or use a larger key"
            )
        # S + G' is one Gaussian release; its true sensitivity may exceed the calibrated one ("paper")
        unit = config.noise_sigma / centred_scatter_sensitivity(neighbour)
        spent = config.effective_epsilon if self.calibration == "paper" else epsilon
        charge_gaussian(fit_accountant(self), spent, delta, unit, "DPDPCA")
        self._run_rows = n_samples  # the key need hold plaintexts for these N rows only
        return arrays

    def _store(self, run: ThreadsRun) -> None:
        model: DPDPCAModel = run.output
        config: DPDPCAConfig = run.config.config
        self._store_fit(model.components, model.eigenvalues / (model.n_samples - 1), model.n_samples, run.run)
        self.explained_variance_ratio_ = (
            model.eigenvalues / model.total if model.total > 0 else np.zeros_like(model.eigenvalues)
        )
        self.noisy_scatter_ = model.noisy_scatter
        self.noise_sigma_ = config.noise_sigma
        self.effective_epsilon_ = config.effective_epsilon


__all__ = ["DPDPCA"]
