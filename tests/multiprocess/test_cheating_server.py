"""A server that sends the providers a wrong ``T``, as ``mpc-pca party`` processes over TLS.

Five processes on loopback (three providers, the server, a consumer; the
launcher's rendezvous; certificates from ``write_credentials``). The server
runs ``tests/helpers/cheating_server.py``: the honest server role except for
the ``T`` it sends (or the mean, or which eigenpairs it sends: issue 35). Every
provider must refuse the answer before projecting a row (exit 4, an error naming
the server, no traceback) and the consumer must receive no projection.
"""

from __future__ import annotations

import sys
import time
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


def _run_cheat(tmp_path, parts, mode, extra=()):
    """Launch the five parties with the server in ``mode``; return the outcomes and the output files."""
    ranks = pppca_ranks(3)
    _keep, port = host_rendezvous(ranks, tmp_path, insecure=False, gloo=False, timeout=CONNECT + 3)
    commands, outputs = party_commands(
        tmp_path,
        parts,
        f"127.0.0.1:{port}",
        timeout=TIMEOUT,
        connect_timeout=CONNECT,
        tls_dir=tmp_path / "tls",
    )
    commands = {name: [*command, *extra] for name, command in commands.items()}
    options = commands["server"][commands["server"].index("party") + 1 :]
    commands["server"] = [sys.executable, str(CHEATING_SERVER), mode, *options]
    started = time.monotonic()
    outcomes = launch(commands, timeout=TIMEOUT + CONNECT, env=child_environment(), grace=3.0)
    return outcomes, outputs, time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "extra", "needles"),
    [
        (
            "mean",
            (),
            # provider2 ends with its own verdict on provider0's opening, or (when provider0's or the
            # consumer's ABORT reaches it first, a race of the links) with that report quoted as a claim
            {
                "provider0": "the mean it sent is off",
                "provider2": ("as opened and reported by provider0", "claim"),
            },
        ),
        ("split-mean", (), {"provider1": "different answers", "provider0": "'server'"}),
        ("pairs-2-3", ("--standardize",), {"provider0": "not the top 2", "provider1": "not the top 2"}),
        ("pairs-1-3", ("--standardize",), {"provider0": "not the top 2", "provider2": "not the top 2"}),
    ],
)
def test_a_server_lying_about_the_mean_or_the_top_eigenpairs_is_caught(tmp_path, wine, mode, extra, needles):
    """Issue 35: before, every party exited 0 (projections 45 % / 4 % / 118 % off)."""
    outcomes, outputs, elapsed = _run_cheat(tmp_path, np.array_split(wine, 3), mode, extra)
    assert elapsed < TIMEOUT + CONNECT + 3.0, elapsed  # within the launcher's deadline, nobody killed
    for name in ("provider0", "provider1", "provider2", "consumer"):
        outcome = outcomes[name]
        line = outcome.error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-2000:])
        assert "server" in line, (name, line)
        if name in needles:
            accepted = needles[name] if isinstance(needles[name], tuple) else (needles[name],)
            assert any(needle in line for needle in accepted), (name, line)
        # no provider projected a row: the check runs before the projection phase
        assert "projection" not in line.lower(), (name, line)
        assert not outputs[name].exists(), f"{name} wrote {outputs[name].name}"
