"""A PPPCA server process that sends the providers a wrong ``T`` (used by tests/multiprocess/test_cheating_server.py).

``python tests/helpers/cheating_server.py MODE [mpc-pca party options]`` runs
the normal server role of ``mpc-pca party`` over its TLS links, except that
every ``T`` it sends a provider is replaced:

* ``random``: a random orthonormal ``d x k`` matrix (the same for every provider);
* ``split``: the true ``T`` to every provider but provider1, which gets a random one.

Everything else (the secure sums, the eigenvalues and ``N`` it announces, its
own output) is the honest server's.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from mpc_pca.cli import build_parser
from mpc_pca.deploy import run_party
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.roles import SERVER
from tests.helpers.party_specs import pppca_spec

MODES = ("random", "split")


class _WrongT:
    """The server's party with every ``T`` sent to a provider replaced as ``mode`` says."""

    def __init__(self, party: Any, mode: str, k: int) -> None:
        self._party, self._mode, self._k = party, mode, k

    def send(self, to: str, obj: Any) -> None:
        is_t = isinstance(obj, np.ndarray) and obj.dtype == np.float64 and obj.shape[1:] == (self._k,)
        if is_t and to.startswith("provider") and (self._mode == "random" or to == "provider1"):
            rng = np.random.default_rng(7)
            obj, _ = np.linalg.qr(rng.standard_normal(obj.shape))
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
        return lambda p: honest(_WrongT(p, self.mode, k))


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; choose one of {MODES}")
    args = build_parser().parse_args(["party", *argv])
    spec = pppca_spec(args, SERVER)
    run_party(spec, deployment=CheatingDeployment(mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
