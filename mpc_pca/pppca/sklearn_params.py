"""scikit-learn ``PCA``'s solver parameters on :class:`~mpc_pca.PPPCA`: validated as scikit-learn does.

``svd_solver``, ``iterated_power``, ``n_oversamples``,
``power_iteration_normalizer``, ``random_state`` and ``copy`` choose how
scikit-learn computes a PCA of rows one process holds. On PPPCA,
``svd_solver`` chooses the protocol (:mod:`mpc_pca.pppca.randomized`:
``"randomized"`` runs ``pppca-randomized``, which uses ``iterated_power``,
``n_oversamples`` and ``random_state``); the exact path uses none of them,
and ``power_iteration_normalizer`` and ``copy`` change no result. PPPCA takes
them all so that code written for ``PCA`` runs unchanged, and refuses an
invalid value with scikit-learn's own wording (its
``PCA._parameter_constraints``, checked by its
``validate_parameter_constraints``).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from sklearn.decomposition import PCA
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from mpc_pca.params import ParamCheck
from protocols.errors import InputValidationError

#: scikit-learn ``PCA``'s solver parameters PPPCA takes, and their ``PCA`` defaults.
SOLVER_DEFAULTS: dict[str, Any] = {
    "copy": True,
    "svd_solver": "auto",
    "iterated_power": "auto",
    "n_oversamples": 10,
    "power_iteration_normalizer": "auto",
    "random_state": None,
}


def as_pca(caller: str = "PPPCA") -> ParamCheck:
    """A check that applies scikit-learn ``PCA``'s own constraint for the parameter, in its wording.

    Examples
    --------
    >>> as_pca()("svd_solver", "lapack")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: The 'svd_solver' parameter of PPPCA must be a str among {...}. Got 'lapack' instead.
    """

    def check(name: str, value: Any) -> None:
        constraints = {name: PCA._parameter_constraints[name]}
        try:
            validate_parameter_constraints(constraints, {name: value}, caller_name=caller)
        except InvalidParameterError as exc:
            raise InputValidationError(str(exc)) from None

    return check


def arpack_components(n_components: Any, shape: tuple[int, int] | None) -> Any:
    """``n_components`` for ``svd_solver="arpack"``: scikit-learn's truncated-solver range, in its wording.

    scikit-learn's ARPACK solver keeps ``1 <= k < min(n_samples, n_features)``
    integer components, and ``None`` means ``min(n_samples, n_features) - 1``.
    PPPCA runs its exact path for ``"arpack"`` but keeps the same parameter
    contract, so a fit that scikit-learn's ``PCA`` refuses is refused here too.

    Examples
    --------
    >>> arpack_components(None, (150, 4))
    3
    >>> arpack_components(2, (2, 3))
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: n_components=2 must be strictly less than min(n_samples, n_features)=2 with svd_solver='arpack'
    """
    if shape is None:  # the protocol refuses parts that are not 2-D arrays, in its own words
        return n_components
    limit = min(shape)
    if n_components is None:
        return limit - 1
    where = f"min(n_samples, n_features)={limit} with svd_solver='arpack'"
    if isinstance(n_components, str):
        raise InputValidationError(
            f"n_components={n_components!r} cannot be a string with svd_solver='arpack'"
        )
    if (
        isinstance(n_components, bool)
        or not isinstance(n_components, Integral)
        or not 1 <= int(n_components) <= limit
    ):
        raise InputValidationError(f"n_components={n_components!r} must be between 1 and {where}")
    if n_components == limit:
        raise InputValidationError(f"n_components={n_components!r} must be strictly less than {where}")
    return int(n_components)


def plain(n_components: Any) -> Any:
    """``n_components`` as the protocol announces it: a numpy integer as a Python ``int``.

    scikit-learn's ``PCA`` takes any integral ``n_components`` (its own tests
    pass ``np.minimum(n_samples, n_features) - 1``, a ``numpy.int64``); the
    parties' announcements carry plain ``int`` only.

    Examples
    --------
    >>> import numpy as np
    >>> type(plain(np.int64(3))).__name__, plain(0.9), plain("mle"), plain(None)
    ('int', 0.9, 'mle', None)
    """
    if isinstance(n_components, Integral) and not isinstance(n_components, bool):
        return int(n_components)
    return n_components


__all__ = ["SOLVER_DEFAULTS", "arpack_components", "as_pca", "plain"]
