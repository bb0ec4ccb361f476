"""A PPPCA server process that sends the providers a wrong ``T`` (used by tests/multiprocess/test_cheating_server.py).

``python tests/helpers/cheating_server.py MODE [mpc-pca party options]`` runs
the normal server role of ``mpc-pca party`` over its TLS links, except that
every ``T`` it sends a provider is replaced:

* ``random``: a random orthonormal ``d x k`` matrix (the same for every provider);
* ``split``: the true ``T`` to every provider but provider1, which gets a random one;

or it lies about something else (issue 35):

* ``mean``: the mean of step 2 times 1.05 to every provider (then it eigendecomposes
  the Gram matrix centred on that mean, so ``T`` and the eigenvalues are consistent with it);
* ``split-mean``: that shifted mean to provider1 only;
* ``pairs-2-3`` / ``pairs-1-3``: true eigenpairs (2, 3) or (1, 3) (1-based) of its
  matrix instead of the top ``k = 2`` (its LAPACK call is replaced).

Everything else (the secure sums, the eigenvalues and ``N`` it announces, its
own output) is the honest server's.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import numpy as np

from mpc_pca.cli import build_parser
from mpc_pca.deploy import run_party
from mpc_pca.pppca import server
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.roles import SERVER
from tests.helpers.party_specs import pppca_spec

MODES = ("random", "split", "mean", "split-mean", "pairs-2-3", "pairs-1-3")
#: 0-based eigenpairs sent in the ``pairs-*`` modes.
PICKS = {"pairs-2-3": [1, 2], "pairs-1-3": [0, 2]}


class _WrongT:
    """The server's party with every ``T`` (or mean) sent to a provider replaced as ``mode`` says."""

    def __init__(self, party: Any, mode: str, d: int, k: int) -> None:
        self._party, self._mode, self._d, self._k = party, mode, d, k

    def send(self, to: str, obj: Any) -> None:
        real = isinstance(obj, np.ndarray) and obj.dtype == np.float64 and to.startswith("provider")
        everyone = self._mode in ("random", "mean")
        aimed = real and (everyone or to == "provider1")
        if aimed and obj.shape == (self._d, self._k) and self._mode in ("random", "split"):
            obj, _ = np.linalg.qr(np.random.default_rng(7).standard_normal(obj.shape))
        if aimed and obj.shape == (self._d,) and self._mode.endswith("mean"):  # the mean (step 2)
            obj = obj * 1.05
        self._party.send(to, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._party, name)


class CheatingDeployment(PPPCADeployment):
    def __init__(self, mode: str) -> None:
        super().__init__("pppca-ss")
        self.mode = mode

    def role(self, party: str, config: Any, data: Any, rng: Any) -> Any:
        honest = super().role(party, config, data, rng)
        if party != SERVER:
            return honest
        k = config.config.n_components
        if self.mode in PICKS:
            server.leading_eigenpairs = _other_eigenpairs(PICKS[self.mode])
        d = config.config.n_features
        return lambda p: honest(_WrongT(p, self.mode, d, k))


def _other_eigenpairs(picks: list[int]) -> Any:
    """``leading_eigenpairs`` returning the true eigenpairs ``picks`` (0-based) as the top ``len(picks)``."""

    def chosen(matrix: np.ndarray, k: int, *, overwrite: bool = False) -> Any:
        total = float(np.trace(matrix))
        values, vectors = np.linalg.eigh(matrix)
        values, vectors = values[::-1], vectors[:, ::-1]
        leading = np.concatenate([values[picks], values[k : k + 1]])
        return values[picks].copy(), np.ascontiguousarray(vectors[:, picks].T), leading, total

    return chosen


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; choose one of {MODES}")
    args = build_parser().parse_args(["party", *argv])
    spec = pppca_spec(args, SERVER)
    spec = dataclasses.replace(spec, settings={**spec.settings, "standardize": args.standardize})
    run_party(spec, deployment=CheatingDeployment(mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
