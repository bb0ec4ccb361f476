"""Issue 26 with real `mpc-pca party` processes on loopback (TLS 1.3, rank 0 hosts the rendezvous).

1. A provider starts 5 s after the others; with ``--join-window 30`` the
   others wait for it, the rendezvous host's stderr (``-v``) has the
   waiting-room lines naming it as missing, a waiting party logs the status it
   is sent, and the run completes with the in-process result.
2. Every party listens on a fixed ``--listen 127.0.0.1:PORT`` (ports picked
   free by the test), two advertise an address other than the one they
   listen on (``localhost:PORT``; a wildcard listener advertising loopback),
   and the result is the in-process one.
"""

from __future__ import annotations

import json
import random
import re
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.deploy.local import child_environment
from protocols.backends.additive import AdditiveBackend
from protocols.runtime.launcher import launch, raise_on_failure
from protocols.transport.certs import write_credentials
from tests.helpers.pppca_threads import run_pppca
from tests.helpers.socket_helpers import free_port
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.slow

NAMES = ("provider0", "provider1", "provider2", "server", "consumer")
#: Seconds the late provider starts after the rendezvous listens.
LATE = 5.0
#: Waits for the rendezvous's port, sleeps LATE seconds, then runs the command in argv[2:].
LATE_START = f"""
import os, socket, sys, time
while True:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.1)
time.sleep({LATE})
os.execv(sys.argv[2], sys.argv[2:])
"""


def fixed_port(taken: set[int]) -> int:
    """A free port below the usual ephemeral range (32768+), so no outgoing connection takes it first."""
    rng = random.Random()
    while True:
        port = rng.randrange(20000, 32000)
        if port in taken:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port


def check_result(parts: list[np.ndarray], outputs: dict[str, Path]) -> None:
    server = json.loads(outputs["server"].read_text())
    model, _, _ = run_pppca(parts, 2, AdditiveBackend(), with_consumer=True)
    assert np.allclose(server["components"], model.components, rtol=0, atol=1e-6)
    assert np.allclose(server["explained_variance"], model.explained_variance, rtol=1e-9)


def commands_for(tmp_path: Path, parts: list[np.ndarray], master: str) -> tuple[dict, dict]:
    write_credentials(list(NAMES), tmp_path / "tls")
    return party_commands(
        tmp_path,
        parts,
        master,
        timeout=20,
        connect_timeout=20,
        external_store=False,
        tls_dir=tmp_path / "tls",
    )


def test_a_late_provider_joins_within_the_window_and_the_room_says_who_is_missing(tmp_path, wine):
    parts = np.array_split(wine, 3)
    port = free_port()
    commands, outputs = commands_for(tmp_path, parts, f"127.0.0.1:{port}")
    for name in NAMES:
        commands[name] += ["--join-window", "30", "--waiting-log-interval", "1", "-v"]
    # provider2 starts LATE seconds after the rendezvous (rank 0) listens, whatever the start-up time
    commands["provider2"] = [sys.executable, "-c", LATE_START, str(port), *commands["provider2"]]
    outcomes = launch(commands, timeout=40, env=child_environment())
    raise_on_failure(outcomes)
    check_result(parts, outputs)

    host = outcomes["provider0"].stderr  # rank 0 hosts the rendezvous
    before, joined, _ = host.partition("waiting room: 'provider2' (rank 2) joined from 127.0.0.1:")
    assert joined, host[-3000:]
    missing = re.findall(
        r"INFO waiting room: joined \[([^\]]*)\]; missing \[([^\]]*)\] \((\d+) s left\)", before
    )
    assert len(missing) >= 2, host[-3000:]  # at least one line a second for the 5 s provider2 was late
    assert all("provider2" in absent.split(", ") for _, absent, _ in missing), missing
    assert all(0 < int(left) <= 30 for _, _, left in missing), missing
    assert "waiting room: all 5 parties joined; sending the address table" in host, host[-3000:]
    server = outcomes["server"].stderr
    assert re.search(r"'server': waiting room: joined \[[^\]]*\]; missing \[[^\]]*provider2", server), server[
        -3000:
    ]


def test_fixed_listening_and_advertised_addresses_give_the_same_result(tmp_path, wine):
    parts = np.array_split(wine, 3)
    taken: set[int] = set()
    master = fixed_port(taken)
    ports = {name: fixed_port(taken) for name in NAMES}
    commands, outputs = commands_for(tmp_path, parts, f"127.0.0.1:{master}")
    for name in NAMES:
        commands[name] += ["--listen", f"127.0.0.1:{ports[name]}", "-v"]
    commands["server"][-3:-1] = ["--listen", f"0.0.0.0:{ports['server']}"]
    commands["server"] += ["--advertise", f"127.0.0.1:{ports['server']}"]
    commands["consumer"] += ["--advertise", f"localhost:{ports['consumer']}"]
    outcomes = launch(commands, timeout=40, env=child_environment())
    raise_on_failure(outcomes)
    check_result(parts, outputs)
    assert f"listening on 127.0.0.1:{ports['provider1']} (TLS 1.3)" in outcomes["provider1"].stderr
    assert (
        f"listening on 0.0.0.0:{ports['server']}, advertising 127.0.0.1:{ports['server']}"
        in outcomes["server"].stderr
    )
    assert (
        f"listening on 127.0.0.1:{ports['consumer']}, advertising localhost:{ports['consumer']}"
        in outcomes["consumer"].stderr
    )
