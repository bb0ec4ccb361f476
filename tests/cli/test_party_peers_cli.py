"""``mpc-pca party --peers FILE``: the static table's checks against the run's options (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpc_pca.cli import build_parser
from mpc_pca.cli.party import resolve_peers
from mpc_pca.registry import entry
from protocols.errors import InputValidationError

NAMES = ("provider0", "provider1", "server", "consumer")


def peers_file(tmp_path: Path, names: tuple[str, ...] = NAMES) -> str:
    path = tmp_path / "peers.json"
    parties = [{"name": name, "address": f"10.0.0.{i + 1}:7001"} for i, name in enumerate(names)]
    path.write_text(json.dumps({"parties": parties}))
    return str(path)


def resolve(*argv: str, env: dict[str, str] | None = None):
    args = build_parser().parse_args(["party", "--protocol", "pppca-ss", *argv])
    return resolve_peers(args, env or {}, entry("pppca-ss"))


def test_the_rank_comes_from_rank_or_from_the_role_named_in_the_table(tmp_path):
    path = peers_file(tmp_path)
    table, name, n_providers = resolve("--peers", path, "--role", "server")
    assert (name, n_providers, table.ranks["server"]) == ("server", 2, 2)
    assert resolve("--peers", path, "--rank", "1")[1] == "provider1"
    assert resolve("--peers", path, env={"RANK": "3", "WORLD_SIZE": "4"})[1] == "consumer"
    with pytest.raises(InputValidationError, match=r"lists \['provider0', .*give --rank, or --role"):
        resolve("--peers", path, "--role", "provider")


@pytest.mark.parametrize("flag", ["--master", "--relay", "--advertise", "--join-window"])
def test_options_of_a_rendezvous_are_refused(tmp_path, flag):
    value = "60" if flag == "--join-window" else "10.0.0.9:7001"
    with pytest.raises(InputValidationError, match=f"--peers replaces {flag}"):
        resolve("--peers", peers_file(tmp_path), "--rank", "0", flag, value)


def test_the_table_must_match_the_world_size_and_the_protocols_layout(tmp_path):
    path = peers_file(tmp_path)
    with pytest.raises(InputValidationError, match=r"--world-size 5 disagrees with .*lists 4 parties"):
        resolve("--peers", path, "--rank", "0", "--world-size", "5")
    swapped = peers_file(tmp_path, ("provider0", "provider1", "consumer", "server"))
    with pytest.raises(InputValidationError, match="puts 'consumer' at rank 2, where the run has 'server'"):
        resolve("--peers", swapped, "--rank", "0")
    with pytest.raises(InputValidationError, match="rank 4 is out of range"):
        resolve("--peers", path, "--rank", "4")
