"""A privacy budget across runs: refuse a run once the (epsilon, delta) budget would be exceeded.

One :class:`PrivacyAccountant` stands for one data set (its individuals'
budget). Estimators that accept ``accountant=`` charge it **before any party
sends anything**; a refused run sends nothing, and a charged run stays charged
even if it later fails (the noise may already be out).

Two composition rules:

``"basic"``
    Basic composition (Dwork & Roth 2014, Thm 3.16): ``k`` runs that are
    ``(epsilon_i, delta_i)``-DP are ``(sum epsilon_i, sum delta_i)``-DP.
``"zcdp"``
    Zero-concentrated DP (Bun & Steinke, TCC 2016): a Gaussian mechanism with
    ``sigma / Delta = u`` is ``rho = 1 / (2 u^2)``-zCDP (Prop. 1.6), pure
    ``epsilon``-DP is ``epsilon^2 / 2``-zCDP (Prop. 1.4), ``rho`` adds up
    over runs (Lemma 1.7), and ``rho``-zCDP gives
    ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP (Prop. 1.3). The budget
    ``(epsilon, delta)`` is met while that converted ``epsilon`` stays within
    it. Much tighter than basic composition for many Gaussian runs.

Examples
--------
>>> acct = PrivacyAccountant(2.0, 1e-5, composition="basic")
>>> acct.charge(1.5, 1e-6, label="first run")
>>> acct.charge(1.0, 1e-6, label="second run")
Traceback (most recent call last):
...
protocols.dp.accounting.PrivacyBudgetExceededError: second run needs (epsilon=1, delta=1e-06) but only \
(epsilon=0.5, delta=9e-06) of the budget (epsilon=2, delta=1e-05) is left (basic composition)

Every DP estimator keeps a **default accountant** of its own when it is given
none (``accountant=None``), as diffprivlib's estimators do:
:func:`fit_accountant` creates it on the estimator's first fit (an
:meth:`PrivacyAccountant.unlimited` one, which refuses nothing and records
everything) and keeps it across fits, so two fits of one estimator show in
its ``accountant_.spent_budget``. It belongs to the estimator instance, never
to a process-wide singleton: ``sklearn.base.clone`` gives a new estimator
with a fresh one.

>>> acct = PrivacyAccountant.unlimited()
>>> acct.charge(1.0, 1e-6, label="fit")
>>> acct.charge(1.0, 1e-6, label="fit")
>>> acct.spent_budget, acct.spent_epsilon
([(1.0, 1e-06), (1.0, 1e-06)], 2.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from protocols.dp.calibration import check_delta_value, check_epsilon_value
from protocols.errors import InputValidationError

COMPOSITIONS = ("basic", "zcdp")


class PrivacyBudgetExceededError(InputValidationError):
    """A run would spend more privacy than the accountant has left; nothing was sent."""


@dataclass(frozen=True)
class Charge:
    """One recorded run."""

    label: str
    epsilon: float
    delta: float
    rho: float | None


class PrivacyAccountant:
    """Track the privacy spent on one data set and refuse runs beyond the budget.

    Parameters
    ----------
    epsilon : float
        Total budget ``epsilon > 0`` (finite).
    delta : float
        Total budget ``0 < delta < 1``.
    composition : {"zcdp", "basic"}, default="zcdp"
        How runs compose (module docstring). ``"zcdp"`` accepts only charges
        that state their ``rho`` (Gaussian mechanisms) or are pure DP
        (``delta = 0``).
    """

    def __init__(self, epsilon: float, delta: float, composition: str = "zcdp") -> None:
        eps = check_epsilon_value(epsilon)
        if math.isinf(eps):
            raise InputValidationError("an accountant's epsilon budget must be finite")
        self.epsilon = eps
        self.delta = check_delta_value(delta)
        if composition not in COMPOSITIONS:
            raise InputValidationError(
                f"composition={composition!r} is not supported; choose one of {list(COMPOSITIONS)}"
            )
        self.composition = composition
        self.charges: list[Charge] = []
        self.unlimited_budget = False

    @classmethod
    def unlimited(cls) -> PrivacyAccountant:
        """An accountant without a budget: it refuses no run and records every one (basic composition).

        What an estimator charges when it is given no accountant
        (:func:`fit_accountant`); ``epsilon = inf`` runs (no privacy) are
        recorded as such, so :attr:`spent_epsilon` says ``inf`` after one.
        """
        acct = cls(1.0, 0.5, composition="basic")
        acct.epsilon, acct.delta, acct.unlimited_budget = math.inf, 1.0, True
        return acct

    def __repr__(self) -> str:
        if self.unlimited_budget:
            return f"PrivacyAccountant.unlimited(runs={len(self.charges)})"
        return (
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, runs={len(self.charges)})"
        )

    @property
    def spent_budget(self) -> list[tuple[float, float]]:
        """``(epsilon, delta)`` of every recorded run, oldest first (as diffprivlib's ``spent_budget``)."""
        return [(c.epsilon, c.delta) for c in self.charges]

    # -- what has been spent -----------------------------------------------------------
    @property
    def spent_epsilon(self) -> float:
        """``epsilon`` spent so far under this accountant's composition rule.

        Under ``"zcdp"`` this is the total ``rho`` converted at the **budget's**
        ``delta``, ``rho + 2 sqrt(rho ln(1/delta))``, so after one run it is
        larger than that run's own ``epsilon``: a ``(1, 1e-6)`` Gaussian run
        (``rho = 0.028``) under a budget with ``delta = 1e-5`` shows
        ``1.164``. The conversion is looser than one Gaussian release's own
        calibration, and tighter than basic composition from the second run
        on (two such runs: ``1.662``, not ``2``). :attr:`spent_budget` keeps
        every run's own ``(epsilon, delta)``.
        """
        if self.composition == "basic":
            return sum(c.epsilon for c in self.charges)
        return self._zcdp_epsilon(self.spent_rho)

    @property
    def spent_delta(self) -> float:
        """``delta`` spent so far (under zCDP: the whole budget's ``delta`` once anything is spent)."""
        if self.composition == "basic":
            return sum(c.delta for c in self.charges)
        return self.delta if self.charges else 0.0

    @property
    def spent_rho(self) -> float:
        """Total ``rho`` of the zCDP charges."""
        return sum(c.rho or 0.0 for c in self.charges)

    def _zcdp_epsilon(self, rho: float) -> float:
        return rho + 2.0 * math.sqrt(rho * math.log(1.0 / self.delta))

    # -- charging ------------------------------------------------------------------------
    def charge(self, epsilon: float, delta: float, *, rho: float | None = None, label: str = "run") -> None:
        """Record one run's ``(epsilon, delta)`` (and ``rho`` for zCDP), or refuse it.

        Raises
        ------
        PrivacyBudgetExceededError
            If the run would exceed the budget; nothing is recorded then.
        InputValidationError
            For ``epsilon = inf`` (no privacy: it cannot be accounted) or, under
            zCDP, a charge with ``delta > 0`` and no ``rho``.
        """
        eps = check_epsilon_value(epsilon)
        if self.unlimited_budget:
            dlt = float(delta)
            if math.isnan(dlt) or not 0.0 <= dlt < 1.0:
                raise InputValidationError(f"delta={delta!r} must satisfy 0 <= delta < 1")
            self.charges.append(Charge(label, eps, dlt, rho))
            return
        if math.isinf(eps):
            raise PrivacyBudgetExceededError(
                f"{label} has epsilon=inf (no privacy); an accountant cannot pay for it"
            )
        dlt = float(delta)
        if math.isnan(dlt) or not 0.0 <= dlt < 1.0:
            raise InputValidationError(f"delta={delta!r} must satisfy 0 <= delta < 1")
        if self.composition == "basic":
            left_eps = self.epsilon - self.spent_epsilon
            left_delta = self.delta - self.spent_delta
            if eps > left_eps * (1 + 1e-12) or dlt > left_delta * (1 + 1e-12):
                raise PrivacyBudgetExceededError(
                    f"{label} needs (epsilon={eps:g}, delta={dlt:g}) but only (epsilon={max(left_eps, 0):g}, "
                    f"delta={max(left_delta, 0):g}) of the budget (epsilon={self.epsilon:g}, "
                    f"delta={self.delta:g}) is left (basic composition)"
                )
            self.charges.append(Charge(label, eps, dlt, rho))
            return
        if rho is None:
            if dlt > 0:
                raise InputValidationError(
                    f"{label}: zCDP accounting needs the mechanism's rho (Gaussian mechanisms state it); "
                    "use composition='basic' for (epsilon, delta) mechanisms without one"
                )
            rho = eps * eps / 2.0
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0 <= rho < math.inf:
            raise InputValidationError(f"rho={rho!r} must be finite and >= 0")
        total = self.spent_rho + float(rho)
        if self._zcdp_epsilon(total) > self.epsilon * (1 + 1e-12):
            raise PrivacyBudgetExceededError(
                f"{label} needs rho={rho:.6g}, bringing the total to rho={total:.6g}, i.e. "
                f"epsilon={self._zcdp_epsilon(total):.6g} at delta={self.delta:g}, beyond the budget "
                f"epsilon={self.epsilon:g} (zCDP composition; rho spent so far {self.spent_rho:.6g})"
            )
        self.charges.append(Charge(label, eps, dlt, float(rho)))


def gaussian_rho(unit_sigma: float) -> float:
    """``rho = 1 / (2 u^2)`` of a Gaussian mechanism with ``sigma / Delta = u`` (Bun & Steinke 2016, Prop. 1.6)."""
    if unit_sigma <= 0:
        return math.inf
    return 1.0 / (2.0 * unit_sigma * unit_sigma)


def charge_gaussian(
    accountant: PrivacyAccountant | None,
    epsilon: float,
    delta: float,
    unit_sigma: float,
    label: str,
) -> None:
    """Charge ``accountant`` (if any) for one Gaussian release with ``sigma / Delta = unit_sigma``."""
    if accountant is None:
        return
    if not isinstance(accountant, PrivacyAccountant):
        raise InputValidationError(f"accountant must be a PrivacyAccountant or None, got {accountant!r}")
    accountant.charge(epsilon, delta, rho=gaussian_rho(unit_sigma), label=label)


def fit_accountant(estimator: object) -> PrivacyAccountant:
    """The accountant one fit of ``estimator`` charges (recorded as ``estimator._charged_accountant``).

    ``estimator.accountant`` when it is given; otherwise the estimator's own
    default accountant (:meth:`PrivacyAccountant.unlimited`), created on its
    first fit and kept (as ``estimator._default_accountant``) for the
    estimator's later fits. The default is not a parameter: ``get_params``
    and ``sklearn.base.clone`` never see it, and a clone starts with a fresh
    one. The estimators show the charged accountant as ``accountant_``.

    Raises
    ------
    InputValidationError
        If ``estimator.accountant`` is neither ``None`` nor a :class:`PrivacyAccountant`.
    """
    given = getattr(estimator, "accountant", None)
    if given is None:
        given = getattr(estimator, "_default_accountant", None)
        if not isinstance(given, PrivacyAccountant):
            given = PrivacyAccountant.unlimited()
            estimator._default_accountant = given  # type: ignore[attr-defined]
    elif not isinstance(given, PrivacyAccountant):
        raise InputValidationError(f"accountant must be a PrivacyAccountant or None, got {given!r}")
    estimator._charged_accountant = given  # type: ignore[attr-defined]
    return given
