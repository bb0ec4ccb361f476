"""The data scientist's workflow on the command line (issue 10): three hospitals, three files."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

import mpc_pca.threads as threads_module
from mpc_pca.cli import main
from mpc_pca.cli.options import EXIT_INPUT, EXIT_USAGE
from tests.helpers.oracles import align_signs


@pytest.fixture
def hospitals(tmp_path):
    """breast_cancer rows in three CSV files; hospital 1 stores its columns in reverse order."""
    frame = load_breast_cancer(as_frame=True).frame.drop(columns="target")
    order = np.random.default_rng(0).permutation(len(frame))
    files, blocks = [], []
    for i, rows in enumerate(np.array_split(order, 3)):
        block = frame.iloc[rows]
        blocks.append(block.to_numpy())
        stored = block[block.columns[::-1]] if i == 1 else block
        path = tmp_path / f"hospital{i}.csv"
        stored.to_csv(path, index=False, float_format="%.17g")
        files.append(str(path))
    return files, np.vstack(blocks), list(frame.columns)


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("standardize", [False, True])
def test_three_hospitals_three_files_equal_sklearn_on_the_pooled_rows(
    tmp_path, hospitals, capsys, standardize
):
    files, X, names = hospitals
    out, proj = tmp_path / "result.json", tmp_path / "proj.csv"
    argv = ["run", "--protocol", "pppca-ss", "--data", *files, "--n-components", "3"]
    argv += ["--output", str(out), "--transform-output", str(proj)] + (
        ["--standardize"] if standardize else []
    )
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert "hospital1.csv: columns reordered by name" in err
    result = json.loads(out.read_text())
    assert result["feature_names"] == names and result["parties"] == 3
    pooled = StandardScaler().fit_transform(X) if standardize else X
    reference = PCA(3, svd_solver="full").fit(pooled)
    components = np.asarray(result["components"])
    assert np.max(np.abs(components - reference.components_)) < 1e-6  # same sign convention
    rel = np.abs(np.asarray(result["explained_variance"]) / reference.explained_variance_ - 1)
    assert np.max(rel) < 1e-6
    projected = pd.read_csv(proj)
    assert list(projected.columns) == ["provider", "source", "pc1", "pc2", "pc3"]
    assert projected["provider"].tolist() == [
        f"provider{i}" for i in range(3) for _ in range(len(X) // 3 + (i < len(X) % 3))
    ]
    expected = reference.transform(pooled)
    assert np.max(np.abs(projected[["pc1", "pc2", "pc3"]].to_numpy() - expected)) < 1e-6 * np.max(
        np.abs(expected)
    )


def test_without_alignment_the_reversed_hospital_would_be_wrong(hospitals):
    """The test above would catch a reader that ignored the names: mixing columns moves the result."""
    files, X, _ = hospitals
    mixed = pd.read_csv(files[1]).to_numpy()
    n0 = pd.read_csv(files[0]).shape[0]
    wrong = np.vstack([X[:n0], mixed, X[n0 + mixed.shape[0] :]])
    assert (
        np.max(
            np.abs(
                align_signs(PCA(3).fit(wrong).components_, PCA(3).fit(X).components_)
                - PCA(3).fit(X).components_
            )
        )
        > 0.1
    )


def test_repeating_data_is_a_usage_error(hospitals, capsys):
    files, _, _ = hospitals
    with pytest.raises(SystemExit) as info:
        main(["run", "--protocol", "pppca-ss", "--data", files[0], "--data", files[1]])
    assert info.value.code == EXIT_USAGE
    assert "--data given twice; list every file after one --data" in capsys.readouterr().err


def test_different_column_names_are_refused_before_the_run(tmp_path, hospitals, capsys, monkeypatch):
    files, _, _ = hospitals
    frame = pd.read_csv(files[2]).rename(columns={"mean radius": "radius (mean)"})
    frame.to_csv(files[2], index=False)
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    code, _, err = run(["run", "--protocol", "pppca-ss", "--data", *files], capsys)
    assert code == EXIT_INPUT
    assert "hospital2.csv has different column names than" in err
    assert "missing ['mean radius'], unexpected ['radius (mean)']" in err


def test_output_is_checked_before_any_party_starts(tmp_path, hospitals, capsys, monkeypatch):
    files, _, _ = hospitals
    monkeypatch.setattr(threads_module, "run_inprocess", lambda *a, **k: pytest.fail("the protocol started"))
    base = ["run", "--protocol", "pppca-ss", "--data", *files]
    before = [Path(f).read_text() for f in files]
    cases = [
        (["--output", files[1]], "is one of the input files"),
        (["--output", str(tmp_path / "no" / "such" / "dir.json")], "does not exist"),
        (["--output", str(tmp_path)], "is a directory"),
        (["--output", files[0], "--force"], "is one of the input files"),
        (
            ["--transform-output", str(tmp_path / "r.json"), "--output", str(tmp_path / "r.json")],
            "is also another output",
        ),
    ]
    for extra, match in cases:
        code, _, err = run(base + extra, capsys)
        assert code == EXIT_INPUT and match in err, (extra, err)
    assert [Path(f).read_text() for f in files] == before  # nothing overwritten


def test_existing_output_needs_force_and_is_replaced_atomically(tmp_path, capsys):
    out = tmp_path / "r.json"
    out.write_text("keep me")
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--output", str(out)]
    code, _, err = run(argv, capsys)
    assert code == EXIT_INPUT and "exists; pass --force to overwrite it" in err
    assert out.read_text() == "keep me"
    code, _, _ = run([*argv, "--force"], capsys)
    assert code == 0 and json.loads(out.read_text())["feature_names"][0] == "sepal length (cm)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file left


@pytest.mark.parametrize(
    ("protocol", "option", "flag"),
    [
        ("pppca-ss", ["--epsilon", "1"], "--epsilon"),
        ("pppca-he", ["--delta", "0.1"], "--delta"),
        ("pppca-ss", ["--cape-calibration", "paper"], "--cape-calibration"),
        ("ag", ["--standardize"], "--standardize"),
        ("ag", ["--frac-bits", "20"], "--frac-bits"),
        ("capepca", ["--transform-output", "p.csv"], "--transform-output"),
        ("pooled", ["--epsilon", "2"], "--epsilon"),
        ("dispca-full", ["--intermediate-dim", "3"], "--intermediate-dim"),
    ],
)
def test_options_a_protocol_does_not_use_are_refused(protocol, option, flag, capsys):
    code, _, err = run(["run", "--protocol", protocol, "--data", "builtin:iris", *option], capsys)
    assert code == EXIT_INPUT
    assert f"{flag} does not apply to protocol {protocol!r}" in err


def test_version_module_entry_point_and_exit_codes_in_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("mpc-pca ")
    done = subprocess.run(
        [sys.executable, "-m", "mpc_pca", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert (
        "2 usage error" in done.stdout
        and "3 input error" in done.stdout
        and "4 protocol failure" in done.stdout
    )


def test_plot_writes_a_png(tmp_path, hospitals, capsys):
    files, _, _ = hospitals
    out, proj, fig = tmp_path / "r.json", tmp_path / "p.csv", tmp_path / "fig.png"
    argv = ["run", "--protocol", "pppca-ss", "--data", *files, "--standardize"]
    assert main([*argv, "--output", str(out), "--transform-output", str(proj)]) == 0
    assert main(["plot", str(out), "--projection", str(proj), "--out", str(fig)]) == 0
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["plot", str(out), "--out", str(fig)]) == EXIT_INPUT
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["plot", str(proj), "--out", str(tmp_path / "g.png")]) == EXIT_INPUT
    assert "is not a JSON result" in capsys.readouterr().err


def test_gzip_latin1_semicolon_file_with_missing_cells(tmp_path, capsys):
    import gzip

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    lines = ["âge;poids;taille"] + [";".join(repr(float(v)) for v in row) for row in X]
    lines[5] = "1.0;;2.0"
    path = tmp_path / "site.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("latin-1")))
    out = tmp_path / "r.json"
    argv = ["run", "--protocol", "pppca-ss", "--data", str(path), "--output", str(out)]
    code, _, err = run(argv, capsys)
    assert code == EXIT_INPUT and "not valid utf-8" in err and "--encoding latin-1" in err
    code, _, err = run([*argv, "--encoding", "latin-1"], capsys)
    assert code == EXIT_INPUT and "line 6, column 2 ('poids') is missing" in err
    code, _, err = run([*argv, "--encoding", "latin-1", "--drop-na", "--columns", "taille,âge"], capsys)
    assert code == 0, err
    assert "dropped 1 row(s)" in err
    result = json.loads(out.read_text())
    assert result["feature_names"] == ["taille", "âge"] and result["n_samples"] == 39
