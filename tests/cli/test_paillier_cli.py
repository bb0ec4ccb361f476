"""Fast Paillier from the command line and the deploy floor: --paillier-randomness and --paillier-workers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.deploy import run_threads
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.registry import entry
from protocols.backends import FULL_EXPONENT_SLACK, PAILLIER_RANDOMNESS, paillier_options
from protocols.errors import InputValidationError


@pytest.mark.parametrize(
    ("mode", "precompute", "offline", "exponent_bits"),
    [
        ("fixed-base", True, False, 2048 + FULL_EXPONENT_SLACK),
        ("fixed-base-short", True, False, None),
        ("offline", False, True, None),
        ("standard", False, False, None),
    ],
)
def test_each_mode_builds_the_backend_it_names(mode, precompute, offline, exponent_bits):
    backend = PPPCADeployment("pppca-he").backend(
        {"backend": "paillier", "paillier_randomness": mode, "paillier_workers": 1}
    )
    assert (backend.precompute, backend.offline, backend.exponent_bits, backend.workers) == (
        precompute,
        offline,
        exponent_bits,
        1,
    )


def test_the_default_is_fixed_base_with_full_length_exponents():
    """Fast by default, without the short-exponent assumption: log2(n) + 128 bits for a 3072-bit key too."""
    backend = PPPCADeployment("pppca-he").backend({"backend": "paillier", "key_bits": 3072})
    assert backend.precompute and backend.exponent_bits == 3072 + FULL_EXPONENT_SLACK
    assert entry("pppca-he").settings()["paillier_randomness"] is None  # resolved by the backend options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"paillier_randomness": "fast"}, "paillier_randomness='fast' is not one of"),
        ({"paillier_workers": 0}, "paillier_workers must be an integer from 1 to 1024, got 0"),
        ({"paillier_workers": True}, "got True"),
    ],
)
def test_invalid_values_are_refused_naming_value_and_limit(options, message):
    with pytest.raises(InputValidationError, match=message):
        PPPCADeployment("pppca-he").check_settings({"backend": "paillier", **options})


def test_paillier_options_with_another_backend_are_refused():
    with pytest.raises(
        InputValidationError, match=r"settings \['paillier_randomness'\] are for the paillier backend"
    ):
        PPPCADeployment("pppca-ss").check_settings({"backend": "additive", "paillier_randomness": "standard"})
    assert paillier_options() == paillier_options("fixed-base")
    assert set(PAILLIER_RANDOMNESS) == {"fixed-base", "fixed-base-short", "offline", "standard"}


def test_the_run_command_refuses_them_for_secret_sharing_and_bad_values(capsys):
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:wine", "--paillier-randomness", "standard"]
    assert main(argv) == 3
    assert (
        "--paillier-randomness applies to the paillier backend, not --backend additive"
        in capsys.readouterr().err
    )
    assert main(["run", "--protocol", "pppca-he", "--data", "builtin:wine", "--paillier-workers", "-2"]) == 3
    assert "--paillier-workers must be an integer from 1 to 1024, got -2" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["run", "--protocol", "pppca-he", "--data", "builtin:wine", "--paillier-randomness", "quick"])
    assert exc.value.code == 2
    assert main(["run", "--protocol", "capepca", "--data", "builtin:wine", "--paillier-workers", "2"]) == 3
    assert "--paillier-workers does not apply to protocol 'capepca'" in capsys.readouterr().err


def test_the_party_command_accepts_them():
    from mpc_pca.cli.app import build_parser

    args = build_parser().parse_args(
        ["party", "--protocol", "pppca-he", "--rank", "0", "--world-size", "4", "--master", "127.0.0.1:9",
         "--paillier-randomness", "offline", "--paillier-workers", "2"]
    )  # fmt: skip
    assert (args.paillier_randomness, args.paillier_workers) == ("offline", 2)


def test_pppca_he_with_fast_randomness_gives_the_secret_sharing_result(tmp_path):
    """Every randomness encrypts the same ring sums: the model is bit for bit that of PPPCA-SS."""
    results = {}
    for name, extra in (
        ("ss", ["--protocol", "pppca-ss"]),
        ("he", ["--protocol", "pppca-he"]),
        (
            "he-offline",
            ["--protocol", "pppca-he", "--paillier-randomness", "offline", "--paillier-workers", "1"],
        ),
    ):
        out = tmp_path / f"{name}.json"
        assert main(["run", *extra, "--data", "builtin:wine", "--parties", "3", "--output", str(out)]) == 0
        results[name] = json.loads(out.read_text())
    for name in ("he", "he-offline"):
        assert results[name]["backend"] == "paillier"
        for key in ("components", "explained_variance", "mean"):
            np.testing.assert_array_equal(results[name][key], results["ss"][key])


def test_the_floor_hands_each_party_its_own_randomness_setting():
    rng = np.random.default_rng(2)
    parts = [rng.normal(size=(30, 4)) for _ in range(2)]
    seen = []

    class Recording(PPPCADeployment):
        def backend(self, settings):
            made = super().backend(settings)
            seen.append((made.precompute, made.offline, made.workers))
            return made

    run_threads(
        "pppca-he",
        parts,
        {"n_components": 2, "paillier_randomness": "offline", "paillier_workers": 1},
        deployment=Recording("pppca-he"),
    )
    assert seen and set(seen) == {(False, True, 1)}
