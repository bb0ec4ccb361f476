"""The first progress line of a command shows while the protocol's first phase still runs (issue 38).

``mpc-pca run`` runs in a child process whose every protocol phase is held
open until the test opens a gate (a file). The test reads the child's stderr
as it comes: the first progress line, and the line of the first phase, must
arrive while the child is held -- so they were written when they happened,
not buffered until the end -- and the first line must say it was written
within a second of the start (by the child's own clock).
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from protocols.errors import PeerTimeoutError
from protocols.transport.rendezvous import joining

ROOT = Path(__file__).resolve().parents[2]

HOLD_PHASES = """
import contextlib, os, sys, time
from protocols.party import Party
gate = sys.argv.pop(1)
phase = Party.phase
@contextlib.contextmanager
def held(self, label):
    with phase(self, label):
        yield
        while not os.path.exists(gate):  # no phase ends before the test opens the gate
            time.sleep(0.01)
Party.phase = held
from mpc_pca.cli.app import main
sys.exit(main(sys.argv[1:]))
"""
LINE = re.compile(r"^mpc-pca: progress: (\d+\.\d) s: (.+)$")


def _lines(stream) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_progress_lines_arrive_while_the_first_phase_is_still_running(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        "run",
        "--protocol",
        "pppca-ss",
        "--data",
        "builtin:wine",
        "--parties",
        "3",
        "--n-components",
        "2",
    ]
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_PHASES, str(gate), *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        lines = _lines(child.stderr)
        progress = []
        while len(progress) < 2:
            line = lines.get(timeout=120)  # a bound on a hang, not a measurement
            assert line is not None, f"stderr ended before two progress lines: {progress}"
            match = LINE.match(line)
            if match:
                progress.append((float(match.group(1)), match.group(2)))
        assert child.poll() is None and not gate.exists()  # still held inside the first phase
        (first_at, first), (_, phase) = progress
        assert first_at <= 1.0 and first.startswith("pppca-ss: reading the data"), progress
        assert phase == "mean secure sum", progress  # the protocol's first phase, shown while it runs
    finally:
        gate.touch()
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0
    assert "component 1" in out


def test_each_attempt_to_reach_the_rendezvous_is_bounded_so_a_silent_host_is_named_early(monkeypatch, caplog):
    attempts: list[float] = []

    def silent(address, timeout):  # a host that drops every SYN: the attempt times out
        attempts.append(timeout)
        raise TimeoutError("timed out")

    clock = [1000.0]
    monkeypatch.setattr(joining.socket, "create_connection", silent)
    monkeypatch.setattr(joining.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(joining.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + 10.0))
    down = "the rendezvous host 'provider0' (rank 0) is unreachable"
    with caplog.at_level("WARNING"), pytest.raises(PeerTimeoutError, match="rank 0"):
        joining.dial(
            ("192.0.2.1", 29500), None, expected="introducer", me="provider1", where="the rendezvous",
            deadline=1000.0 + 60.0, retry_unreachable=True, what="'provider1' (rank 1)", unreachable=down,
        )  # fmt: skip
    assert attempts and max(attempts) <= joining.CONNECT_ATTEMPT_SECONDS < 60.0
    assert down in caplog.text  # named after the first silent attempt, not at the end of the window


def test_a_party_says_where_it_joins_before_it_waits_and_names_a_dead_rendezvous_host(tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    data.write_text("a,b,c\n" + "".join(f"{i},{i % 7},{i % 3}\n" for i in range(30)), encoding="utf-8")
    with socket.socket() as probe:  # a port nobody listens on: rank 0's process is down
        probe.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{probe.getsockname()[1]}"
    argv = ["party", "--protocol", "pppca-ss", "--rank", "1", "--world-size", "5", "--master", master]
    done = subprocess.run(
        [sys.executable, "-m", "mpc_pca.cli", *argv, "--insecure", "--data", str(data), "--connect-timeout", "3"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )  # fmt: skip
    lines = done.stderr.splitlines()
    assert done.returncode == 4
    progress = [(index, LINE.match(line)) for index, line in enumerate(lines) if LINE.match(line)]
    assert progress, lines
    index, first = progress[0]
    assert float(first.group(1)) <= 1.0, lines
    assert (
        first.group(2)
        == f"provider1 of pppca-ss: joining the run at the rendezvous hosted by rank 0 ({master})"
    )
    assert index < len(lines) - 1  # shown before the run ended
    assert "the rendezvous host 'provider0' (rank 0" in lines[-1] and "unreachable" in lines[-1]
