"""Issue 35, the relay against a certified insider, as real processes on loopback.

A 3-provider ``pppca-ss`` run (``provider0-2``, ``server``, ``consumer``)
through ``mpc-pca relay``; ``provider1`` is run by
``tests/helpers/relay_rogue.py``. For every honest party the tests check
its exit code (4), that it ended by itself within its deadline plus
:data:`SLACK`, that its error line names the rogue, no traceback, and that
no output was written.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment
from protocols.runtime.launcher import ProcessOutcome, launch
from protocols.transport.certs import write_credentials
from tests.helpers.socket_helpers import free_port
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.slow

RELAY_ROGUE = Path(__file__).resolve().parents[1] / "helpers" / "relay_rogue.py"
NAMES = ("provider0", "provider1", "provider2", "server", "consumer")
ROGUE = "provider1"
HONEST = tuple(n for n in NAMES if n != ROGUE)
#: Receive deadline of every party (``--timeout``).
TIMEOUT = 4.0
#: Set-up deadline of every party (``--connect-timeout``): long enough for six interpreters to start.
CONNECT = 40.0
#: The relay's join window.
JOIN_WINDOW = 15.0
#: Seconds the relay may take to exit once every party has gone.
RELAY_EXIT = 30.0
#: Seconds past its deadline an honest process may take to notice, report and exit (2 shared cores).
SLACK = 5.0


def relay_process(address: str, tls: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "mpc_pca.cli", "relay", "--listen", address, "--tls-dir", str(tls),
        "--parties", ",".join(NAMES), *extra,
    ]  # fmt: skip


def relayed_parties(
    tmp_path: Path, wine: np.ndarray, relay: str
) -> tuple[dict[str, list[str]], dict[str, Path]]:
    tls = tmp_path / "tls"
    write_credentials([*NAMES, "relay"], tls)
    commands, outputs = party_commands(
        tmp_path, np.array_split(wine, 3), "unused:1", timeout=TIMEOUT, connect_timeout=CONNECT,
        external_store=False, tls_dir=tls,
    )  # fmt: skip
    for command in commands.values():
        at = command.index("--master")
        command[at : at + 2] = ["--relay", relay]
    return commands, outputs


def as_rogue(command: list[str], mode: str) -> list[str]:
    return [sys.executable, str(RELAY_ROGUE), mode, *command[command.index("party") + 1 :]]


def check_honest(
    outcomes: dict[str, ProcessOutcome], outputs: dict[str, Path], ended_by: float, needles: tuple[str, ...]
) -> None:
    for name in HONEST:
        outcome, line = outcomes[name], outcomes[name].error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-3000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-3000:])
        assert outcome.seconds <= ended_by, (name, f"ended after {outcome.seconds:.1f} s", line)
        for needle in needles:
            assert needle in line, (name, needle, line)
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"


def test_a_one_party_layout_registered_first_is_refused_and_named(tmp_path, wine):
    """Before: the rogue's layout became the run's, the relay ended, the others got "connection refused"."""
    address = f"127.0.0.1:{free_port()}"
    commands, outputs = relayed_parties(tmp_path, wine, address)
    relay = subprocess.Popen(
        relay_process(address, tmp_path / "tls", "--join-window", str(JOIN_WINDOW)),
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        started = time.monotonic()
        rogue = subprocess.run(
            as_rogue(commands[ROGUE], "one-party-layout"), env=child_environment(), capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert "the relay accepted the one-party layout" not in rogue.stderr, rogue.stderr[-2000:]
        assert "'provider1' (certified; a connection from 127.0.0.1:" in rogue.stderr, rogue.stderr[-2000:]
        assert relay.poll() is None, "the rogue ended the relay"
        honest = {name: commands[name] for name in HONEST}
        launched = time.monotonic()
        outcomes = launch(honest, timeout=TIMEOUT, env=child_environment(), grace=CONNECT + SLACK)
        # every honest party ends when the relay's join window ends, naming the refused rogue
        check_honest(
            outcomes, outputs, started + JOIN_WINDOW - launched + SLACK,
            ("'provider1' (rank 1) did not join", "refused: 'provider1' (certified;",
             "registered the layout {'provider1': 0}, but the relay's operator fixed the run's layout"),
        )  # fmt: skip
        _, err = relay.communicate(timeout=30)
    finally:
        relay.kill()
        relay.wait()
    assert relay.returncode == EXIT_PROTOCOL, err[-2000:]
    assert "'provider1' (certified;" in err and "the run did not start" in err, err[-2000:]


def test_the_relay_exits_once_every_party_has_gone_after_a_ciphertext_flood(tmp_path, wine):
    """Before: frames for the consumer, which had hung up, held the rogue's reader 600 s each: no exit."""
    address = f"127.0.0.1:{free_port()}"
    commands, outputs = relayed_parties(tmp_path, wine, address)
    commands[ROGUE] = as_rogue(commands[ROGUE], "ciphertext-flood")
    relay = subprocess.Popen(
        relay_process(address, tmp_path / "tls", "--join-window", str(CONNECT)),
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        started = time.time()
        outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=CONNECT + SLACK)
        try:  # every party has gone (the rogue too: it ended, or the launcher killed it)
            out, err = relay.communicate(timeout=RELAY_EXIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the relay did not exit within {RELAY_EXIT} s of the last party's end")
    finally:
        relay.kill()
        relay.wait()
    attacked = float(re.search(r"rogue: attack at (\d+\.\d+)", outcomes[ROGUE].stderr).group(1))
    check_honest(
        outcomes, outputs, attacked - started + TIMEOUT + SLACK,
        ("'provider1'",),
    )  # fmt: skip
    assert outcomes["consumer"].error_line().count("failed authentication") == 1, outcomes["consumer"].stderr
    assert "relay done: 5 parties" in out, (out, err[-2000:])


RELAY_WORLD = Path(__file__).resolve().parents[1] / "helpers" / "relay_world.py"


def test_a_party_that_stops_reading_is_named_by_every_honest_party(tmp_path):
    """Before: ``a0``, held back by ``a1`` (which stopped reading), was blamed by everyone, and hung.

    ``a0`` sends 64 MiB to ``a1``, which reads nothing; the relay's queue for ``a1`` fills and
    ``a0``'s connection is held back (the relay's ``--stall-timeout`` is the default 600 s).
    The relay reports ``a1`` to every other party; ``a0``'s send fails at its deadline, and
    the waiting parties' deadlines pass: every honest line quotes the relay's report naming ``a1``.
    """
    names = ("a0", "a1", "a2", "r")
    tls = tmp_path / "tls"
    write_credentials([*names, "relay"], tls)
    address = f"127.0.0.1:{free_port()}"
    relay = subprocess.Popen(
        [sys.executable, "-m", "mpc_pca.cli", "relay", "--listen", address, "--tls-dir", str(tls),
         "--parties", ",".join(names), "--join-window", str(CONNECT)],
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    commands = {n: [sys.executable, str(RELAY_WORLD), n, address, str(tls), str(TIMEOUT)] for n in names}
    try:
        started = time.time()
        outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=CONNECT + SLACK)
    finally:
        relay.kill()
        relay.communicate()
    sending = float(re.search(r"sending at (\d+\.\d+)", outcomes["a0"].stderr).group(1))
    report = "the relay reports: 'a1' (rank 1) has read nothing the relay forwarded to it for 1 s ("
    for name in ("a0", "a2", "r"):
        outcome, line = outcomes[name], outcomes[name].error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-3000:])
        assert not outcome.killed_by_launcher, (name, line)
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-3000:])
        # a0's send makes progress until the relay's queue and the sockets are full (at most
        # TIMEOUT here), then its deadline passes; the others' deadline runs from when they wait
        bound = (2 if name == "a0" else 1) * TIMEOUT + SLACK
        after = started + outcome.seconds - sending
        assert after <= bound, (name, f"ended {after:.1f} s after a0 began its send", line)
        assert report in line and "and 'a0' (rank 0) waits to send to it" in line, (name, line)
        assert "(the relay's observation, not checked by " in line, (name, line)
    assert "a send through the relay made no progress for 4 s" in outcomes["a0"].error_line()
