"""The torch.distributed transport: parties as real processes on loopback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.deploy.party import resolve_party
from mpc_pca.pppca.deployment import PPPCADeployment, pppca_ranks
from protocols.errors import InputValidationError, ProtocolError

torch = pytest.importorskip(
    "torch", reason="torch is not installed (README, 'Set up and run': optional line)"
)

from mpc_pca.deploy.local import child_environment  # noqa: E402
from protocols.runtime import run_inprocess  # noqa: E402
from protocols.runtime.launcher import host_store, launch, raise_on_failure  # noqa: E402
from protocols.transport.torch_store import check_ranks, parse_master  # noqa: E402
from tests.helpers.torch_worker import RANKS, _jsonable, echo_roles  # noqa: E402

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "torch_worker.py"


def run_worker_world(task: str, workdir: Path, backend: str = "additive") -> dict[str, dict]:
    """Run the four parties of ``tests/torch_worker.py`` as processes; return their JSON outputs."""
    store, port = host_store(len(RANKS), 30)
    commands = {
        name: [sys.executable, str(WORKER), task, name, f"127.0.0.1:{port}", str(workdir), backend]
        for name in RANKS
    }
    outcomes = launch(commands, timeout=20, env=child_environment())
    raise_on_failure(outcomes, store)
    return {name: json.loads((workdir / f"{name}.out.json").read_text()) for name in RANKS}


# -- pure helpers (no processes) ----------------------------------------------------------


def test_parse_master_accepts_host_port_and_rejects_garbage():
    assert parse_master("127.0.0.1:29500") == ("127.0.0.1", 29500)
    assert parse_master("[::1]:80") == ("::1", 80)
    for bad in ["127.0.0.1", ":80", "host:port", "host:0", "host:70000"]:
        with pytest.raises(InputValidationError):
            parse_master(bad)


def test_rank_maps_must_be_zero_to_w_minus_one():
    assert check_ranks({"a": 1, "b": 0}) == {"a": 1, "b": 0}
    for bad in [{}, {"a": 1}, {"a": 0, "b": 0}, {"a": 0, "b": 2}]:
        with pytest.raises(InputValidationError):
            check_ranks(bad)


def party_name(role, rank, world_size):
    return resolve_party(PPPCADeployment("pppca-ss"), role, rank, world_size)[0]


def test_pppca_layout_and_role_checks():
    assert pppca_ranks(3) == {"provider0": 0, "provider1": 1, "provider2": 2, "server": 3, "consumer": 4}
    assert party_name("provider", 2, 5) == "provider2"
    assert party_name("server", 3, 5) == "server"
    assert party_name("consumer", 4, 5) == "consumer"
    with pytest.raises(InputValidationError, match="server runs at rank 3"):
        party_name("server", 1, 5)
    with pytest.raises(InputValidationError, match=r"providers take ranks 0 \.\. 2"):
        party_name("provider", 3, 5)
    with pytest.raises(InputValidationError, match="too small"):
        party_name("provider", 0, 2)


def test_crypten_backend_is_refused_in_process(capsys):
    code = main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--backend", "crypten"])
    assert code == 3
    assert "--transport torch" in capsys.readouterr().err


def test_crypten_backend_on_threads_raises_a_clear_error():
    from protocols.backends.crypten import CrypTenBackend

    backend = CrypTenBackend()

    def role(name):
        def run(party):
            value = None if name == "r" else np.ones(3)
            return backend.secure_sum(party, value, contributors=["a0", "a1"], receiver="r")

        return run

    with pytest.raises(ProtocolError, match=r"in its own process.*run_torch_party"):
        run_inprocess({n: role(n) for n in ["a0", "a1", "r"]}, timeout=5)


# -- real processes ---------------------------------------------------------------------


@pytest.mark.torch
def test_channel_carries_every_message_type_and_meters_like_in_process(tmp_path):
    outputs = run_worker_world("echo", tmp_path)
    reference = run_inprocess(echo_roles(), timeout=10)
    for name in RANKS:
        assert outputs[name]["output"] == _jsonable(reference.outputs[name])
        expected = reference.reports[name].as_dict()
        got = outputs[name]["report"]
        for key in ("bytes_sent", "bytes_received", "messages_sent", "messages_received", "rounds"):
            assert got[key] == expected[key], (name, key)
    assert outputs["r"]["output"]["big_ok"] is True
    assert outputs["r"]["output"]["mid_ok"] is True
    assert [ok for _, ok in outputs["r"]["output"]["edges"]] == [True, True]
    from protocols.transport.torch_channel import DEFAULT_FRAME_BYTES
    from tests.helpers.torch_worker import DEFAULT_FRAME_BYTES as WORKER_FRAME

    assert WORKER_FRAME == DEFAULT_FRAME_BYTES
    assert outputs["a1"]["output"]["reply"] == "thanks a1"


@pytest.mark.torch
@pytest.mark.parametrize("backend", ["additive", "additive-masks"])
def test_secure_sum_over_processes_is_the_exact_ring_sum(tmp_path, backend):
    from protocols.encoding import FixedPointCodec
    from tests.helpers.oracles import ring_sum_reference

    rng = np.random.default_rng(3)
    values = {name: rng.normal(scale=50.0, size=(7, 5)) for name in ("a0", "a1", "a2")}
    for name, value in values.items():
        np.save(tmp_path / f"{name}.npy", value)
    outputs = run_worker_world("sum", tmp_path, backend)
    expected = ring_sum_reference(list(values.values()), FixedPointCodec())
    for total in outputs["r"]["output"]:
        assert np.array_equal(np.array(total), expected)
    for name in ("a0", "a1", "a2"):
        assert outputs[name]["output"] is None


def _pppca_cli(tmp_path: Path, name: str, *extra: str, protocol: str = "pppca-ss") -> dict:
    out = tmp_path / f"{name}.json"
    argv = ["run", "--protocol", protocol, "--data", "builtin:wine", "--parties", "3"]
    argv += ["--n-components", "3", "--split", "random", "--seed", "11", "--output", str(out), *extra]
    assert main(argv) == 0
    return json.loads(out.read_text())


@pytest.mark.torch
@pytest.mark.parametrize("protocol", ["pppca-ss", "pppca-he"])
def test_cli_torch_transport_gives_the_in_process_result(tmp_path, protocol):
    inproc = _pppca_cli(tmp_path, "inprocess", protocol=protocol)
    torch_run = _pppca_cli(tmp_path, "torch", "--transport", "torch", "--timeout", "20", protocol=protocol)
    assert set(inproc) == set(torch_run)
    assert torch_run["transport"] == "torch"
    for key in ("components", "explained_variance", "mean"):
        assert np.allclose(torch_run[key], inproc[key], rtol=0, atol=1e-6), key
    assert torch_run["n_samples"] == inproc["n_samples"]
    assert list(torch_run["report"]) == list(inproc["report"])
    for name, report in inproc["report"].items():
        for key in ("messages_sent", "messages_received", "rounds"):
            assert torch_run["report"][name][key] == report[key], (name, key)
        for key in ("bytes_sent", "bytes_received"):
            if protocol == "pppca-ss":
                assert torch_run["report"][name][key] == report[key], (name, key)
            else:  # fresh Paillier keys: ciphertexts may be a few bytes shorter or longer
                assert abs(torch_run["report"][name][key] - report[key]) <= 0.01 * report[key], (name, key)


@pytest.mark.torch
def test_cli_rejects_protocol_options_before_starting_processes(capsys):
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--transport", "torch"]
    assert main([*argv, "--backend", "no-such-backend"]) == 3
    assert "unknown backend" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("scale", "n_components", "match"),
    [(1e-6, 2, "fewer than 20 significant bits"), (1.0, 99, "n_components=99")],
)
def test_launcher_refuses_bad_input_before_any_process_starts(monkeypatch, wine, scale, n_components, match):
    wine = wine + 1e12 / scale  # an offset that dwarfs the spread: the one case scaling cannot fix
    import mpc_pca.deploy.local as launch_module
    from mpc_pca.deploy import launch_local

    def no_rendezvous(*args, **kwargs):
        raise AssertionError("the launcher opened a rendezvous although the input is invalid")

    monkeypatch.setattr(launch_module, "host_rendezvous", no_rendezvous)
    with pytest.raises(InputValidationError, match=match):
        launch_local("pppca-ss", np.array_split(wine * scale, 3), {"n_components": n_components})
