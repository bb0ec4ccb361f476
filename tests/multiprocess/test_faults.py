"""Faults in a PPPCA run whose parties are processes: every survivor stops with a clear error.

Each test starts the five parties of a 3-provider run on loopback (the test
hosts the rendezvous, as ``mpc-pca run --transport torch`` does; TLS links, gloo for crypten), lets
one provider misbehave, and checks that every other party exits non-zero by
itself (the launcher never has to kill it), with a message that names what went
wrong, and that the server writes no result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_INPUT, EXIT_PROTOCOL

pytest.importorskip("torch", reason="torch is not installed (README, 'Set up and run': optional line)")

from mpc_pca.deploy.local import PARTY_PRELOAD, child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.backends.crypten_compat import crypten_available
from protocols.runtime.launcher import ProcessOutcome, PythonEntry, launch
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.torch

TIMEOUT = 4.0


def run_faulty(
    tmp_path: Path,
    wine: np.ndarray,
    *,
    faulty: dict[str, str] | None = None,
    missing: tuple[str, ...] = (),
    backend: str = "additive",
    connect_timeout: float = 30.0,
    edit: dict[str, tuple[str, str]] | None = None,
) -> tuple[dict[str, ProcessOutcome], dict[str, Path]]:
    """Run the five parties (TLS links, crypten: gloo) with the launcher's rendezvous."""
    parts = np.array_split(wine, 3)
    crypten = backend == "crypten"
    # The rendezvous's clock starts now, the parties' a moment later (as in launch_local): on a
    # loaded machine a party may start seconds after it, so it waits longer than they do.
    _keep, port = host_rendezvous(
        pppca_ranks(3), tmp_path, insecure=crypten, gloo=crypten, timeout=connect_timeout + 3
    )
    commands, outputs = party_commands(
        tmp_path,
        parts,
        f"127.0.0.1:{port}",
        backend=backend,
        timeout=TIMEOUT,
        connect_timeout=connect_timeout,
        faulty=faulty,
        tls_dir=None if crypten else tmp_path / "tls",
    )
    for name, (flag, value) in (edit or {}).items():
        commands[name][commands[name].index(flag) + 1] = value
    for name in missing:
        del commands[name]
    # Honest parties start as launch_local starts them: forked from the preloaded fork server
    # (CrypTen: new interpreters), so a loaded machine's slow interpreter start-up does not
    # eat the 4 s deadlines; the faulty party stays a script of its own.
    started: dict[str, list[str] | PythonEntry] = {
        name: PythonEntry("mpc_pca.cli.app", "main", tuple(command[3:]))
        if not crypten and command[1:3] == ["-m", "mpc_pca.cli"]
        else command
        for name, command in commands.items()
    }
    outcomes = launch(started, timeout=TIMEOUT, env=child_environment(), grace=3.0, preload=PARTY_PRELOAD)
    return outcomes, outputs


def check_survivors(outcomes: dict[str, ProcessOutcome], culprit: str, outputs: dict[str, Path]) -> None:
    for name, outcome in outcomes.items():
        if name == culprit:
            continue
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        assert outcome.error_line(), name
        assert not outputs[name].exists(), f"{name} wrote a result"
    assert not outputs["server"].exists()


def test_provider_killed_mid_protocol(tmp_path, wine):
    outcomes, outputs = run_faulty(tmp_path, wine, faulty={"provider1": "die"})
    assert outcomes["provider1"].returncode == -9
    check_survivors(outcomes, "provider1", outputs)
    for name in ("provider0", "provider2", "server", "consumer"):
        line = outcomes[name].error_line()
        assert "PeerFailureError" in line and "'provider1' (rank 1) closed the connection" in line, line


@pytest.mark.parametrize(
    "backend",
    [
        "additive",
        "additive-masks",
        pytest.param(
            "crypten",
            marks=[
                pytest.mark.crypten,
                pytest.mark.skipif(not crypten_available(), reason="crypten is not installed"),
            ],
        ),
    ],
)
def test_provider_sending_a_wrongly_shaped_array(tmp_path, wine, backend):
    outcomes, outputs = run_faulty(tmp_path, wine, faulty={"provider1": "bad-shape"}, backend=backend)
    assert outcomes["provider1"].returncode == 2
    check_survivors(outcomes, "provider1", outputs)
    for name, outcome in outcomes.items():
        assert "shape" in outcome.error_line(), (name, outcome.error_line())


def test_provider_that_stops_responding_is_blamed_by_everyone(tmp_path, wine):
    outcomes, outputs = run_faulty(tmp_path, wine, faulty={"provider1": "stall"})
    assert outcomes["provider1"].killed_by_launcher  # it never ends by itself
    check_survivors(outcomes, "provider1", outputs)
    # The server and the consumer wait for provider0, which says it waits for provider1: they
    # give provider0 one more deadline to report, and quote its report naming the stalled one.
    for name in ("provider0", "provider2", "server", "consumer"):
        line = outcomes[name].error_line()
        assert (
            "PeerTimeoutError" in line and "'provider1' (rank 1) did not send within the deadline" in line
        ), line
        assert "'provider0' (rank 0) did not send" not in line, line


def test_provider_that_never_connects(tmp_path, wine):
    outcomes, outputs = run_faulty(tmp_path, wine, missing=("provider2",), connect_timeout=4.0)
    assert set(outcomes) == {"provider0", "provider1", "server", "consumer"}
    check_survivors(outcomes, "provider2", outputs)
    for outcome in outcomes.values():
        line = outcome.error_line()
        assert line.startswith("PeerTimeoutError") and "'provider2' (rank 2) did not join" in line, line


def test_party_started_with_other_settings_is_reported_by_everyone(tmp_path, wine):
    outcomes, outputs = run_faulty(tmp_path, wine, edit={"provider2": ("--n-components", "3")})
    # a party that finds the mismatch itself exits with the input-error code; one stopped first by a
    # peer's failure report exits with the protocol-failure code; every one names the mismatch
    codes = {name: outcome.returncode for name, outcome in outcomes.items()}
    assert set(codes.values()) <= {EXIT_INPUT, EXIT_PROTOCOL} and EXIT_INPUT in codes.values(), codes
    # in its own words a party names the flag; a peer's report it relays stays as the peer said it
    for outcome in outcomes.values():
        line = outcome.error_line()
        assert ("disagree on --n-components" in line or "reported: " in line) and "'provider2': 3" in line
        assert "disagree on n_components" in line or "disagree on --n-components" in line
    assert not outputs["server"].exists()
