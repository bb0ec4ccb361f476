"""Nothing below ``mpc_pca.cli`` names a command-line flag; ``mpc-pca`` spells library settings as flags.

Issue 36: the protocols declare settings, the command line owns the flags.
A message raised below ``cli/`` names a setting as Python passes it
(``chunk_rows=0``); the command line prints it as ``--chunk-rows 0``
(:mod:`mpc_pca.cli.errors`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mpc_pca.cli.app import build_parser, main
from mpc_pca.cli.errors import flag_table, in_flag_terms

ROOT = Path(__file__).resolve().parents[2]
BELOW_CLI = [
    path
    for package in ("mpc_pca", "protocols")
    for path in sorted((ROOT / package).rglob("*.py"))
    if "cli" not in path.relative_to(ROOT).parts[1:2]
]


def _long_flags() -> set[str]:
    table = flag_table(build_parser())
    return {flag.spelling for flag in table.values()} | {
        flag.negative for flag in table.values() if flag.negative
    }


def _strings(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return found


def test_no_module_below_cli_names_a_command_line_flag() -> None:
    flags = _long_flags()
    pattern = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    named = [
        f"{path.relative_to(ROOT)}:{line}: {token}"
        for path in BELOW_CLI
        for line, text in _strings(path)
        for token in pattern.findall(text)
        if token in flags
    ]
    assert not named, "flags named below cli/:\n" + "\n".join(named)


def test_the_scan_sees_a_planted_flag(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('raise ValueError(f"pass --chunk-rows {1}")\n', encoding="utf-8")
    assert any("--chunk-rows" in text for _, text in _strings(planted))
    assert "--chunk-rows" in _long_flags()


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        ("chunk_rows=0 reads nothing", "--chunk-rows 0 reads nothing"),
        (
            "needs backend='additive-masks' and reveal='covariance'",
            "needs --backend additive-masks and --reveal covariance",
        ),
        ("it needs insecure=True", "it needs --insecure"),
        ("header=False to read it as data", "--no-header to read it as data"),
        ("header=True to force", "--header to force"),
        ("below dropout_threshold", "below --dropout-threshold"),
        ("an n_components of 3", "an --n-components of 3"),
        ("the model and the data are fine", "the model and the data are fine"),
        (
            "'chunk_rows' and spec.chunk_rows and my_chunk_rows stay",
            "'chunk_rows' and spec.chunk_rows and my_chunk_rows stay",
        ),
        ("data=None", "no --data"),
    ],
)
def test_library_settings_read_as_flags_on_the_command_line(library: str, command_line: str) -> None:
    assert in_flag_terms(library, flag_table(build_parser())) == command_line


def test_a_library_error_reaches_the_command_line_in_flag_terms(capsys: pytest.CaptureFixture[str]) -> None:
    # dropout_threshold is checked below cli/ (the PPPCA protocol object), not by the parser
    argv = [
        "run",
        "--protocol",
        "pppca-ss",
        "--backend",
        "paillier",
        "--data",
        "builtin:wine",
        "--parties",
        "3",
    ]
    code = main([*argv, "--dropout-threshold", "2", "-q"])
    err = capsys.readouterr().err
    assert code == 3
    assert "--dropout-threshold 2" in err and "--backend paillier" in err
    assert "dropout_threshold" not in err and "backend=" not in err


def test_what_a_peer_said_is_not_rewritten() -> None:
    from mpc_pca.cli.errors import spell_as_flags
    from protocols.errors import PeerFailureError, PeerTimeoutError

    claim = "provider1 announced backend=b'additive', which must be a str"
    relayed = spell_as_flags(PeerFailureError(f"'provider0' stopped: 'consumer' (rank 4) reported: {claim}"))
    assert str(relayed).endswith(claim)
    own = spell_as_flags(
        PeerTimeoutError("the rendezvous host 'provider0' (rank 0, master=127.0.0.1:5) is unreachable")
    )
    assert "(rank 0, --master 127.0.0.1:5)" in str(own)
    assert "announced --backend" not in in_flag_terms(claim, flag_table(build_parser()))
