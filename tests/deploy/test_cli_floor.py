"""The command line only parses arguments into the floor's specs; the registry says what is deployable."""

from __future__ import annotations

import json

import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.party import party_command
from protocols.errors import InputValidationError


def test_run_as_processes_refuses_an_in_process_only_protocol(capsys):
    argv = ["run", "--protocol", "sn", "--data", "builtin:iris", "--transport", "processes"]
    assert main(argv) == 3
    assert "does not run with --transport processes yet; choose one of [" in capsys.readouterr().err


def test_party_refuses_an_in_process_only_protocol_and_options_it_does_not_use():
    # party_main ends its process on failure (so that its links close): call the command itself
    base = ["party", "--rank", "0", "--world-size", "5", "--master", "127.0.0.1:1", "--insecure"]
    with pytest.raises(InputValidationError, match="'sn' cannot run as separate parties yet"):
        party_command(build_parser().parse_args([*base, "--protocol", "sn"]), {})
    with pytest.raises(InputValidationError, match="--epsilon does not apply to protocol 'pppca-ss'"):
        party_command(build_parser().parse_args([*base, "--protocol", "pppca-ss", "--epsilon", "1"]), {})


def test_run_as_processes_gives_the_in_process_json(tmp_path):
    outputs = {}
    for transport in ("inprocess", "processes"):
        out = tmp_path / f"{transport}.json"
        argv = [
            "run",
            "--protocol",
            "pppca-ss",
            "--data",
            "builtin:iris",
            "--parties",
            "2",
            "--output",
            str(out),
        ]
        assert main([*argv, "--transport", transport, "--timeout", "60"]) == 0
        outputs[transport] = json.loads(out.read_text())
    inproc, procs = outputs["inprocess"], outputs["processes"]
    assert set(inproc) == set(procs) and procs["transport"] == "processes"
    assert procs["components"] == inproc["components"] and procs["feature_names"] == inproc["feature_names"]
