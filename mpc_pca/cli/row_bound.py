"""``--row-bound B``: each site divides its rows by a public bound on their norm before the DP protocol runs.

The DP protocols assume every row has Euclidean norm at most 1
(:mod:`mpc_pca.dp.preprocessing`). Data measured in their own units rarely
are: the digits' 64 pixels range over 0..16, so a row's norm can reach
``16 sqrt(64) = 128``. ``--row-bound 128`` makes every site divide each of
its rows by 128, a constant that does not depend on anyone's data, so the
map is the same for neighbouring data sets and the release keeps its
``(epsilon, delta)`` guarantee; ``--row-norm`` (``clip`` or ``error``) then
applies to any row still longer than 1, i.e. longer than ``B`` before the
division.

The bound must be **public**: fixed from what is known about the data before
anyone looks at them (a documented range of every feature, a unit's physical
limit), never from the data themselves. A bound read off the data (their
largest row norm, as ``--row-norm scale`` does) is a release of that norm,
which this option cannot detect; the run's ``private`` field then claims
more than holds. Dividing every row by one constant keeps the directions
of the data; the noise, set by ``epsilon`` for rows of norm 1, is then larger
relative to the rows, so the tightest public bound gives the most useful release.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

ROW_BOUND_HELP = (
    "a PUBLIC bound on every row's Euclidean norm, fixed before looking at the data (e.g. 128 for 64 "
    "features each within 0..16): each site divides its rows by it, then --row-norm applies to rows still "
    "longer than 1 (default: rows are used as they are)"
)


if TYPE_CHECKING:
    from mpc_pca.deployment import Deployment


def add_row_bound_argument(group: Any) -> None:
    """Add ``--row-bound`` to an argument group of ``run`` or ``party``."""
    group.add_argument("--row-bound", type=float, default=None, metavar="B", help=ROW_BOUND_HELP)


def check_row_bound(args: argparse.Namespace, protocol: Deployment) -> float | None:
    """The validated ``--row-bound`` of a run of ``protocol`` (``None`` when not given).

    Raises
    ------
    InputValidationError
        Naming the value: not a positive finite number, a protocol that
        bounds no row norms (or, capeAGN, whose rows need their own scale),
        or together with ``--row-norm scale``, which sets the scale from the
        data.
    """
    bound = getattr(args, "row_bound", None)
    if bound is None:
        return None
    if not (0.0 < bound < math.inf):
        raise InputValidationError(
            f"--row-bound {bound!r} must be a positive finite number: a public bound on the rows' Euclidean "
            "norm, e.g. 128 for 64 features each within 0..16"
        )
    if "row_norm" not in protocol.options and "epsilon" not in protocol.options:
        raise InputValidationError(
            f"--row-bound does not apply to protocol {protocol.name!r}: it bounds no row norms"
        )
    if not protocol.accepts_pooled_scaling:
        raise InputValidationError(
            f"--row-bound does not apply to {protocol.name}: give its rows at the scale it expects"
        )
    if getattr(args, "row_norm", None) == "scale":
        raise InputValidationError(
            "--row-bound and --row-norm scale both set the rows' scale (scale from the pooled data, NOT "
            "private); keep --row-bound with --row-norm clip or error"
        )
    return float(bound)


def divide_rows(rows: NDArray[np.float64], bound: float | None) -> NDArray[np.float64]:
    """``rows / bound`` (a new array), or ``rows`` unchanged when ``bound`` is ``None``."""
    if bound is None:
        return rows
    return np.asarray(rows, dtype=np.float64) / bound


__all__ = ["ROW_BOUND_HELP", "add_row_bound_argument", "check_row_bound", "divide_rows"]
