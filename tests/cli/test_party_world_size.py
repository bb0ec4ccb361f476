"""Issue 35: ``mpc-pca party --world-size`` is bounded by what the rendezvous and the relay accept."""

from __future__ import annotations

import os
import time

import pytest

from mpc_pca.cli import main
from mpc_pca.deploy.party import resolve_party
from mpc_pca.pppca.deployment import PPPCADeployment
from protocols.errors import InputValidationError
from protocols.transport import relay, rendezvous
from protocols.transport.ranks import MAX_WORLD_SIZE


def test_the_bound_is_the_relay_s_and_the_rendezvous_limit():
    assert MAX_WORLD_SIZE == relay.MAX_PARTIES == rendezvous.MAX_WAITING_NAMES


@pytest.mark.parametrize("world", ["1000000", str(MAX_WORLD_SIZE + 1)])
def test_a_world_beyond_the_bound_exits_3_at_once_naming_value_and_limit(monkeypatch, capsys, world):
    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", leave)  # party_main ends the process at once on an error
    started = time.monotonic()
    with pytest.raises(SystemExit) as ended:
        main(["party", "--protocol", "pppca-ss", "--rank", "0", "--world-size", world, "--master", "h:1"])
    assert ended.value.code == 3
    assert time.monotonic() - started < 10  # today: minutes, linear in the world size
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--world-size {world} is out of range; it must be between 1 and {MAX_WORLD_SIZE}" in err


def test_the_largest_world_resolves_quickly():
    started = time.monotonic()
    name, n_providers = resolve_party(PPPCADeployment("pppca-ss"), None, MAX_WORLD_SIZE - 1, MAX_WORLD_SIZE)
    assert (name, n_providers) == ("consumer", MAX_WORLD_SIZE - 2)
    assert time.monotonic() - started < 2.0  # every provider count tried in turn took 8 s here


def test_resolve_party_refuses_it_too():
    with pytest.raises(InputValidationError, match=r"world size 5000 is out of range; .* 4096"):
        resolve_party(PPPCADeployment("pppca-ss"), None, 0, 5000)
