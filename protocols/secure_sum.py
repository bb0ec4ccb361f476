"""The embeddable secure-sum primitive.

Use :func:`secure_sum` inside your own role functions: every party calls it with
its own array and the same ``contributors``/``receiver``; only ``receiver``
gets the sum back. Each party builds its own backend, so every sum first
checks that they match (backend name, i.e. the mode, ``frac_bits`` and the
mode's options; :mod:`protocols.agreement`): each contributor sends the
receiver its settings ahead of its first protocol message (one small message,
no added wait), and the receiver refuses a difference, naming both parties
and both values, before it reads anything else, so no silently wrong sum is
formed. :func:`run_secure_sum` is a convenience that runs one secure sum
in-process, one thread per party, when all inputs are local (tests, demos);
its parties share one backend, so it skips the check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.agreement import agree_sum_settings, settings_checked
from protocols.backends.additive import AdditiveBackend
from protocols.backends.base import SecureSumBackend, real_input
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.runtime import RunResult, run_inprocess
from protocols.triangle import from_upper_triangle, upper_triangle


def secure_sum(
    party: Party,
    value: ArrayLike | None,
    *,
    contributors: Sequence[str],
    receiver: str,
    backend: SecureSumBackend,
    name: str = "value",
    agree_settings: bool = True,
) -> NDArray[np.float64] | None:
    """Sum the contributors' arrays so that only ``receiver`` learns the result.

    Every party of the group calls this with the same ``contributors`` (same
    order), ``receiver`` and an equivalent ``backend``. Input is validated
    (finite, within the backend's range for ``len(contributors)`` summands)
    before this party sends anything.

    Every party builds its own backend, so by default the group agrees the
    backend's settings in the same call (backend name, i.e. the mode,
    ``frac_bits`` and the mode's options:
    :func:`protocols.agreement.agree_sum_settings`): each contributor sends
    the receiver its settings together with its first protocol message (one
    small message, no added wait; the receiver sends nothing more), and the
    receiver compares them with its own before it reads anything else. A
    difference raises :class:`~protocols.errors.InputValidationError` at the
    receiver naming both parties and both values (and every party's value),
    before any sum is formed, so nobody gets a silently wrong sum (different
    ``frac_bits`` would otherwise decode ``[2, 4, 6]`` as ``[1024.001,
    2048.002, 3072.003]``). ``agree_settings=False`` (all or none of the
    group) skips this when the caller has agreed the settings already, as the
    package's deployments do in their announcements.

    Parameters
    ----------
    party : Party
        The calling party.
    value : array_like or None
        This party's summand if it contributes; ``None`` for a receiver that
        only receives.
    contributors : sequence of str
        Names of the contributing parties.
    receiver : str
        Name of the only party that learns the sum (may be a contributor).
    backend : SecureSumBackend
        E.g. ``AdditiveBackend(mode="shares")``.
    name : str
        Name used in error messages.
    agree_settings : bool, default=True
        Agree the backend settings with the group in this sum (see above).

    Returns
    -------
    ndarray or None
        The sum at ``receiver``; ``None`` at every other party.

    Examples
    --------
    Inside a role function of party ``"clinic1"``::

        total = secure_sum(party, local_counts, contributors=["clinic0", "clinic1"],
                           receiver="analyst", backend=AdditiveBackend())
    """
    if agree_settings:
        _check_before_agreement(party, value, contributors, receiver, backend, name)
        party = agree_sum_settings(party, backend, contributors, receiver)
    total = backend.secure_sum(party, value, contributors=contributors, receiver=receiver, name=name)
    settings_checked(party)  # before the receiver returns anything
    return total


def _check_before_agreement(
    party: Party,
    value: ArrayLike | None,
    contributors: Sequence[str],
    receiver: str,
    backend: SecureSumBackend,
    name: str,
) -> None:
    """What the backend would refuse before its first send, refused before the settings message."""
    group = tuple(sorted(contributors))
    backend.check_group(party, group, receiver)
    if party.name in group:
        if value is None:
            raise InputValidationError(f"contributor {party.name!r} must pass an array, got None")
        backend.check_input(real_input(value, name), len(group), name)
    elif value is not None:
        raise InputValidationError(f"receiver {party.name!r} is not a contributor and must pass value=None")


def secure_sum_symmetric(
    party: Party,
    matrix: ArrayLike | None,
    *,
    contributors: Sequence[str],
    receiver: str,
    backend: SecureSumBackend,
    name: str = "symmetric matrix",
    agree_settings: bool = True,
) -> NDArray[np.float64] | None:
    """Secure sum of symmetric ``d x d`` matrices that sends only their upper triangles.

    Works with any backend: each contributor's ``d(d+1)/2`` entries on and
    above the diagonal are summed (PPPCA's Gram matrices, Liu et al. Alg. 1
    step 6 / Alg. 2 step 5, at nearly half the traffic) and the receiver gets
    the full symmetric sum. The strict lower triangle of the input is ignored.

    Parameters
    ----------
    party, contributors, receiver, backend, name, agree_settings
        As in :func:`secure_sum`.
    matrix : array_like of shape (d, d) or None
        This contributor's symmetric matrix; ``None`` for a receiver that only receives.

    Returns
    -------
    ndarray of shape (d, d) or None
        The symmetric sum at ``receiver``; ``None`` elsewhere.
    """
    triangle = None if matrix is None else upper_triangle(real_input(matrix, name))
    if agree_settings:
        _check_before_agreement(party, triangle, contributors, receiver, backend, name)
        party = agree_sum_settings(party, backend, contributors, receiver)
    total = backend.secure_sum(party, triangle, contributors=contributors, receiver=receiver, name=name)
    settings_checked(party)  # before the receiver returns anything
    if total is None:
        return None
    try:
        return from_upper_triangle(total)
    except InputValidationError as exc:
        raise ProtocolError(f"the summed triangle of {name} is malformed: {exc}") from exc


def run_secure_sum(
    values: Mapping[str, ArrayLike],
    *,
    receiver: str,
    backend: SecureSumBackend | str | None = None,
    timeout: float = 120.0,
) -> tuple[NDArray[np.float64], RunResult]:
    """Run one secure sum in-process (parties as threads) and return the receiver's result.

    Every input is validated before any thread starts, so a bad value aborts
    the run before anything is sent.

    Parameters
    ----------
    values : mapping of str to array_like
        Contributor name to its array; all arrays must have the same shape.
    receiver : str
        Name of the receiving party; if it is also a key of ``values`` it contributes.
    backend : SecureSumBackend or str, optional
        A backend object, or a command-line name of
        :data:`protocols.backends.BACKEND_NAMES` (built with
        :func:`protocols.backends.make_backend` and its defaults). Defaults to
        ``AdditiveBackend()`` (shares mode).

    Returns
    -------
    total : ndarray
        The sum as the receiver reconstructed it.
    run : RunResult
        Per-party outputs and traffic reports.
    """
    backend = _backend_object(backend)
    if not values:
        raise InputValidationError("run_secure_sum needs at least one contributor")
    arrays = {name: real_input(v, name) for name, v in values.items()}
    shapes = {name: a.shape for name, a in arrays.items()}
    if len(set(shapes.values())) != 1:
        raise InputValidationError(f"all contributed arrays must have the same shape, got {shapes}")
    contributors = tuple(arrays)
    for name, array in arrays.items():
        backend.check_input(array, len(contributors), name)

    def role(name: str):
        def run(party: Party):
            return backend.secure_sum(
                party, arrays.get(name), contributors=contributors, receiver=receiver, name=name
            )

        return run

    names = list(contributors) + ([receiver] if receiver not in arrays else [])
    result = run_inprocess({name: role(name) for name in names}, timeout=timeout)
    return result.outputs[receiver], result


def _backend_object(backend: object) -> SecureSumBackend:
    """``backend`` as :func:`run_secure_sum` takes it: ``None``, a backend object or a backend name."""
    if backend is None:
        return AdditiveBackend()
    if isinstance(backend, SecureSumBackend):
        return backend
    if isinstance(backend, str):
        from protocols.backends import make_backend

        return make_backend(backend)
    from protocols.backends import BACKEND_NAMES

    raise InputValidationError(
        f"backend={backend!r} ({type(backend).__name__}) is not a backend; pass a SecureSumBackend object "
        f"or one of the names {list(BACKEND_NAMES)}"
    )
