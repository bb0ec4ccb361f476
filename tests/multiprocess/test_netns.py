"""Multi-host runs (PPPCA and a DP protocol): one party per network namespace, talking over veth links.

The test builds a small private network on this machine: a "switch"
namespace holding a Linux bridge, and one namespace per party, each joined to
the bridge by a veth pair and given its own address in a private /24 that
exists only inside these namespaces. Every party is started with ``mpc-pca
party --tls-dir`` inside its namespace (its links listen on the address that
routes to the master); rank 0 hosts the rendezvous, exactly as on real hosts.
Everything is torn down afterwards, also on failure. The test is skipped,
with the reason, where namespaces cannot be created (not root, no iproute2,
or a sandbox that forbids them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from mpc_pca import registry
from mpc_pca.deploy.local import child_environment, run_threads
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.runtime.launcher import launch, raise_on_failure
from protocols.transport.certs import write_credentials
from tests.helpers.torch_helpers import check_pppca_outputs, party_commands

pytestmark = [pytest.mark.netns]

SUBNET = "10.231.7"  # private, and only ever configured inside the test's own namespaces


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class Topology:
    """A bridge namespace plus one namespace per party, created and removed by the test."""

    def __init__(self, n_hosts: int) -> None:
        tag = uuid.uuid4().hex[:6]
        self.switch = f"mpcsw{tag}"
        self.hosts = [f"mpch{tag}{i}" for i in range(n_hosts)]
        self.ifnames = [f"eth{i}" for i in range(n_hosts)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(n_hosts)]
        self.created: list[str] = []

    def _run(self, *args: str) -> None:
        done = _ip(*args)
        if done.returncode != 0:
            raise RuntimeError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")

    def up(self) -> None:
        for ns in [self.switch, *self.hosts]:
            self._run("netns", "add", ns)
            self.created.append(ns)
        self._run("netns", "exec", self.switch, "ip", "link", "add", "br0", "type", "bridge")
        self._run("netns", "exec", self.switch, "ip", "link", "set", "br0", "up")
        for i, (ns, ifname, address) in enumerate(zip(self.hosts, self.ifnames, self.addresses, strict=True)):
            port = f"port{i}"
            self._run(
                "link", "add", ifname, "netns", ns, "type", "veth", "peer", "name", port, "netns", self.switch
            )
            self._run("netns", "exec", self.switch, "ip", "link", "set", port, "master", "br0")
            self._run("netns", "exec", self.switch, "ip", "link", "set", port, "up")
            self._run("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            self._run("netns", "exec", ns, "ip", "addr", "add", f"{address}/24", "dev", ifname)
            self._run("netns", "exec", ns, "ip", "link", "set", ifname, "up")

    def down(self) -> None:
        for ns in reversed(self.created):
            _ip("netns", "del", ns)  # removes the veth ends and the bridge with it
        self.created.clear()

    def free_port(self, host: int) -> int:
        """A port that is free on host ``host`` (asked inside its namespace)."""
        code = "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])"
        done = subprocess.run(
            ["ip", "netns", "exec", self.hosts[host], sys.executable, "-c", code],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return int(done.stdout.strip())


def _skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    probe = f"mpcprobe{uuid.uuid4().hex[:6]}"
    done = _ip("netns", "add", probe)
    if done.returncode != 0:
        return f"this machine does not allow network namespaces: {done.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


@pytest.fixture
def topology():
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    topo = Topology(5)
    try:
        topo.up()
    except RuntimeError as exc:
        topo.down()
        pytest.skip(f"could not build the namespace network: {exc}")
    try:
        yield topo
    finally:
        topo.down()
        leftover = _ip("netns", "list").stdout
        assert not any(ns in leftover for ns in [topo.switch, *topo.hosts])


def pppca_commands(tmp_path: Path, parts: list[np.ndarray], master: str) -> tuple[dict, dict]:
    """Fresh credentials and the five ``mpc-pca party`` commands of a PPPCA run (rank 0 hosts the rendezvous)."""
    write_credentials(list(pppca_ranks(3)), tmp_path / "tls")
    return party_commands(
        tmp_path,
        parts,
        master,
        timeout=20,
        connect_timeout=60,
        external_store=False,
        tls_dir=tmp_path / "tls",
    )


def test_pppca_with_one_party_per_network_namespace(tmp_path: Path, topology: Topology, wine):
    parts = np.array_split(wine, 3)
    master = f"{topology.addresses[0]}:{topology.free_port(0)}"
    commands, outputs = pppca_commands(tmp_path, parts, master)
    placed = {}
    for i, (name, command) in enumerate(commands.items()):  # ranks 0..4 in order
        placed[name] = ["ip", "netns", "exec", topology.hosts[i], *command]
    outcomes = launch(placed, timeout=20, env=child_environment())
    raise_on_failure(outcomes)

    reference = check_pppca_outputs(outputs, parts)
    for name in commands:
        report = json.loads(outputs[name].read_text())["report"][name]
        assert report["bytes_sent"] == reference.reports[name].bytes_sent
        assert report["bytes_received"] == reference.reports[name].bytes_received


def test_capepca_with_one_party_per_network_namespace(tmp_path: Path, topology: Topology):
    """capePCA between five hosts with `mpc-pca party`: the aggregator's result is the in-process one."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 4)) * np.array([2.0, 1.0, 0.5, 0.2])
    X /= 1.05 * np.linalg.norm(X, axis=1).max()
    parts = np.array_split(X, 3)
    layout = registry.deployment("capepca").layout(3)
    assert sorted(layout.values()) == list(range(5))
    write_credentials(list(layout), tmp_path / "tls")
    master = f"{topology.addresses[0]}:{topology.free_port(0)}"
    seed = 4242
    placed, outputs = {}, {}
    for name, rank in layout.items():
        outputs[name] = tmp_path / f"{name}.json"
        command = [
            sys.executable, "-m", "mpc_pca.cli", "party", "--protocol", "capepca", "--rank", str(rank),
            "--world-size", str(len(layout)), "--master", master, "--tls-dir", str(tmp_path / "tls"),
            "--epsilon", "2", "--delta", "1e-3", "--noise-seed", str(seed), "--timeout", "20",
            "--connect-timeout", "60", "--output", str(outputs[name]),
        ]  # fmt: skip
        if rank < len(parts):
            path = tmp_path / f"{name}.csv"
            np.savetxt(path, parts[rank], fmt="%.17g", delimiter=",")
            command += ["--data", str(path), "--no-header"]
        placed[name] = ["ip", "netns", "exec", topology.hosts[rank], *command]
    outcomes = launch(placed, timeout=20, env=child_environment())
    raise_on_failure(outcomes)

    aggregator = json.loads(outputs["aggregator"].read_text())
    reference = run_threads("capepca", parts, {"epsilon": 2.0, "delta": 1e-3}, seed)
    assert aggregator["components"] == reference["components"]
    assert aggregator["explained_variance"] == reference["explained_variance"]
    for name in layout:
        report = json.loads(outputs[name].read_text())["report"][name]
        assert report["bytes_sent"] == reference["report"][name]["bytes_sent"]
        assert report["rounds"] == reference["report"][name]["rounds"]


def test_a_party_advertises_an_address_other_than_its_interfaces(tmp_path: Path, topology: Topology, wine):
    """provider1 listens on every interface at a fixed port and advertises a second address of its host.

    The address table holds only the advertised address (``SUBNET.101``, not
    the address that routes to the master), so provider0, which dials
    provider1, reaches it there or the run fails. Every party also waits in
    the rendezvous's waiting room (``--join-window 60``, lines every second).
    """
    parts = np.array_split(wine, 3)
    second = f"{SUBNET}.101"
    topology._run("netns", "exec", topology.hosts[1], "ip", "addr", "add", f"{second}/24", "dev", "eth1")
    port = topology.free_port(1)
    master = f"{topology.addresses[0]}:{topology.free_port(0)}"
    commands, outputs = pppca_commands(tmp_path, parts, master)
    placed = {}
    for i, (name, command) in enumerate(commands.items()):  # ranks 0..4 in order
        command += ["--join-window", "60", "--waiting-log-interval", "1", "-v"]
        if name == "provider1":
            command += ["--listen", f"0.0.0.0:{port}", "--advertise", f"{second}:{port}"]
        placed[name] = ["ip", "netns", "exec", topology.hosts[i], *command]
    outcomes = launch(placed, timeout=20, env=child_environment())
    raise_on_failure(outcomes)

    check_pppca_outputs(outputs, parts)
    host = outcomes["provider0"].stderr
    assert f"'provider1' (rank 1) joined from {topology.addresses[1]}:" in host, host[-3000:]
    assert f"advertising {second}:{port}" in host, host[-3000:]
    assert f"listening on 0.0.0.0:{port}, advertising {second}:{port}" in outcomes["provider1"].stderr
