import json

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.decomposition import PCA

from mpc_pca.cli import main
from mpc_pca.data.datasets import builtin_names, load_builtin, load_csv, load_data
from mpc_pca.data.partition import split_rows
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs


def test_run_writes_the_documented_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    code = main(
        [
            "run",
            "--protocol",
            "pppca-ss",
            "--data",
            "builtin:iris",
            "--parties",
            "3",
            "--n-components",
            "2",
            "--split",
            "random",
            "--seed",
            "7",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert {"components", "explained_variance", "mean", "report"} <= set(result)
    X = load_iris().data
    reference = PCA(2).fit(X)
    components = align_signs(np.array(result["components"]), reference.components_)
    assert np.allclose(components, reference.components_, atol=1e-6)
    assert np.allclose(result["explained_variance"], reference.explained_variance_, rtol=1e-6)
    assert set(result["report"]) == {"provider0", "provider1", "provider2", "server", "consumer"}
    assert sum(result["part_rows"]) == X.shape[0]
    printed = capsys.readouterr().out
    assert "component 1" in printed and "provider0" in printed


def test_csv_input_with_header(tmp_path):
    X = np.random.default_rng(0).normal(size=(40, 4))
    path = tmp_path / "data.csv"
    path.write_text("a,b,c,d\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in X) + "\n")
    assert np.array_equal(load_csv(path), X)
    out = tmp_path / "r.json"
    assert (
        main(["run", "--protocol", "pppca-ss", "--data", str(path), "--parties", "4", "--output", str(out)])
        == 0
    )
    assert np.allclose(json.loads(out.read_text())["mean"], X.mean(axis=0), atol=1e-6)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("1,2\n3,x\n", r"line 2, column 2 \('x1'\) is not a number: 'x'"),
        ("1,2\n3\n", r"line 2, column 2 \('x1'\) is missing"),
        ("a,b\n", "no data rows"),
        ("1,inf\n2,3\n", "non-finite value inf"),
    ],
)
def test_bad_csv_files(tmp_path, content, match):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(InputValidationError, match=match):
        load_csv(path)


def test_cli_input_errors_are_clear_and_exit_3(tmp_path, capsys):
    assert main(["run", "--protocol", "nope", "--data", "builtin:iris"]) == 3
    assert "unknown protocol 'nope'" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--n-components", "9"]) == 3
    assert "--n-components 9 is out of range" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-ss", "--data", str(tmp_path / "missing.csv")]) == 3
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--parties", "0"]) == 3
    assert "--parties 0 is out of range" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--backend", "rot13"]) == 3
    assert "unknown backend 'rot13'" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--timeout", "0"]) == 3
    assert "--timeout 0.0 is invalid" in capsys.readouterr().err
    assert main(["run", "--protocol", "pppca-he", "--data", "builtin:iris", "--backend", "additive"]) == 3
    assert "pppca-he uses the paillier backend" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--backend", "additive"], ["--frac-bits", "16"], ["--key-bits", "2048"]])
def test_options_that_do_not_apply_are_rejected(option, capsys):
    assert main(["run", "--protocol", "capepca", "--data", "builtin:iris", *option]) == 3
    assert f"{option[0]} does not apply to protocol 'capepca'" in capsys.readouterr().err


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_data_sets_load_offline(name):
    X = load_builtin(name)
    assert X.ndim == 2 and X.shape[0] > 50 and np.all(np.isfinite(X))
    assert np.array_equal(load_data(f"builtin:{name}"), X)


def test_unknown_builtin():
    with pytest.raises(InputValidationError, match="unknown built-in data set 'mnist'"):
        load_builtin("mnist")


@pytest.mark.parametrize("how", ["even", "random"])
def test_split_rows_is_a_partition(how):
    X = np.arange(60.0).reshape(20, 3)
    parts = split_rows(X, 6, how, seed=1)
    assert len(parts) == 6 and all(p.shape[0] >= 1 for p in parts)
    assert sorted(map(tuple, np.vstack(parts))) == sorted(map(tuple, X))


def test_split_rows_rejects_bad_counts():
    with pytest.raises(InputValidationError, match="between 1 and 5"):
        split_rows(np.ones((5, 2)), 6)
    with pytest.raises(InputValidationError, match="unknown split"):
        split_rows(np.ones((5, 2)), 2, "diagonal")


def test_protocol_names_are_case_insensitive(tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", "--protocol", "PPPCA-SS", "--data", "builtin:iris", "--output", str(out)]) == 0
    assert json.loads(out.read_text())["protocol"] == "pppca-ss"  # the registry's spelling


@pytest.mark.parametrize(("typo", "meant"), [("pppca-sss", "pppca-ss"), ("Capepac", "capepca")])
def test_a_protocol_typo_gets_did_you_mean_and_exit_3(typo, meant, capsys):
    assert main(["run", "--protocol", typo, "--data", "builtin:iris"]) == 3
    err = capsys.readouterr().err
    assert f"unknown protocol {typo!r}; did you mean {meant!r}? choose one of [" in err
    assert "Traceback" not in err


def test_a_far_protocol_name_gets_no_suggestion(capsys):
    assert main(["run", "--protocol", "nope", "--data", "builtin:iris"]) == 3
    err = capsys.readouterr().err
    assert "unknown protocol 'nope'; choose one of [" in err and "did you mean" not in err
