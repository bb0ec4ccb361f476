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


def test_party_checks_the_eigensolve_settings_before_it_connects():
    """``--eigengap`` reaches a party's settings (it used to be refused for separate processes) and is
    checked before any link is opened (the master address here has nothing listening)."""
    from mpc_pca.cli.runners import settings_of

    base = ["party", "--rank", "0", "--world-size", "5", "--master", "127.0.0.1:1", "--insecure"]
    args = build_parser().parse_args(
        [*base, "--protocol", "pppca-ss", "--reveal", "components", "--eigengap", "0.01"]
    )
    assert settings_of(args)["eigengap"] == 0.01
    with pytest.raises(InputValidationError, match="apply only with --reveal components"):
        party_command(build_parser().parse_args([*base, "--protocol", "pppca-ss", "--eigengap", "0.01"]), {})
    with pytest.raises(InputValidationError, match=r"--eigengap 1\.5 is out of range"):
        args = [*base, "--protocol", "pppca-ss", "--reveal", "components", "--eigengap", "1.5"]
        party_command(build_parser().parse_args(args), {})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--eigengap", "0.05"], "apply only with --reveal components, not --reveal covariance"),
        (["--reveal", "components", "--eigengap", "0"], "--eigengap 0.0 is out of range"),
    ],
)
def test_run_in_process_checks_the_eigensolve_settings_as_a_party_does(capsys, extra, message):
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--parties", "2", *extra]
    assert main(argv) == 3
    assert message in capsys.readouterr().err
