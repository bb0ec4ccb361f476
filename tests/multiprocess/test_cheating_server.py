"""A server that sends the providers a wrong ``T``, as ``mpc-pca party`` processes over TLS.

Five processes on loopback (three providers, the server, a consumer; the
launcher's rendezvous; certificates from ``write_credentials``). The server
runs ``tests/helpers/cheating_server.py``: the honest server role except for
the ``T`` it sends. Every provider must refuse the answer before projecting a
row (exit 4, an error naming the server, no traceback) and the consumer must
receive no projection.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.runtime.launcher import launch
from tests.helpers.torch_helpers import party_commands

CHEATING_SERVER = Path(__file__).resolve().parents[1] / "helpers" / "cheating_server.py"
TIMEOUT = 6.0
CONNECT = 20.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "needles"),
    [
        (
            "random",
            {"provider0": "C T - T Lambda is not zero", "provider1": "as opened and reported by provider0"},
        ),
        ("split", {"provider1": "different answers", "provider0": "'server'"}),
    ],
)
def test_a_server_sending_a_wrong_t_is_caught_by_every_provider(tmp_path, wine, mode, needles):
    ranks = pppca_ranks(3)
    _keep, port = host_rendezvous(ranks, tmp_path, insecure=False, gloo=False, timeout=CONNECT + 3)
    commands, outputs = party_commands(
        tmp_path, np.array_split(wine, 3), f"127.0.0.1:{port}", timeout=TIMEOUT,
        connect_timeout=CONNECT, tls_dir=tmp_path / "tls",
    )  # fmt: skip
    options = commands["server"][commands["server"].index("party") + 1 :]
    commands["server"] = [sys.executable, str(CHEATING_SERVER), mode, *options]
    outcomes = launch(commands, timeout=TIMEOUT + CONNECT, env=child_environment(), grace=3.0)
    for name in ("provider0", "provider1", "provider2", "consumer"):
        outcome = outcomes[name]
        line = outcome.error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-2000:])
        assert "server" in line, (name, line)
        if name in needles:
            assert needles[name] in line, (name, line)
    for name in ("provider0", "provider1", "provider2", "consumer"):
        assert not outputs[name].exists(), f"{name} wrote {outputs[name].name}"
