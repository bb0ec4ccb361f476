"""The flags of ``pppca-randomized``'s solver settings (``run`` and ``party``; every party gives the same).

``--svd-solver`` chooses the PPPCA protocol as ``PPPCA(svd_solver=...)`` does
(:mod:`mpc_pca.pppca.randomized`): ``randomized`` runs ``pppca-randomized``
(for ``--protocol pppca-ss`` or ``pppca-randomized``), ``full`` and
``covariance_eigh`` the exact covariance path (``pppca-ss`` or ``pppca-he``).
``auto`` (the default) runs the protocol named: on the command line no party
can choose by ``d`` alone (the server holds no rows, and every party must
name the same protocol before any of them has read the others' widths), so
the wide solver is asked for by name.
"""

from __future__ import annotations

import argparse

from protocols.errors import InputValidationError

#: The ``--svd-solver`` choices (scikit-learn's, less ``arpack``, which no party can run on pooled rows).
SVD_SOLVERS = ("auto", "full", "covariance_eigh", "randomized")
#: The protocols each ``--svd-solver`` value may name, and the one it runs.
RANDOMIZED_FROM = ("pppca-ss", "pppca-randomized")
EXACT_FROM = ("pppca-ss", "pppca-he")


def add_randomized_arguments(parser: argparse.ArgumentParser) -> None:
    """``--n-oversamples``, ``--iterated-power``, ``--tol``, ``--start-seed``, ``--iterates`` and ``--svd-solver``."""
    parser.add_argument(
        "--svd-solver", choices=SVD_SOLVERS, default=None,
        help="PPPCA's solver, as PPPCA(svd_solver=...): randomized runs pppca-randomized (randomized "
        "subspace iteration, no d x d matrix; --protocol pppca-ss or pppca-randomized); full and "
        "covariance_eigh the exact covariance path (pppca-ss, pppca-he); auto (default) the protocol named",
    )  # fmt: skip
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
        "--iterates", choices=("server", "sites"), default=None,
        help="who leads the iterations and sees each product C Q_i: server (default), or sites "
        "(provider0; the server learns only the output); see the trust model",
    )  # fmt: skip


def solver_protocol(protocol: str, svd_solver: str | None, role: str | None = None) -> str:
    """The protocol ``--protocol`` and ``--svd-solver`` run, or a clear refusal (module notes).

    Raises
    ------
    InputValidationError
        A solver the named protocol cannot run (naming both), or a consumer
        party asked for ``pppca-randomized``, whose layout has none.
    """
    name = protocol.lower()
    if svd_solver in (None, "auto"):
        chosen = protocol
    elif svd_solver == "randomized":
        if name not in RANDOMIZED_FROM:
            raise InputValidationError(
                f"--svd-solver randomized runs pppca-randomized, for --protocol {' or '.join(RANDOMIZED_FROM)}, "
                f"not --protocol {protocol} (pppca-randomized runs on the additive backends, not Paillier)"
            )
        chosen = "pppca-randomized"
    elif name not in EXACT_FROM:
        raise InputValidationError(
            f"--svd-solver {svd_solver} is the exact covariance path of --protocol {' or '.join(EXACT_FROM)}, "
            f"not --protocol {protocol}"
            + (" (pppca-randomized is --svd-solver randomized)" if name == "pppca-randomized" else "")
        )
    else:
        chosen = protocol
    if chosen.lower() == "pppca-randomized" and role == "consumer":
        raise InputValidationError(
            "pppca-randomized has no consumer: each site computes its own rows' PC scores (in its result); "
            "run the providers and the server only (world size M + 1)"
        )
    return chosen


__all__ = ["RANDOMIZED_FROM", "SVD_SOLVERS", "add_randomized_arguments", "solver_protocol"]
