"""Issue 38: Paillier's default randomness, the same constant for the command line and the protocols' settings.

The command line (``--paillier-randomness``), the deploy settings
(``paillier_randomness=None``) and the docs take
:data:`protocols.backends.DEFAULT_PAILLIER_RANDOMNESS`; a backend object
built without options stays textbook ``r^n`` (``standard``). The tutorial's
``paillier-defaults`` table states both, and is checked here against the code,
as is the ``--help`` text that the CLI reference page is generated from.
"""

from __future__ import annotations

from typing import Any

import pytest

from mpc_pca.cli import build_parser
from mpc_pca.cli.options import paillier_backend_options
from mpc_pca.pppca.announcement import backend_options
from mpc_pca.pppca.estimator import resolve_backend
from protocols.backends import (
    DEFAULT_PAILLIER_RANDOMNESS,
    PAILLIER_RANDOMNESS,
    make_backend,
    paillier_options,
)
from protocols.backends.paillier import PaillierBackend
from tests.helpers.markdown_blocks import DOCS, block

TUTORIAL = DOCS / "tutorials" / "ss-vs-paillier.md"
TABLE_MARKER = "<!-- paillier-defaults: tests/cli/test_paillier_defaults.py"
#: The backend attributes each ``--paillier-randomness`` mode sets (``workers`` aside).
RANDOMNESS_KEYS = ("precompute", "offline", "exponent_bits")


def mode_of(backend: PaillierBackend) -> str:
    """The ``--paillier-randomness`` mode whose options give ``backend``'s randomness attributes."""
    have = {key: getattr(backend, key) for key in RANDOMNESS_KEYS}
    modes = []
    for mode in PAILLIER_RANDOMNESS:
        options = paillier_options(mode, key_bits=backend.key_bits)
        if {
            key: options.get(key, False if key != "exponent_bits" else None) for key in RANDOMNESS_KEYS
        } == have:
            modes.append(mode)
    assert len(modes) == 1, (have, modes)
    return modes[0]


def table() -> dict[str, str]:
    """The tutorial's defaults table: the default mode of each row, keyed by the row's first cell."""
    lines = TUTORIAL.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(TABLE_MARKER))
    rows: dict[str, str] = {}
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        where, default = (cell.strip() for cell in line.strip("|").split("|"))
        rows[where] = default.strip("`")
    return rows


def _run_args(*extra: str) -> Any:
    return build_parser().parse_args(["run", "--protocol", "pppca-he", "--data", "builtin:wine", *extra])


def test_the_command_line_and_the_settings_take_the_one_constant():
    assert DEFAULT_PAILLIER_RANDOMNESS in PAILLIER_RANDOMNESS
    expected = paillier_options(DEFAULT_PAILLIER_RANDOMNESS)
    assert paillier_backend_options(_run_args(), "paillier") == expected  # mpc-pca run / party
    assert backend_options({"backend": "paillier"}) == expected  # run_protocol, launch_local, PartySpec
    cli = make_backend("paillier", **paillier_backend_options(_run_args(), "paillier"))
    assert mode_of(cli) == DEFAULT_PAILLIER_RANDOMNESS


@pytest.mark.parametrize("mode", PAILLIER_RANDOMNESS)
def test_each_mode_given_on_the_command_line_is_that_mode(mode):
    options = paillier_backend_options(_run_args("--paillier-randomness", mode), "paillier")
    assert mode_of(make_backend("paillier", **options)) == mode


def test_a_backend_object_without_options_is_textbook():
    assert mode_of(PaillierBackend()) == "standard"
    assert mode_of(make_backend("paillier")) == "standard"
    assert mode_of(resolve_backend("paillier")) == "standard"  # PPPCA(backend="paillier")
    assert mode_of(PaillierBackend(precompute=True)) == "fixed-base-short"


def test_the_tutorial_states_both_defaults():
    rows = table()
    cli_rows = [where for where in rows if "mpc-pca run" in where]
    api_rows = [where for where in rows if "PaillierBackend()" in where]
    assert len(cli_rows) == len(api_rows) == 1 and len(rows) == 2, rows
    assert rows[cli_rows[0]] == DEFAULT_PAILLIER_RANDOMNESS
    assert rows[api_rows[0]] == mode_of(PaillierBackend())
    assert 'PPPCA(backend="paillier")' in api_rows[0] and "paillier_randomness" in cli_rows[0]
    text = TUTORIAL.read_text(encoding="utf-8")
    assert "the default stays the standard" not in text  # the sentence issue 38 found contradicting --help


def test_help_states_both_defaults():
    """The CLI reference page is ``--help`` (docs/reference/cli.md is generated from the parser)."""
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    action = next(a for a in run._actions if "--paillier-randomness" in a.option_strings)
    assert action.default is None  # the constant is applied once, by paillier_options
    assert f"default {DEFAULT_PAILLIER_RANDOMNESS}:" in action.help
    assert (
        "standard: textbook r^n while encrypting, the default of the Python API's PaillierBackend()"
        in action.help
    )


def test_the_tutorials_example_is_the_command_lines_default():
    namespace: dict[str, Any] = {}
    exec(block(TUTORIAL, "api-paillier-defaults").text, namespace)
    he = namespace["model"].backend
    assert isinstance(he, PaillierBackend) and mode_of(he) == DEFAULT_PAILLIER_RANDOMNESS
