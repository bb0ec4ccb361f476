"""Relay mode across network namespaces: no party accepts an inbound connection (issue 26).

The network of :mod:`tests.multiprocess.test_netns` with six hosts: the
relay (``mpc-pca relay``) on the first, one PPPCA party on each of the
others (``mpc-pca party --relay``). Every party's namespace gets a firewall
that drops every inbound connection (nftables if ``nft`` is installed, else
iptables; only loopback and the replies of connections the party opened get
in); that the rule works is checked by a listener in a party's namespace
that the relay's host cannot reach. Without either tool the parties still
bind nothing: while the run goes on, no socket in a party's namespace is in
the LISTEN state (``/proc/net/tcp``, ``/proc/net/tcp6`` read inside it). The
result is the in-process (= direct-mode) one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.deploy.local import child_environment
from protocols.runtime.launcher import launch, raise_on_failure
from protocols.transport.certs import write_credentials
from tests.helpers.torch_helpers import check_pppca_outputs, party_commands
from tests.multiprocess.test_netns import Topology, _skip_reason

pytestmark = [pytest.mark.netns]

NAMES = ("provider0", "provider1", "provider2", "server", "consumer")
NFT_RULES = """
table inet mpcrelaytest {
    chain input {
        type filter hook input priority 0; policy drop;
        iif "lo" accept
        ct state established,related accept
    }
}
"""
IPTABLES_RULES = (
    ("-A", "INPUT", "-i", "lo", "-j", "ACCEPT"),
    ("-A", "INPUT", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"),
    ("-P", "INPUT", "DROP"),
)
#: A TCP socket's state in /proc/net/tcp: 0A is LISTEN.
LISTEN = "0A"


def in_ns(ns: str, *command: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *command], capture_output=True, text=True, timeout=timeout, check=check
    )


def firewall(ns: str) -> str:
    """Drop every inbound connection into ``ns``; return the tool used (``""``: none available)."""
    if shutil.which("nft"):
        subprocess.run(
            ["ip", "netns", "exec", ns, "nft", "-f", "-"], input=NFT_RULES, text=True, check=True,
            capture_output=True, timeout=30,
        )  # fmt: skip
        return "nft"
    if shutil.which("iptables"):
        for rule in IPTABLES_RULES:
            in_ns(ns, "iptables", *rule)
        return "iptables"
    return ""


def listening_sockets(ns: str) -> list[str]:
    """Lines of /proc/net/tcp{,6} in ``ns`` whose state is LISTEN."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        done = in_ns(ns, "cat", table, check=False)
        for line in done.stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == LISTEN:
                found.append(f"{table}: {line.strip()}")
    return found


@pytest.fixture
def topology6():
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    topo = Topology(6)
    try:
        topo.up()
    except RuntimeError as exc:
        topo.down()
        pytest.skip(f"could not build the namespace network: {exc}")
    try:
        yield topo
    finally:
        topo.down()


def test_pppca_through_a_relay_with_inbound_connections_refused_at_every_party(
    tmp_path: Path, topology6: Topology, wine
):
    topo = topology6
    relay_host, party_hosts = topo.hosts[0], topo.hosts[1:]
    tools = {firewall(ns) for ns in party_hosts}
    if tools != {""}:  # the rule works: a listener in a party's namespace cannot be reached from outside
        port = topo.free_port(1)
        listener = subprocess.Popen(
            ["ip", "netns", "exec", party_hosts[0], sys.executable, "-c",
             f"import socket,time; s=socket.socket(); s.bind(('0.0.0.0',{port})); s.listen(); time.sleep(30)"],
        )  # fmt: skip
        try:
            probe = (
                f"import socket,sys\ntry:\n    socket.create_connection(('{topo.addresses[1]}',{port}),timeout=2)\n"
                "    print('reached')\nexcept OSError as e:\n    print('refused', e)"
            )
            reached = in_ns(relay_host, sys.executable, "-c", probe).stdout
            assert reached.startswith("refused"), (tools, reached)
        finally:
            listener.kill()
            listener.wait()

    parts = np.array_split(wine, 3)
    write_credentials([*NAMES, "relay"], tmp_path / "tls")
    relay = f"{topo.addresses[0]}:{topo.free_port(0)}"
    commands, outputs = party_commands(
        tmp_path, parts, "unused:1", timeout=20, connect_timeout=60, external_store=False,
        tls_dir=tmp_path / "tls",
    )  # fmt: skip
    placed = {}
    for i, (name, command) in enumerate(commands.items()):  # ranks 0..4 in order
        at = command.index("--master")
        command[at : at + 2] = ["--relay", relay]
        placed[name] = ["ip", "netns", "exec", party_hosts[i], *command]
    placed["relay"] = [
        "ip", "netns", "exec", relay_host, sys.executable, "-m", "mpc_pca.cli", "relay", "--listen", relay,
        "--tls-dir", str(tmp_path / "tls"), "--parties", ",".join(NAMES), "--join-window", "90", "-v",
    ]  # fmt: skip

    listening: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # no party ever listens, firewall or not
        while not stop.wait(0.2):
            for ns in party_hosts:
                listening.extend(listening_sockets(ns))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        outcomes = launch(placed, timeout=20, env=child_environment())
    finally:
        stop.set()
        watcher.join()
    raise_on_failure(outcomes)

    reference = check_pppca_outputs(outputs, parts)
    for name in NAMES:
        report = json.loads(outputs[name].read_text())["report"][name]
        assert report["bytes_sent"] == reference.reports[name].bytes_sent
        assert report["bytes_received"] == reference.reports[name].bytes_received
    assert not listening, listening
    relay_log = outcomes["relay"].stderr
    for i, name in enumerate(NAMES):
        assert f"{name!r} (rank {i}) joined from {topo.addresses[i + 1]}:" in relay_log, relay_log[-3000:]
