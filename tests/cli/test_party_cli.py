"""``mpc-pca party`` and ``mpc-pca certs`` argument handling (no network)."""

from __future__ import annotations

import os

import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.errors import errors_in_flag_terms
from mpc_pca.cli.party import party_command, resolve_layout
from protocols.errors import InputValidationError


def parse(*argv: str):
    return build_parser().parse_args(["party", "--protocol", "pppca-ss", *argv])


def test_torchrun_variables_fill_in_missing_flags():
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29500"}
    assert resolve_layout(parse(), env) == (3, 5, "10.0.0.7:29500")
    assert resolve_layout(parse("--rank", "1", "--master", "h:1"), env) == (1, 5, "h:1")
    assert resolve_layout(parse(), {**env, "MASTER_ADDR": "::1"})[2] == "[::1]:29500"
    with pytest.raises(InputValidationError, match=r"--world-size is required \(or set \$WORLD_SIZE"):
        resolve_layout(parse("--rank", "0", "--master", "h:1"), {})


def test_role_follows_from_rank_and_a_mismatch_is_an_error(tmp_path):
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    with pytest.raises(InputValidationError, match=r"the consumer runs at rank 4 .*got rank 3"):
        party_command(parse("--role", "consumer"), env)
    with pytest.raises(InputValidationError, match="the server holds no data"):
        party_command(parse("--data", "builtin:iris"), env)


def test_party_refuses_to_start_without_credentials():
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    # the message comes from below cli/ (LinkOptions.check); the command prints it in flag terms
    with pytest.raises(InputValidationError, match=r"no TLS credentials.*--insecure"), errors_in_flag_terms():
        party_command(parse(), env)
    with pytest.raises(InputValidationError, match="--key is missing"):
        party_command(parse("--ca", "ca.pem", "--cert", "server.pem"), env)


def test_crypten_requires_insecure(tmp_path, monkeypatch):
    # The TLS refusal is checked whether or not torch and CrypTen are installed (here: as if they were).
    monkeypatch.setattr("mpc_pca.cli.options.installed", lambda module: True)
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    main(["certs", "--parties", "server", "--out", str(tmp_path)])
    with pytest.raises(InputValidationError, match="cannot be wrapped in TLS"):
        party_command(parse("--backend", "crypten", "--tls-dir", str(tmp_path)), env)


@pytest.mark.parametrize(
    ("option", "shown"),
    [
        (("--advertise", "10.0.0.2:7000"), "10.0.0.2:7000"),
        (("--listen", "127.0.0.1:7000"), "127.0.0.1:7000"),
        (("--join-window", "2h"), "7200"),
    ],
)
def test_crypten_refuses_the_tls_only_link_options(monkeypatch, option, shown):
    """gloo picks its own ports and start-up deadline: a fixed address or a join window is refused, not ignored."""
    monkeypatch.setattr("mpc_pca.cli.options.installed", lambda module: True)
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    # party_command is called below the command line's errors_in_flag_terms (cli/party.py's _party_guarded)
    with (
        pytest.raises(InputValidationError, match=f"{option[0]} {shown} apply to the TLS links"),
        errors_in_flag_terms(),
    ):
        party_command(parse("--backend", "crypten", "--insecure", *option), env)


def test_certs_command_writes_one_pair_per_party(tmp_path, capsys):
    assert main(["certs", "--parties", "provider0,provider1,server", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(
        ["ca.pem", "ca.key"]
        + [f"{n}.{e}" for n in ("provider0", "provider1", "server") for e in ("pem", "key")]
    )
    assert main(["certs", "--parties", "x", "--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "ca.pem" in err and "already exist" in err and "nothing was written" in err


def test_party_output_is_checked_before_the_run(tmp_path):
    """A bad --output ends the party before any link is opened (no master listens at port 1)."""
    env = {"RANK": "0", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    data = tmp_path / "mine.csv"
    data.write_text("1,2\n3,4\n")
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    hard = tmp_path / "hard.csv"
    os.link(data, hard)
    cases = {
        str(tmp_path / "missing" / "out.json"): "does not exist",
        str(existing): "exists; pass --force",
        str(data): "is one of the input files",
        str(hard): "is one of the input files",
        str(tmp_path): "is a directory",
    }
    for output, message in cases.items():
        args = parse("--data", str(data), "--no-header", "--insecure", "--output", output)
        with pytest.raises(InputValidationError, match=message):
            party_command(args, env)
    assert existing.read_text() == "{}" and data.read_text() == "1,2\n3,4\n"


def test_party_output_may_not_overwrite_its_credentials(tmp_path):
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    main(["certs", "--parties", "server", "--out", str(tmp_path / "tls")])
    key = tmp_path / "tls" / "server.key"
    args = parse("--tls-dir", str(tmp_path / "tls"), "--output", str(key), "--force")
    with pytest.raises(InputValidationError, match="is one of the input files"):
        party_command(args, env)


def test_party_protocol_names_resolve_like_run(monkeypatch, capsys):
    """``party`` resolves the name in the registry as ``run`` does: any case, "did you mean", exit 3."""
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    args = build_parser().parse_args(["party", "--protocol", "PPPCA-SS"])
    with pytest.raises(InputValidationError, match="no TLS credentials"):  # got past the name
        party_command(args, env)
    assert args.protocol == "pppca-ss"

    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", leave)  # party_main ends the process at once on an error
    with pytest.raises(SystemExit) as ended:
        main(["party", "--protocol", "pppca-sss", "--rank", "0", "--world-size", "5", "--master", "h:1"])
    assert ended.value.code == 3
    assert "unknown protocol 'pppca-sss'; did you mean 'pppca-ss'? choose one of [" in capsys.readouterr().err
