"""``accountant=`` on every DP estimator (issue 23): what each release is charged, and the refusals.

Each DP estimator charges its accountant once per ``fit``, after the inputs are
checked and before any party starts: ``(epsilon, delta)`` (the joint-view
``effective_epsilon_`` where a calibration is weaker) and the ``rho`` of its
Gaussian releases; the exponential mechanism ``(epsilon, 0)``. ``PooledPCA``
(not private) and ``RetractedSNPCA`` (retracted, not DP) refuse an accountant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from mpc_pca import (
    DPDPCA,
    PPPCA,
    PPPCADP,
    AnalyzeGaussPCA,
    CapeAGN,
    CapePCA,
    DPdisPCA,
    ExponentialMechanismPCA,
    LocalPCA,
    PooledPCA,
    PrivatePowerMethodPCA,
    RetractedSNPCA,
)
from mpc_pca.dp.dpdpca import centred_scatter_sensitivity
from mpc_pca.dp.mechanisms import gaussian_noise_scale
from protocols.dp.accounting import PrivacyAccountant, PrivacyBudgetExceededError
from protocols.errors import InputValidationError
from tests.helpers.estimators import fast_instances, name_of

EPSILON, DELTA = 0.8, 1e-5
#: sigma / Delta of one analytic Gaussian release at (EPSILON, DELTA)
UNIT = gaussian_noise_scale(1.0, EPSILON, DELTA, "analytic")

NOT_DP = (PPPCA, PooledPCA, RetractedSNPCA)
DP_ESTIMATORS = [
    e.set_params(epsilon=EPSILON, **({"delta": DELTA} if "delta" in e.get_params() else {}))
    for e in fast_instances()
    if not isinstance(e, NOT_DP)
]


def _parts() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=(n, 5)) * [1.0, 0.6, 0.4, 0.2, 0.1] for n in (60, 40, 50)]
    return [p / (1.5 * max(1.0, float(np.max(np.linalg.norm(p, axis=1))))) for p in parts]


def _expected_rho(model) -> float:
    """The zCDP cost of the fitted model's release(s), from its public noise parameters."""
    if isinstance(model, ExponentialMechanismPCA):
        return EPSILON**2 / 2  # pure epsilon-DP (Bun & Steinke 2016, Prop. 1.4)
    if isinstance(model, PrivatePowerMethodPCA):
        return EPSILON**2 / (8 * math.log(1 / DELTA))  # L Gaussian iterations (mechanisms module)
    if isinstance(model, CapeAGN):
        half = gaussian_noise_scale(1.0, EPSILON / 2, DELTA / 2, "analytic")
        return 2 / (2 * half**2)  # two releases at (epsilon / 2, delta / 2) each
    if isinstance(model, DPDPCA):
        return 1 / (2 * (model.noise_sigma_ / centred_scatter_sensitivity("replace-one")) ** 2)
    if isinstance(model, PPPCADP):
        return 1 / (2 * model.plan_.unit_sigma**2)
    return 1 / (2 * UNIT**2)  # AG, LocalPCA, DPdisPCA, CapePCA (joint view): one Gaussian release


@pytest.mark.parametrize("estimator", DP_ESTIMATORS, ids=name_of)
def test_every_dp_estimator_charges_its_release_once(estimator):
    accountant = PrivacyAccountant(10.0, 1e-3, composition="zcdp")
    model = clone(estimator).set_params(accountant=accountant).fit(_parts())
    assert len(accountant.charges) == 1
    (charge,) = accountant.charges
    pure = isinstance(model, ExponentialMechanismPCA)
    assert charge.label == type(model).__name__ or (isinstance(model, PPPCADP) and charge.label == "pppca-dp")
    assert charge.epsilon == pytest.approx(EPSILON, rel=1e-12)
    assert charge.delta == (0.0 if pure else pytest.approx(DELTA, rel=1e-12))
    assert charge.rho == pytest.approx(_expected_rho(model), rel=1e-9)
    model.fit(_parts())  # a second run is charged again
    assert len(accountant.charges) == 2


@pytest.mark.parametrize("estimator", DP_ESTIMATORS, ids=name_of)
def test_a_run_beyond_the_budget_is_refused_and_not_charged(estimator):
    accountant = PrivacyAccountant(EPSILON / 2, 1e-3, composition="basic")
    model = clone(estimator).set_params(accountant=accountant)
    with pytest.raises(PrivacyBudgetExceededError, match=type(estimator).__name__ + "|pppca-dp"):
        model.fit(_parts())
    assert accountant.charges == [] and not hasattr(model, "components_")


@pytest.mark.parametrize("estimator", DP_ESTIMATORS, ids=name_of)
def test_bad_input_is_refused_before_the_accountant_is_charged(estimator):
    accountant = PrivacyAccountant(10.0, 1e-3, composition="basic")
    parts = _parts()
    parts[1] = parts[1][:, :4]
    with pytest.raises(InputValidationError, match="features"):
        clone(estimator).set_params(accountant=accountant).fit(parts)
    assert accountant.charges == []


@pytest.mark.parametrize(
    "estimator",
    [
        CapePCA(2, epsilon=EPSILON, delta=DELTA, calibration="paper", random_state=0),
        CapeAGN(2, model="mog", sigma=0.1, epsilon=EPSILON, delta=DELTA, calibration="paper", random_state=0),
        DPDPCA(
            2,
            epsilon=EPSILON,
            delta=DELTA,
            calibration="paper",
            key_bits=256,
            allow_insecure_key_size=True,
            frac_bits=8,
            mask_bits=40,
            row_norm="clip",
            random_state=0,
        ),
    ],
    ids=name_of,
)
def test_a_weaker_calibration_is_charged_its_effective_epsilon(estimator):
    accountant = PrivacyAccountant(100.0, 1e-3, composition="basic")
    model = clone(estimator).set_params(accountant=accountant).fit(_parts())
    (charge,) = accountant.charges
    assert model.effective_epsilon_ > EPSILON * 1.05
    assert charge.epsilon == pytest.approx(model.effective_epsilon_, rel=1e-12)


def test_capepca_paper_calibration_rho_is_that_of_the_joint_view():
    accountant = PrivacyAccountant(100.0, 1e-3)
    CapePCA(2, epsilon=EPSILON, delta=DELTA, calibration="paper", random_state=0, accountant=accountant).fit(
        _parts()
    )
    n_sites = 3
    joint_unit = UNIT / math.sqrt(2 * n_sites / (n_sites + 1))  # the paper's noise, seen jointly
    assert accountant.charges[0].rho == pytest.approx(1 / (2 * joint_unit**2), rel=1e-12)


@pytest.mark.parametrize("estimator", DP_ESTIMATORS, ids=name_of)
def test_no_privacy_cannot_be_paid_for(estimator):
    accountant = PrivacyAccountant(10.0, 1e-3, composition="basic")
    with pytest.raises(PrivacyBudgetExceededError, match="epsilon=inf"):
        clone(estimator).set_params(epsilon=math.inf, accountant=accountant).fit(_parts())
    assert accountant.charges == []


@pytest.mark.parametrize(
    ("estimator", "reason"),
    [
        (PooledPCA(2), "exact, non-private pooled subspace"),
        (RetractedSNPCA(2, random_state=0), "not differentially private"),
    ],
    ids=lambda x: x if isinstance(x, str) else name_of(x),
)
def test_non_dp_estimators_refuse_an_accountant(estimator, reason):
    accountant = PrivacyAccountant(10.0, 1e-3)
    with pytest.raises(InputValidationError, match=reason):
        clone(estimator).set_params(accountant=accountant).fit(_parts())
    assert accountant.charges == []


def test_without_an_accountant_nothing_is_charged_and_the_result_is_the_same():
    accountant = PrivacyAccountant(10.0, 1e-3)
    charged = AnalyzeGaussPCA(2, epsilon=EPSILON, random_state=0, accountant=accountant).fit(_parts())
    free = AnalyzeGaussPCA(2, epsilon=EPSILON, random_state=0).fit(_parts())
    np.testing.assert_array_equal(charged.components_, free.components_)
    assert LocalPCA().get_params()["accountant"] is None and DPdisPCA().accountant is None
