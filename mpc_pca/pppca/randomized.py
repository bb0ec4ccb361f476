"""PPPCA's ``svd_solver``: the exact covariance path, or ``pppca-randomized`` for wide data (issue 37).

``svd_solver`` chooses which protocol object :class:`~mpc_pca.PPPCA` runs:

``"full"``, ``"covariance_eigh"``, ``"arpack"``
    Today's exact path (``pppca-ss`` / ``pppca-he``): the providers send
    shares of their ``d (d + 1) / 2`` Gram entries and the pooled covariance
    is eigendecomposed exactly (by the server, or on shares with
    ``reveal="components"``). ``"arpack"`` maps here: the exact
    decomposition is within any ARPACK tolerance, and no party holds the
    pooled rows ARPACK would iterate on.
``"randomized"``
    ``pppca-randomized`` (:mod:`mpc_pca.wide`): randomized block subspace
    iteration, one secure sum of a ``d x b`` block per product
    (``b = k + n_oversamples``), no ``d x d`` array anywhere. ``iterated_power``
    (``"auto"``: scikit-learn's 7 or 4) caps the products at
    ``iterated_power + 1``; ``tol > 0`` stops earlier once the Ritz values move
    by at most ``tol`` relatively and every residual is at most
    ``tol * lambda_1`` (``tol=0``: no early stop, as scikit-learn);
    ``random_state`` gives the **public** seed of the start block (an int is
    the seed itself; ``None`` or a ``RandomState`` draws one): every party
    derives the block from it, it is not a secret. ``iterates`` says who
    leads the iterations and sees the products ``C Q_i``
    (docs/explanation/trust-model.md): ``"server"`` (the default) or
    ``"sites"`` (``provider0``; the server learns only the output: the pooled
    mean, the total variance, the components and eigenvalues).
``"auto"`` (the default)
    ``"randomized"`` with ``iterates="sites"`` (the only solver with that
    mode; the exact solvers refuse it); else ``"randomized"`` when ``d >= AUTO_MIN_FEATURES``, ``k`` is an integer below
    ``0.8 min(N, d)`` (scikit-learn's own condition) and no other setting
    rules it out (:func:`randomized_conflicts`), with a
    :class:`SolverChoiceWarning` saying so; else the exact path. It is no
    privacy downgrade: with the default ``reveal="covariance"`` the server
    sees the whole covariance, with ``pppca-randomized`` only its products
    with ``iterated_power + 1`` blocks of ``b`` columns.

The threshold (:data:`AUTO_MIN_FEATURES`) comes from a measurement in one
process: synthetic rows (``N = 2000``, ten spiked directions over unit noise,
three providers), ``k = 10``, the additive backend, defaults otherwise (8
products), one fit each, one BLAS thread, a shared 2-core machine; seconds and
the bytes ``provider0`` sent, by
``PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python tools/solver_threshold.py --widths 100 250 500 1000 2000 4000``:

=====  =============  ==========  ==============  ==========
d      covariance s   random. s   covariance B    random. B
=====  =============  ==========  ==============  ==========
100    0.09           0.04        142,432         81,492
250    0.10           0.09        508,762         323,034
500    0.21           0.11        1,513,762       645,034
1000   0.66           0.19        5,055,892       1,289,034
2000   3.92           0.41        18,107,892      2,577,034
4000   20.65          0.67        68,340,022      5,153,034
=====  =============  ==========  ==============  ==========

In one process ``pppca-randomized`` is faster and sends less at every width
measured: there is no crossover to read off. Below ``d = 1000`` the exact
path costs under a quarter of a second and 1.5 MB per provider and gives the
exact decomposition (every eigenvalue, scikit-learn parity to rounding), so
``"auto"`` keeps it there; from ``d = 1000`` on its cost grows as ``d^2``
(3.5x the randomized time at 1000, 30x at 4000) while the randomized cost
grows as ``d``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.sparse import issparse
from sklearn.utils import check_random_state

from protocols.backends import SecureSumBackend
from protocols.errors import InputValidationError

#: ``svd_solver`` values that run today's exact covariance path.
EXACT_SOLVERS = ("full", "covariance_eigh", "arpack")
RANDOMIZED = "randomized"
#: What ``svd_solver_`` records for the exact path.
EXACT = "covariance_eigh"
#: ``"auto"`` picks ``"randomized"`` from this many columns on (module notes: the measurement).
AUTO_MIN_FEATURES = 1000
#: The secure-sum backends ``pppca-randomized`` runs on (``mpc_pca.wide.deployment.BACKENDS``; a test keeps them equal).
RANDOMIZED_BACKENDS = ("additive", "additive-masks", "additive-sparse-masks")
#: The estimator name of the protocol object ``svd_solver="randomized"`` runs.
PROTOCOL = "pppca-randomized"


class SolverChoiceWarning(UserWarning):
    """``svd_solver="auto"`` chose ``"randomized"`` (``pppca-randomized``) for wide rows."""


def shape_of(parts: list[Any]) -> tuple[int, int] | None:
    """``(N, d)`` of the parts (total rows, the first part's width); ``None`` unless every part is 2-D.

    The protocols refuse parts of other shapes, or of different widths, in their own words.
    """
    shapes = [p.shape if issparse(p) else np.shape(p) for p in parts]
    if not shapes or any(len(s) != 2 for s in shapes):
        return None
    return sum(int(s[0]) for s in shapes), int(shapes[0][1])


def randomized_conflicts(estimator: Any, parts: list[Any], backend: str) -> list[str]:
    """Every setting of ``estimator`` (and its rows) that ``svd_solver="randomized"`` cannot run with."""
    shape = shape_of(parts)
    k = estimator.n_components
    found = []
    if isinstance(k, (str, float)):
        found.append(
            f"n_components={k!r} "
            + (
                "cannot be a string"
                if isinstance(k, str)
                else "must be between 1 and min(n_samples, n_features)"
            )
            + " with svd_solver='randomized': it needs an integer number of components k "
            "(a float ratio and 'mle' choose k from the whole spectrum: svd_solver='full')"
        )
    elif k is not None and shape is not None and not 1 <= int(k) <= min(shape):
        found.append(
            f"n_components={k} with svd_solver='randomized' must be in [1, min(N={shape[0]}, d={shape[1]})]"
        )
    if estimator.reveal != "covariance":
        found.append(
            f"reveal={estimator.reveal!r}: svd_solver='randomized' takes no reveal; it keeps the covariance "
            "from the server with iterates='server' (the server sees the iterates C Q) or iterates='sites' "
            "(the server learns only the output)"
        )
    if backend not in RANDOMIZED_BACKENDS:
        found.append(f"backend={backend!r}: svd_solver='randomized' runs on {list(RANDOMIZED_BACKENDS)}")
    if estimator.dropout_threshold is not None:
        found.append(
            f"dropout_threshold={estimator.dropout_threshold}: svd_solver='randomized' has no dropout "
            "tolerance (every product needs every site)"
        )
    if not 0 <= estimator.tol < 1:
        found.append(f"tol={estimator.tol}: svd_solver='randomized' stops when it reaches a tol in [0, 1)")
    if any(issparse(p) for p in parts):
        found.append(
            "sparse rows: svd_solver='randomized' reads dense rows (svd_solver='covariance_eigh' takes them)"
        )
    return found


def resolve_solver(estimator: Any, parts: list[Any], backend: str) -> str:
    """``"randomized"`` or ``"covariance_eigh"`` for this fit, refusing a randomized run that cannot be.

    Raises
    ------
    InputValidationError
        ``svd_solver="randomized"`` with a setting it does not combine with
        (every such setting named, with both values), or ``iterates="sites"``
        with an exact solver, before anything is sent.
    """
    solver = estimator.svd_solver
    if estimator.iterates != "server":
        if solver in EXACT_SOLVERS:
            raise InputValidationError(
                f"iterates={estimator.iterates!r} is a mode of svd_solver='randomized' (a site leads its "
                f"iterations); svd_solver={solver!r} runs the exact covariance path, which has no iterates: "
                "pass svd_solver='randomized' (or 'auto') or iterates='server'"
            )
        if solver != RANDOMIZED:
            warnings.warn(
                f"svd_solver={solver!r} chose 'randomized' ({PROTOCOL}) because iterates={estimator.iterates!r} "
                "is a mode of that solver only, whatever the number of columns",
                SolverChoiceWarning,
                stacklevel=5,  # resolve_solver, _prepare, _run, fit: the caller of fit
            )
        solver = RANDOMIZED
    if solver in EXACT_SOLVERS:
        return EXACT
    conflicts = randomized_conflicts(estimator, parts, backend)
    if solver == RANDOMIZED:
        if conflicts:
            raise InputValidationError("; ".join(conflicts))
        return RANDOMIZED
    shape = shape_of(parts)
    k = estimator.n_components
    if conflicts or k is None or shape is None:
        return EXACT
    n, d = shape
    if d < AUTO_MIN_FEATURES or not int(k) < 0.8 * min(n, d):
        return EXACT
    warnings.warn(
        f"svd_solver='auto' chose 'randomized' ({PROTOCOL}: randomized subspace iteration, the server sees "
        f"the products C Q) for d={d} >= {AUTO_MIN_FEATURES} columns and n_components={k}; pass "
        "svd_solver='covariance_eigh' for the exact covariance path",
        SolverChoiceWarning,
        stacklevel=5,  # resolve_solver, _prepare, _run, fit: the caller of fit
    )
    return RANDOMIZED


def components_for(n_components: Any, parts: list[Any]) -> int:
    """``k``: ``n_components``, or ``min(N, d)`` for ``None`` (scikit-learn's randomized solver)."""
    if n_components is not None:
        return int(n_components)
    shape = shape_of(parts)
    if shape is None:
        raise InputValidationError("every part must be a 2-D array of rows")
    return min(shape)


def start_seed(random_state: Any) -> int:
    """The public start seed: an int ``random_state`` itself, else one drawn from it (``None``: numpy's global state)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(0, 2**62, dtype=np.int64))


def randomized_settings(estimator: Any, seed: int, backend: SecureSumBackend, k: int) -> dict[str, Any]:
    """``pppca-randomized``'s settings from the estimator's parameters (module notes); ``k`` resolved."""
    power = estimator.iterated_power
    return {
        "n_components": int(k),
        "backend": backend.name,
        "frac_bits": backend.codec.frac_bits,
        "standardize": bool(estimator.standardize),
        "n_oversamples": int(estimator.n_oversamples),
        "iterated_power": None if power == "auto" else int(power),
        "tol": float(estimator.tol) if estimator.tol > 0 else None,
        "start_seed": seed,
        "iterates": estimator.iterates,
    }


def store_randomized(estimator: Any, model: Any) -> None:
    """The fitted attributes of a ``pppca-randomized`` run (its server's ``WideModel``)."""
    for stale in ("variance_error_bound_", "component_error_bounds_", "dropped_providers_"):
        estimator.__dict__.pop(stale, None)
    estimator.mean_ = model.mean
    estimator.scale_ = model.scale
    estimator.n_samples_ = model.n_samples
    estimator.components_ = model.components
    estimator.n_components_, estimator.n_features_in_ = model.components.shape
    estimator.explained_variance_ = model.explained_variance
    total = float(model.total_variance)
    estimator.explained_variance_ratio_ = (
        model.explained_variance / total if total > 0 else np.zeros_like(model.explained_variance)
    )
    estimator.total_variance_ = total
    estimator.solver_report_ = model.solver.report()
    estimator.product_error_bound_ = model.product_error_bound


__all__ = [
    "AUTO_MIN_FEATURES",
    "EXACT",
    "EXACT_SOLVERS",
    "RANDOMIZED",
    "RANDOMIZED_BACKENDS",
    "SolverChoiceWarning",
    "components_for",
    "randomized_conflicts",
    "randomized_settings",
    "resolve_solver",
    "start_seed",
    "store_randomized",
]
