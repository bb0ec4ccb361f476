"""What a dealer-free eigensolve consumes, planned before the data is read (its worst case).

The offline phase (:func:`protocols.tensor.offline_store.generate_offline`)
needs the list of items ahead of time. The ladder eigensolver's sequence of
products depends on the data in three ways, all bounded by public settings:
it may stop before ``max_iterations``; it squares the ladder only when the
holders ask for a higher power (at most :data:`~protocols.tensor.fast_eig_math.MAX_POWER_INDEX`
squarings); and the squarings' normalising shifts (the bits a truncation
drops) depend on revealed traces. :func:`ladder_plan` therefore lists the
worst case by kind and shape (:func:`spectrum_plan` the spectrum solver's
fixed sequence), and the store hands items out by kind and
shape with the bits chosen at use; the items a run does not need are
discarded with the store.

Counts follow :func:`protocols.tensor.fast_eig.ladder_eigenvectors` step by
step (docs/secure_tensor.md section 8.1); ``tests/protocols/tensor/test_offline_plan.py``
checks them against the items dealer-mode runs actually take.
"""

from __future__ import annotations

from protocols.errors import InputValidationError
from protocols.tensor.fast_eig_math import MAX_POWER_INDEX
from protocols.tensor.offline_store import Request
from protocols.tensor.session import ROTATIONS, Rotations


def _matmul(a: tuple[int, int], b: tuple[int, int], times: int = 1) -> list[Request]:
    return [Request("matmul", (a, b))] * times


def _truncation(shape: tuple[int, int], times: int = 1) -> list[Request]:
    return [Request("truncation", (shape,))] * times


def rotation_plan(size: int, n_holders: int, rotations: Rotations) -> list[Request]:
    """Items of one shared ``size x size`` rotation: ``M - 1`` products of the holders' factors (every-holder)."""
    if rotations not in ROTATIONS:
        raise InputValidationError(f"rotations={rotations!r} is not one of {ROTATIONS}")
    if rotations == "holder0":
        return []
    square = (size, size)
    return _matmul(square, square, n_holders - 1) + _truncation(square, n_holders - 1)


def ladder_plan(
    d: int, k: int, *, n_holders: int, max_iterations: int = 12, rotations: Rotations = "every-holder"
) -> list[Request]:
    """The most the ladder eigensolver can take at ``d``, ``k``, ``M`` and its iteration budget.

    Parameters
    ----------
    d, k : int
        Matrix size and components, ``1 <= k <= d``.
    n_holders : int
        ``M >= 2`` providers.
    max_iterations : int, default=12
        The solver's ``max_iterations``.
    rotations : {"every-holder", "holder0"}, default="every-holder"
        Who draws the masking rotation (the session's ``rotations``).
    """
    if not 1 <= k <= d or n_holders < 2 or not 1 <= max_iterations <= 100:
        raise InputValidationError(
            f"need 1 <= k <= d, M >= 2 and 1 <= max_iterations <= 100; got d={d}, k={k}, "
            f"M={n_holders}, max_iterations={max_iterations}"
        )
    square, basis, small = (d, d), (d, k), (k, k)
    gram = ((k, d), (d, k))
    plan = rotation_plan(k, n_holders, rotations)  # the masking rotation S, taken first
    plan += _truncation(square, 2)  # alpha C at F and F_HI bits
    plan += _truncation(basis, 2)  # X_0 at F_X and F bits
    for it in range(max_iterations):
        plan += _matmul(*gram) + _matmul(square, basis)  # round A: X^T X and P_j X
        if it > 0:
            plan += _matmul(*gram)  # X_prev^T X
        plan += _truncation(basis)  # round B: P_j X
        if it < max_iterations - 1:
            plan += _truncation(basis, 2)  # round C: X at F_X and F bits
    plan += _matmul(square, square, MAX_POWER_INDEX) + _truncation(square, MAX_POWER_INDEX)  # squarings
    plan += _truncation(basis)  # U = X R^-1
    plan += _matmul(basis, small) + _truncation(basis)  # Rayleigh-Ritz: B = U S
    plan += _matmul(square, basis) + _truncation(basis)  # C_hi B
    plan += _matmul(*gram)  # B^T C_hi B
    return plan


def spectrum_plan(d: int, *, n_holders: int, rotations: Rotations = "every-holder") -> list[Request]:
    """Everything the spectrum solver takes at ``d`` and ``M`` (its sequence does not depend on the data).

    :func:`protocols.tensor.spectrum_eig.spectrum_eigenvectors`: the ``d x d``
    rotation ``Q``, ``alpha C`` at ``F_HI`` bits, ``A = Q C_hi`` truncated, ``S = A Q^T``.
    """
    if d < 1 or n_holders < 2:
        raise InputValidationError(f"need d >= 1 and M >= 2; got d={d}, M={n_holders}")
    square = (d, d)
    plan = rotation_plan(d, n_holders, rotations)
    plan += _truncation(square)  # alpha C at F_HI bits
    plan += _matmul(square, square) + _truncation(square)  # A = Q C_hi
    plan += _matmul(square, square)  # S = A Q^T
    return plan
