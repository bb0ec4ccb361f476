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

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r}, runs={len(self.charges)})"
        )

    # -- what has been spent -----------------------------------------------------------
    @property
    def spent_epsilon(self) -> float:
        """``epsilon`` spent so far under this accountant's composition rule."""
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
