"""Issue 26, relay mode with real processes on loopback: `mpc-pca relay` and `mpc-pca party --relay`.

PPPCA-SS with three providers, the server and the consumer, once with direct
links (rank 0 hosts the rendezvous) and once through a relay; the parties'
JSON results are the same, and the relay reports only sizes per pair.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.deploy.local import child_environment
from protocols.runtime.launcher import launch, raise_on_failure
from protocols.transport.certs import write_credentials
from tests.helpers.socket_helpers import free_port
from tests.helpers.torch_helpers import check_pppca_outputs, party_commands

pytestmark = pytest.mark.slow

NAMES = ("provider0", "provider1", "provider2", "server", "consumer")
#: What a party's JSON result holds besides its traffic report (which differs in seconds).
RESULT_KEYS = ("components", "explained_variance", "mean", "projection")


def through_relay(commands: dict[str, list[str]], relay: str) -> dict[str, list[str]]:
    """The same party commands with ``--relay ADDRESS`` in place of ``--master ADDRESS``."""
    out = {}
    for name, command in commands.items():
        at = command.index("--master")
        out[name] = [*command[:at], "--relay", relay, *command[at + 2 :]]
    return out


def relay_command(relay: str, tls_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mpc_pca.cli",
        "relay",
        "--listen",
        relay,
        "--tls-dir",
        str(tls_dir),
        "--parties",
        ",".join(NAMES),
        *extra,
    ]


def results(outputs: dict[str, Path]) -> dict[str, dict]:
    out = {}
    for name, path in outputs.items():
        value = json.loads(path.read_text())
        out[name] = {key: value[key] for key in RESULT_KEYS if key in value}
    return out


def test_pppca_through_the_relay_equals_the_direct_run(tmp_path, wine):
    parts = np.array_split(wine, 3)
    tls = tmp_path / "tls"
    write_credentials([*NAMES, "relay"], tls)
    direct_dir, relay_dir = tmp_path / "direct", tmp_path / "relayed"
    direct_dir.mkdir()
    relay_dir.mkdir()
    options = {"timeout": 30, "connect_timeout": 40, "external_store": False, "tls_dir": tls}
    direct, direct_out = party_commands(direct_dir, parts, f"127.0.0.1:{free_port()}", **options)
    raise_on_failure(launch(direct, timeout=30, env=child_environment()))

    relay = f"127.0.0.1:{free_port()}"
    commands, relayed_out = party_commands(relay_dir, parts, "unused:1", **options)
    commands = through_relay(commands, relay)
    commands["provider1"] += ["-v"]
    commands["relay"] = relay_command(relay, tls, "--join-window", "60", "-v")
    outcomes = launch(commands, timeout=30, env=child_environment())
    raise_on_failure(outcomes)

    check_pppca_outputs(relayed_out, parts)
    assert results(relayed_out) == results(direct_out)
    for name in NAMES:  # the same protocol traffic, metered as in direct mode
        got = json.loads(relayed_out[name].read_text())["report"][name]
        want = json.loads(direct_out[name].read_text())["report"][name]
        assert (got["bytes_sent"], got["rounds"]) == (want["bytes_sent"], want["rounds"])
    assert "relay: forwarding between 5 parties" in outcomes["relay"].stderr
    assert "'server' (rank 3) joined from 127.0.0.1:" in outcomes["relay"].stderr
    assert "reached through the relay" in outcomes["relay"].stderr
    assert "connected to 4 peers through the relay" in outcomes["provider1"].stderr


def test_party_refuses_relay_with_master_listen_or_insecure(tmp_path, wine):
    parts = np.array_split(wine, 3)
    tls = tmp_path / "tls"
    write_credentials([*NAMES, "relay"], tls)
    commands, _ = party_commands(tmp_path, parts, "127.0.0.1:9", tls_dir=tls, external_store=False)
    base = commands["provider0"]
    cases = {
        "master": [*base, "--relay", "127.0.0.1:9"],
        "listen": [*through_relay({"p": base}, "127.0.0.1:9")["p"], "--listen", "127.0.0.1:0"],
        "insecure": [*through_relay({"p": base}, "127.0.0.1:9")["p"], "--insecure"],
        "relay-plain": relay_command("127.0.0.1:0", tmp_path / "nowhere"),
    }
    outcomes = launch(cases, timeout=10, env=child_environment())
    assert outcomes["master"].returncode == 3
    assert "--relay replaces --master" in outcomes["master"].stderr
    assert "--relay replaces --listen" in outcomes["listen"].stderr
    assert "--relay needs TLS" in outcomes["insecure"].stderr
    assert outcomes["relay-plain"].returncode == 3
    assert "port 0 cannot be dialled" in outcomes["relay-plain"].stderr


def test_the_howto_runs_on_one_machine_as_written(tmp_path):
    """``docs/howto/relay.md``: the one-shot certificates, then the one-machine run (on a free port)."""
    import subprocess

    from sklearn.datasets import load_wine

    from mpc_pca.pppca.deployment import read_projection
    from tests.helpers.markdown_blocks import page_of

    prelude = f'mpc-pca() {{ "{sys.executable}" -m mpc_pca.cli "$@"; }}\n'
    one_shot, one_machine = page_of("relay-one-shot"), page_of("relay-one-machine")
    assert one_shot.path == one_machine.path and one_shot.path.name == "relay.md"
    assert "7443" in one_machine.text  # the port the page shows, replaced by a free one here
    for block in (one_shot.text, one_machine.text.replace("7443", str(free_port()))):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", prelude + block],
            cwd=tmp_path, env=child_environment(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, (block, done.stdout[-2000:], done.stderr[-3000:])
    # the relay's per-pair summary (issue 38): the page's relay-summary pairs, in its order (bytes vary a little)
    shown = [
        line.rsplit(None, 2)[0] for line in page_of("relay-summary").text.splitlines()[1:] if line.strip()
    ]
    printed = [line.rsplit(None, 2)[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    assert printed == shown and "relay done: 5 parties, " in done.stdout, done.stdout
    server = json.loads((tmp_path / "server.json").read_text())
    wine = load_wine().data  # every provider of the page reads all of wine: the pooled PCA is wine's
    centred = wine - wine.mean(axis=0)
    top = np.linalg.eigh(centred.T @ centred)[1][:, ::-1][:, : len(server["components"])].T
    np.testing.assert_allclose(np.abs(server["components"]), np.abs(top), rtol=0, atol=1e-6)
    labels, projection = read_projection(json.loads((tmp_path / "consumer.json").read_text())["projection"])
    assert projection.shape[0] == 3 * len(wine) and set(labels) == {"provider0", "provider1", "provider2"}
