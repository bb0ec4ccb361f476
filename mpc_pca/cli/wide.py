"""The flags of ``pppca-randomized``'s solver settings (``run`` and ``party``; every party gives the same)."""

from __future__ import annotations

import argparse


def add_randomized_arguments(parser: argparse.ArgumentParser) -> None:
    """``--n-oversamples``, ``--iterated-power``, ``--tol``, ``--start-seed`` and ``--iterates``."""
    group = parser.add_argument_group("pppca-randomized (randomized subspace iteration; all parties alike)")
    group.add_argument(
        "--n-oversamples", type=int, default=None, metavar="P",
        help="columns of the block beyond k: b = k + P (default 10)",
    )  # fmt: skip
    group.add_argument(
        "--iterated-power", type=int, default=None, metavar="Q",
        help="power iterations before the Rayleigh-Ritz product, at most Q + 1 products "
        "(default: scikit-learn's auto, 7 if k < 0.1 min(N, d) else 4)",
    )  # fmt: skip
    group.add_argument(
        "--tol", type=float, default=None,
        help="stop early once the Ritz values move by at most TOL relatively and every residual "
        "||C v - lambda v|| is at most TOL lambda_1 (default: no early stop)",
    )  # fmt: skip
    group.add_argument(
        "--start-seed", type=int, default=None, metavar="SEED",
        help="public seed of the start block (default 0; a run from the same seed is reproducible)",
    )  # fmt: skip
    group.add_argument(
        "--iterates", choices=("server",), default=None,
        help="who sees the iterates C Q_i: server (the only mode built; see the trust model)",
    )  # fmt: skip


__all__ = ["add_randomized_arguments"]
