"""``--svd-solver`` on ``mpc-pca run`` and ``party``: which PPPCA protocol runs, and what is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.party import party_command
from mpc_pca.cli.wide import solver_protocol
from protocols.errors import InputValidationError
from tests.wide.helpers import gapped_rows, reference


def test_run_with_svd_solver_randomized_runs_pppca_randomized_in_process(tmp_path):
    rows = gapped_rows(150, 40, seed=2)
    data = tmp_path / "rows.csv"
    np.savetxt(data, rows, delimiter=",", fmt="%.17g")
    out = tmp_path / "result.json"
    argv = ["run", "--protocol", "pppca-ss", "--svd-solver", "randomized", "--data", str(data), "--no-header",
            "--parties", "3", "--n-components", "4", "--start-seed", "9", "--iterated-power", "5",
            "--n-oversamples", "3", "--output", str(out)]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["protocol"] == "pppca-randomized" and result["iterates"] == "server"
    assert set(result["report"]) == {"provider0", "provider1", "provider2", "server"}
    ref = reference([rows], 4, seed=9, iterated_power=5, n_oversamples=3)
    assert result["solver"]["n_products"] == 6 and result["solver"]["block_size"] == 7
    assert np.max(np.abs(np.asarray(result["components"]) - ref.components)) <= 1e-10
    assert np.allclose(result["explained_variance"], ref.eigenvalues, rtol=1e-10, atol=0)
    # the exact path by name is today's pppca-ss, whose flags are its own
    assert main([*argv[:4], "full", *argv[5:]]) == 3  # --start-seed does not apply to pppca-ss
    exact_out = tmp_path / "exact.json"
    assert main([*argv[:4], "full", *argv[5:12], "--output", str(exact_out)]) == 0
    exact = json.loads(exact_out.read_text())
    assert exact["protocol"] == "pppca-ss" and "consumer" in exact["report"]
    assert np.allclose(exact["explained_variance"], ref.eigenvalues, rtol=1e-3)


@pytest.mark.parametrize(
    ("protocol", "solver", "expected"),
    [
        ("pppca-ss", None, "pppca-ss"),
        ("pppca-ss", "auto", "pppca-ss"),
        ("PPPCA-SS", "randomized", "pppca-randomized"),
        ("pppca-randomized", "randomized", "pppca-randomized"),
        ("pppca-ss", "covariance_eigh", "pppca-ss"),
        ("pppca-he", "full", "pppca-he"),
        ("ag", None, "ag"),
    ],
)
def test_the_protocol_each_solver_runs(protocol, solver, expected):
    assert solver_protocol(protocol, solver) == expected


@pytest.mark.parametrize(
    ("protocol", "solver", "message"),
    [
        ("pppca-he", "randomized", "--svd-solver randomized runs pppca-randomized.*not --protocol pppca-he"),
        ("ag", "randomized", "not --protocol ag"),
        (
            "pppca-randomized",
            "full",
            "--svd-solver full is the exact covariance path.*--svd-solver randomized",
        ),
        ("capepca", "covariance_eigh", "not --protocol capepca"),
    ],
)
def test_a_solver_the_protocol_cannot_run_is_refused_naming_both(protocol, solver, message, capsys):
    assert main(["run", "--protocol", protocol, "--svd-solver", solver, "--data", "builtin:iris"]) == 3
    with pytest.raises(InputValidationError, match=message):
        solver_protocol(protocol, solver)
    assert "--svd-solver" in capsys.readouterr().err


def test_a_consumer_party_of_the_randomized_solver_is_refused_before_any_link():
    args = build_parser().parse_args(
        ["party", "--protocol", "pppca-ss", "--svd-solver", "randomized", "--role", "consumer"]
    )
    with pytest.raises(InputValidationError, match=r"pppca-randomized has no consumer.*own rows' PC scores"):
        party_command(args, {"RANK": "4", "WORLD_SIZE": "5"})


def test_the_flag_offers_scikit_learns_choices_less_arpack():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--protocol", "pppca-ss", "--svd-solver", "arpack", "--data", "x"])
