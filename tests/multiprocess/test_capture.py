"""What a passive observer of the links sees: packets captured on loopback during a run.

``tcpdump`` records every TCP packet on ``lo`` while ``mpc-pca run
--transport torch`` runs the five parties of a PPPCA run; the test then looks
for values that travel between parties in every run - the (column-scaled)
mean's float64 bytes (server -> providers), a row of ``T`` (server -> providers) and a row of
``X_i T`` (provider -> consumer) - and for a provider's first data row, which
must never travel at all. With TLS none is found; with ``--insecure`` the
travelling ones are, which shows that the search can find them.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.data.datasets import load_data
from mpc_pca.data.partition import split_rows
from mpc_pca.pppca.scaling import column_exponents
from tests.helpers.pcap import tcp_streams

pytestmark = pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")

K = 3


def mark_and_wait(pcap: Path, marker: bytes, limit: float = 15.0) -> None:
    """Send ``marker`` over lo until tcpdump has written it to ``pcap``.

    Before the run this shows the capture has started ("listening" is printed
    earlier); after it, that every earlier packet of the run is in the file. A
    run whose parties are forked from a warm fork server takes well under a
    second, so fixed sleeps are not enough.
    """
    with socket.create_server(("127.0.0.1", 0)) as server:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with socket.create_connection(server.getsockname()[:2]) as probe:
                probe.sendall(marker)
                server.accept()[0].close()
            time.sleep(0.05)
            if pcap.exists() and marker in pcap.read_bytes():
                return
    pytest.fail(f"tcpdump did not write the probe {marker!r} to {pcap} within {limit} s")


def captured_run(tmp_path: Path, tag: str, *extra: str) -> tuple[bytes, dict, str]:
    pcap, out = tmp_path / f"{tag}.pcap", tmp_path / f"{tag}.json"
    dump = subprocess.Popen(
        # --immediate-mode: packets reach the file as they arrive, not in ring-buffer blocks that a
        # sub-second run (parties forked from a warm fork server) ends before they are handed over;
        # -B: a 64 MiB capture buffer, so other traffic on lo does not make the kernel drop packets
        ["tcpdump", "-i", "lo", "--immediate-mode", "-B", "65536", "-U", "-s", "0", "-w", str(pcap), "tcp"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert dump.stderr is not None
        line = dump.stderr.readline().decode(errors="replace")  # "listening on lo ..." once it captures
        if "listening" not in line:
            pytest.skip(f"tcpdump cannot capture on lo here: {line.strip()}")
        mark_and_wait(pcap, b"mpc-pca capture test: before the run")
        argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:wine", "--parties", "3"]
        argv += ["--n-components", str(K), "--transport", "torch", "--timeout", "20", "--output", str(out)]
        assert main([*argv, *extra]) == 0
        mark_and_wait(pcap, b"mpc-pca capture test: after the run")
    finally:
        dump.terminate()
        dump.wait(timeout=10)
    assert dump.stderr is not None
    counts = " ".join(dump.stderr.read().decode(errors="replace").split())  # "... dropped by kernel"
    dropped = re.search(r"(\d+) packets? dropped by kernel", counts)
    if dropped is None or int(dropped.group(1)):
        # a dropped packet could hide plaintext from the TLS check as well as from the positive control
        pytest.skip(f"the capture is incomplete, so it cannot show what crossed lo (tcpdump: {counts})")
    # searched stream by stream: a value can straddle two TCP segments
    return b"\n--stream--\n".join(tcp_streams(pcap.read_bytes())), json.loads(out.read_text()), counts


def known_plaintexts(result: dict) -> dict[str, bytes]:
    parts = split_rows(load_data("builtin:wine"), 3, "even", None)
    mean = np.array(result["mean"])
    transfer = np.ascontiguousarray(np.array(result["components"]).T)
    projected = (parts[0] - mean) @ transfer
    # the server sends the mean in the agreed column scaling (mpc_pca.pppca.scaling): exact powers of two
    scaled_mean = np.ldexp(mean, -column_exponents(np.vstack(parts)))
    return {
        "mean": scaled_mean.tobytes(),
        "row of T": transfer[4].tobytes(),
        "row of X_0 T": projected[0].tobytes(),
    }


@pytest.mark.parametrize("mode", ["tls", "insecure"])
def test_a_passive_observer_sees_no_plaintext_over_tls(tmp_path, mode):
    wire, result, counts = captured_run(tmp_path, mode, *(["--insecure"] if mode == "insecure" else []))
    secrets = known_plaintexts(result)
    found = sorted(name for name, raw in secrets.items() if raw in wire)
    first_row = split_rows(load_data("builtin:wine"), 3, "even", None)[0][0].tobytes()
    assert first_row not in wire  # raw data never leaves a provider, encrypted or not
    if mode == "tls":
        assert found == [], f"plaintext on the wire despite TLS: {found}"
    else:
        assert found == sorted(secrets), (
            f"the insecure run should expose all of them; found only {found} (tcpdump: {counts})"
        )
