"""Attacks on a PPPCA run whose parties are processes linked by TLS 1.3.

Each test starts the five parties of a 3-provider run on loopback with the
launcher's rendezvous (as ``mpc-pca run --transport torch`` does) and lets an
attacker in: an outsider without a certificate, a holder of another party's
certificate, a certificate from another CA, a forged failure record, and a
malicious insider sending an oversized or a truncated frame. Every honest
party must stop by itself with an error naming the peer and saying that
authentication or the protocol failed, and write no output; a forged record
must change nothing.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.backends.additive import AdditiveBackend
from protocols.runtime.launcher import ProcessOutcome, launch
from protocols.transport.certs import write_credentials
from tests.helpers.pppca_threads import run_pppca
from tests.helpers.torch_helpers import party_commands

TIMEOUT = 4.0
CONNECT = 8.0
#: Join windows of the tests that close the rendezvous themselves (:func:`close_when_refused`): long
#: enough for five interpreters to start on a loaded 2-core machine; the run ends as soon as it may.
WINDOW = 60.0
HONEST = ("provider0", "provider1", "provider2", "server")

OUTSIDER = """
import socket, ssl, sys
host, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # an outsider that trusts anything and has no certificate
with socket.create_connection((host, port)) as raw, ctx.wrap_socket(raw) as tls:
    tls.sendall(b"register consumer rank 4")
    tls.recv(100)
"""


def start_run(tmp_path: Path, wine: np.ndarray, **kwargs):
    ranks = pppca_ranks(3)
    keep, port = host_rendezvous(ranks, tmp_path, insecure=False, gloo=False, timeout=CONNECT + 3)
    commands, outputs = party_commands(
        tmp_path, np.array_split(wine, 3), f"127.0.0.1:{port}", timeout=TIMEOUT,
        connect_timeout=CONNECT, tls_dir=tmp_path / "tls", **kwargs,
    )  # fmt: skip
    return keep, port, commands, outputs


def close_when_refused(introducer) -> threading.Thread:
    """Close the rendezvous once the four honest parties joined and the attacker was refused.

    Instead of racing a fixed join window against the start-up of five processes (on a loaded
    machine the window ended before the attacker had connected, which then found the port closed),
    wait for both events; the honest parties are then told the rendezvous was closed, with the
    refusal. Bounded by :data:`WINDOW` (the rendezvous' own window ends the run anyway).
    """

    def watch() -> None:
        deadline = time.monotonic() + WINDOW
        while time.monotonic() < deadline:
            status = introducer._status()
            if status is None:
                return
            if introducer.refused and set(HONEST) <= set(status[0]):
                introducer.close()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, name="close-when-refused", daemon=True)
    thread.start()
    return thread


def start_attacked_run(tmp_path: Path, wine: np.ndarray):
    """:func:`start_run` with a :data:`WINDOW`-long rendezvous closed by :func:`close_when_refused`."""
    ranks = pppca_ranks(3)
    keep, port = host_rendezvous(ranks, tmp_path, insecure=False, gloo=False, timeout=WINDOW)
    commands, outputs = party_commands(
        tmp_path, np.array_split(wine, 3), f"127.0.0.1:{port}", timeout=TIMEOUT,
        connect_timeout=WINDOW, tls_dir=tmp_path / "tls",
    )  # fmt: skip
    close_when_refused(keep)
    return keep, port, commands, outputs


def check_honest_failed(outcomes: dict[str, ProcessOutcome], outputs: dict[str, Path], *needles: str) -> None:
    for name in HONEST:
        outcome = outcomes[name]
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        line = outcome.error_line()
        for needle in needles:
            assert needle in line, (name, needle, line)
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"


def _impostor(commands: dict[str, list[str]], ca: Path, cert: Path, key: Path) -> list[str]:
    """The consumer's command line with other credentials."""
    command = list(commands["consumer"])
    index = command.index("--tls-dir")
    command[index : index + 2] = ["--ca", str(ca), "--cert", str(cert), "--key", str(key)]
    return command


def test_outsider_without_a_certificate_cannot_join(tmp_path, wine):
    _keep, port, commands, outputs = start_attacked_run(tmp_path, wine)
    commands["consumer"] = [sys.executable, "-c", OUTSIDER, "127.0.0.1", str(port)]
    # The outsider fails at once; the others must stop by themselves when the rendezvous gives up.
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=WINDOW + 5)
    assert outcomes["consumer"].returncode != 0  # the outsider got nothing
    check_honest_failed(
        outcomes, outputs, "'consumer' (rank 4) did not join", "authentication failed", "CERTIFICATE"
    )


def test_holder_of_another_partys_certificate_cannot_impersonate(tmp_path, wine):
    _keep, _port, commands, outputs = start_attacked_run(tmp_path, wine)
    tls = tmp_path / "tls"
    commands["consumer"] = _impostor(commands, tls / "ca.pem", tls / "provider0.pem", tls / "provider0.key")
    # A refused connection does not end the run (the real consumer may still join): the honest
    # parties stop by themselves when the rendezvous gives up, and name the refusal.
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=WINDOW + 5)
    assert outcomes["consumer"].returncode == EXIT_PROTOCOL
    check_honest_failed(
        outcomes, outputs, "authentication failed", "claiming to be 'consumer' (rank 4)",
        "certificate is issued to 'provider0'",
    )  # fmt: skip


def test_certificate_from_another_ca_is_refused(tmp_path, wine):
    _keep, _port, commands, outputs = start_attacked_run(tmp_path, wine)
    other = tmp_path / "other-ca"
    write_credentials(["consumer"], other)
    commands["consumer"] = _impostor(
        commands, other / "ca.pem", other / "consumer.pem", other / "consumer.key"
    )
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=WINDOW + 5)
    assert outcomes["consumer"].returncode == EXIT_PROTOCOL
    assert "authentication failed" in outcomes["consumer"].error_line()
    check_honest_failed(outcomes, outputs, "'consumer' (rank 4) did not join", "authentication failed")


def test_forged_failure_record_changes_nothing(tmp_path, wine, caplog):
    """An outsider writes a failure record to the rendezvous: it is refused and the run is unaffected."""
    caplog.set_level(logging.WARNING, logger="mpc_pca.transport")
    _keep, port, commands, outputs = start_run(tmp_path, wine)
    forged = b"mpc/abort=party 'provider1' failed: provider1 sent forged shares"
    with socket.create_connection(("127.0.0.1", port)) as raw:  # plaintext, as a TCPStore client would
        raw.sendall(forged)
        raw.recv(100)  # the rendezvous hangs up (after a TLS alert)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        pytest.raises((ssl.SSLError, OSError)),
        ctx.wrap_socket(raw) as tls,
    ):
        tls.sendall(forged)
        tls.recv(100)
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=3.0)
    for name, outcome in outcomes.items():
        assert outcome.ok, (name, outcome.stderr[-2000:])
        assert "forged" not in outcome.stderr
    refused = [r.getMessage() for r in caplog.records if "rendezvous refused" in r.getMessage()]
    assert len(refused) == 2 and all("authentication failed" in r for r in refused), refused
    server = json.loads(outputs["server"].read_text())
    model, _, _ = run_pppca(np.array_split(wine, 3), 2, AdditiveBackend(), with_consumer=True)
    assert np.allclose(server["components"], model.components, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        ("oversized", "'provider1' (rank 1) announced a data frame of 1099511627776 bytes"),
        ("truncated", "'provider1' (rank 1) sent a truncated frame: it announced 4096 bytes"),
    ],
)
def test_malicious_insider_frames_stop_everyone(tmp_path, wine, mode, needle):
    _keep, _port, commands, outputs = start_run(tmp_path, wine, faulty={"provider1": mode})
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=3.0)
    for name in ("provider0", "provider2", "server", "consumer"):
        outcome = outcomes[name]
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        assert "ProtocolError" in outcome.error_line() and needle in outcome.error_line(), (
            outcome.error_line()
        )
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"
