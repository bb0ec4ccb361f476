"""The estimators' parameter checks, declared once per class in ``_parameter_constraints``.

As scikit-learn's: a dict from each ``__init__`` parameter to a check built
from :func:`one_of`, :func:`integer`, :func:`real`, :func:`boolean`,
:func:`instance_of` or :func:`validated_by` (which wraps an existing
validator such as :func:`mpc_pca.dp.mechanisms.check_epsilon`).
:func:`validate_params` runs them all at the start of ``fit``, before any
party starts; each error names the parameter, the value and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from protocols.errors import InputValidationError

#: A parameter check: called with the parameter's name and value, raises
#: :class:`InputValidationError` naming both and what is allowed.
ParamCheck = Callable[[str, Any], None]


def one_of(*allowed: object) -> ParamCheck:
    """A parameter that must be one of ``allowed`` (strings, ``None``, ...)."""

    def check(name: str, value: Any) -> None:
        if not any(value is a or (type(value) is type(a) and value == a) for a in allowed):
            raise InputValidationError(f"{name}={value!r} is not supported; choose one of {list(allowed)}")

    return check


def integer(low: int | None = None, high: int | None = None, *, none: bool = False) -> ParamCheck:
    """An integer (not a bool) in ``[low, high]`` (either bound optional); ``None`` too if ``none``."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        is_integer = isinstance(value, Integral) and not isinstance(value, bool)
        if not is_integer or (low is not None and value < low) or (high is not None and value > high):
            bounds = [f">= {low}"] * (low is not None) + [f"<= {high}"] * (high is not None)
            allowed = (
                "an integer" + (" " + " and ".join(bounds) if bounds else "") + (" or None" if none else "")
            )
            raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def real(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    none: bool = False,
) -> ParamCheck:
    """A real number (not a bool, not NaN) between ``low`` and ``high``; open ends on request."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        ok = not isinstance(value, bool) and isinstance(value, Real) and not math.isnan(float(value))
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            bounds = []
            if low is not None:
                bounds.append(f"{'>' if low_open else '>='} {low:g}")
            if high is not None:
                bounds.append(f"{'<' if high_open else '<='} {high:g}")
            allowed = (
                "a real number"
                + (" " + " and ".join(bounds) if bounds else "")
                + (" or None" if none else "")
            )
            raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def n_components_check(*, rules: bool = False, none: bool = True) -> ParamCheck:
    """``n_components``: an integer >= 1 (or ``None`` if ``none``); with ``rules`` also a variance fraction or ``"mle"``.

    An integer below 1 gets scikit-learn's ``PCA`` wording ("must be between 1
    and min(n_samples, n_features)"); the upper limit is checked with the data
    (:func:`mpc_pca.validation.check_n_components`).

    Examples
    --------
    >>> n_components_check()("n_components", 0)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: n_components=0 is out of range; it must be between 1 and min(n_samples, n_features)
    """

    def check(name: str, value: Any) -> None:
        if (none and value is None) or (rules and isinstance(value, str) and value == "mle"):
            return
        if isinstance(value, Integral) and not isinstance(value, bool):
            if value < 1:
                raise InputValidationError(
                    f"{name}={value!r} is out of range; it must be between 1 and min(n_samples, n_features)"
                )
            return
        if rules and isinstance(value, float) and 0.0 < value < 1.0:
            return
        allowed = (
            "an integer >= 1, a variance fraction (a float > 0 and < 1), 'mle' or None"
            if rules
            else ("an integer >= 1 or None")
        )
        raise InputValidationError(f"{name}={value!r} is invalid; it must be {allowed}")

    return check


def boolean() -> ParamCheck:
    """``True`` or ``False`` (numpy booleans too)."""

    def check(name: str, value: Any) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise InputValidationError(f"{name} must be True or False, got {value!r}")

    return check


def instance_of(*types: type | None) -> ParamCheck:
    """An instance of one of ``types``; ``None`` in ``types`` allows ``None``."""

    def check(name: str, value: Any) -> None:
        if value is None and None in types:
            return
        classes = tuple(t for t in types if isinstance(t, type))
        if not isinstance(value, classes):
            allowed = " or ".join("None" if t is None else t.__name__ for t in types)
            raise InputValidationError(f"{name} must be {allowed}, got {value!r}")

    return check


def validated_by(validator: Callable[[Any], object], *, none: bool = False) -> ParamCheck:
    """Reuse an existing validator ``validator(value)`` (it raises naming the value and the limit)."""

    def check(name: str, value: Any) -> None:
        if none and value is None:
            return
        try:
            validator(value)
        except InputValidationError as exc:
            if name in str(exc):
                raise
            raise type(exc)(f"{name}={value!r}: {exc}") from exc

    return check


def all_of(*checks: ParamCheck) -> ParamCheck:
    """Every one of ``checks`` must pass (in order)."""

    def check(name: str, value: Any) -> None:
        for one in checks:
            one(name, value)

    return check


def validate_params(estimator: BaseEstimator) -> None:
    """Check every constructor parameter of ``estimator`` against its class's ``_parameter_constraints``.

    Raises
    ------
    InputValidationError
        Naming the parameter, its value and what is allowed.
    TypeError
        If the class leaves a parameter undeclared (a bug in the class, not in the input).
    """
    constraints: dict[str, ParamCheck] = getattr(type(estimator), "_parameter_constraints", {})
    params = estimator.get_params(deep=False)
    undeclared = sorted(set(params) - set(constraints))
    if undeclared:
        raise TypeError(f"{type(estimator).__name__} declares no constraint for parameters {undeclared}")
    for name, check in constraints.items():
        check(name, params[name])


__all__ = [
    "ParamCheck",
    "all_of",
    "boolean",
    "instance_of",
    "integer",
    "n_components_check",
    "one_of",
    "real",
    "validate_params",
    "validated_by",
]
