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


__all__ = ["SOLVER_DEFAULTS", "as_pca"]
