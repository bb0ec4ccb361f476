"""Every registry entry's result fields are what its in-process runner writes, and its options are its flags."""

from __future__ import annotations

import json
import warnings

import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.flags import FLAGS
from mpc_pca.registry import entries

#: Skipped here for time only: 2048-bit Paillier keys (pppca-he, dpdpca) and topic-model data (capeagn).
SLOW = {"pppca-he", "dpdpca", "capeagn"}


@pytest.mark.parametrize("name", [n for n in entries() if n not in SLOW])
def test_result_fields_are_written_by_the_in_process_runner(tmp_path, name):
    out = tmp_path / "result.json"
    argv = [
        "run",
        "--protocol",
        name,
        "--data",
        "builtin:iris",
        "--parties",
        "2",
        "--seed",
        "0",
        "--output",
        str(out),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    written = set(json.loads(out.read_text()))
    missing = set(entries()[name].result_fields) - written
    assert not missing, f"{name}: the registry lists {sorted(missing)}, which the run does not write"


def test_every_option_is_a_flag_of_run_with_its_registry_default_accepted():
    parser = build_parser()
    run_flags = {flag for action in parser._subparsers._group_actions[0].choices["run"]._actions
                 for flag in action.option_strings}  # fmt: skip
    for name, item in entries().items():
        assert set(item.options) <= set(FLAGS), name
        assert {FLAGS[option] for option in item.options} <= run_flags, name
