"""A dead rank 0: the other parties name the rendezvous host as unreachable, within --connect-timeout.

Rank 0 hosts the rendezvous of an ``mpc-pca party`` run unless
``--external-rendezvous`` is given. When its process is down, nothing listens
at ``--master``; every other party must then say that the rendezvous host
(rank 0, at the ``--master`` address) is unreachable, not just "connection
refused", and stop once its join window (by default ``--connect-timeout``)
has passed. A rank 0 that dies while the others wait in its waiting room is
named at once.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import numpy as np

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment

CONNECT_TIMEOUT = 3.0


def free_port() -> int:
    """A loopback port nothing listens on (bound by the kernel's choice, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_party_names_the_dead_rendezvous_host_within_the_connect_timeout(tmp_path):
    master = f"127.0.0.1:{free_port()}"
    command = [
        sys.executable, "-m", "mpc_pca.cli", "party", "--protocol", "pppca-ss", "--role", "consumer",
        "--rank", "4", "--world-size", "5", "--master", master, "--insecure",
        "--connect-timeout", str(CONNECT_TIMEOUT), "--output", str(tmp_path / "consumer.json"),
    ]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(command, env=child_environment(), capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - start
    assert done.returncode == EXIT_PROTOCOL, done.stderr[-2000:]
    error = [line for line in done.stderr.splitlines() if line.startswith("mpc-pca: error: ")]
    assert len(error) == 1, done.stderr[-2000:]
    line = error[0]
    assert f"the rendezvous host 'provider0' (rank 0, --master {master}) is unreachable" in line, line
    assert "'consumer' (rank 4) could not reach" in line, line
    # the first refused attempt is reported at once (a warning), not only when the window ends
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line and "unreachable" in line]
    assert len(warnings) == 1 and "'provider0'" in warnings[0], done.stderr[-2000:]
    # bounded by --connect-timeout: the interpreter's start-up (a few seconds on a loaded machine) plus 3 s
    assert CONNECT_TIMEOUT <= seconds < CONNECT_TIMEOUT + 20, seconds
    assert not (tmp_path / "consumer.json").exists()


def test_party_in_the_waiting_room_names_the_rendezvous_host_that_went_down(tmp_path):
    """Rank 0 dies after the consumer registered: the consumer stops at once, naming the host, not after its window."""
    master = f"127.0.0.1:{free_port()}"
    common = ["--world-size", "5", "--master", master, "--insecure", "--connect-timeout", "60", "-v"]
    np.savetxt(tmp_path / "p0.csv", np.arange(12.0).reshape(4, 3), delimiter=",")
    env = child_environment()
    host = subprocess.Popen(
        [sys.executable, "-m", "mpc_pca.cli", "party", "--protocol", "pppca-ss", "--rank", "0", *common,
         "--data", str(tmp_path / "p0.csv"), "--no-header"],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    consumer = subprocess.Popen(
        [sys.executable, "-m", "mpc_pca.cli", "party", "--protocol", "pppca-ss", "--rank", "4", *common,
         "--output", str(tmp_path / "consumer.json")],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert consumer.stderr is not None
        for line in consumer.stderr:  # -v: the consumer logs its registration
            if "registered at the rendezvous" in line:
                break
        else:
            raise AssertionError("the consumer never registered")
        killed = time.monotonic()
        host.kill()
        rest = consumer.stderr.read()
        consumer.wait(timeout=60)
        seconds = time.monotonic() - killed
    finally:
        for process in (host, consumer):
            if process.poll() is None:
                process.kill()
            process.wait()
    assert consumer.returncode == EXIT_PROTOCOL, rest[-2000:]
    error = [line for line in rest.splitlines() if line.startswith("mpc-pca: error: ")]
    assert len(error) == 1 and "the rendezvous host 'provider0' (rank 0) went down" in error[0], rest[-2000:]
    assert seconds < 15, seconds  # at once, not after the 60 s window
    assert not (tmp_path / "consumer.json").exists()
