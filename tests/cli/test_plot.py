"""``mpc-pca plot``: the files it reads (run's CSV, party's JSON) and what its axes say."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.cli.options import EXIT_INPUT

pytest.importorskip("matplotlib")


def model(path, variance=(3.0, 2.0, 1.0), ratio=(0.5, 0.3, 0.1)):
    path.write_text(
        json.dumps(
            {
                "protocol": "pppca-ss",
                "explained_variance": list(variance),
                "explained_variance_ratio": list(ratio),
            }
        )
    )
    return path


def table(rows_per_provider=(3, 2), k=3):
    rng = np.random.default_rng(0)
    data = [
        [f"provider{p}", i, *rng.normal(size=k).tolist()]
        for p, n in enumerate(rows_per_provider)
        for i in range(n)
    ]
    return {"columns": ["provider", "row", *(f"PC{j + 1}" for j in range(k))], "data": data}


def test_plot_reads_the_consumer_table_of_mpc_pca_party(tmp_path, capsys):
    projection = tmp_path / "projection.json"
    projection.write_text(json.dumps({"party": "consumer", "projection": table()}))
    fig = tmp_path / "fig.png"
    assert (
        main(["plot", str(model(tmp_path / "m.json")), "--projection", str(projection), "--out", str(fig)])
        == 0
    )
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_reads_an_older_bare_list_projection_as_one_group(tmp_path):
    from mpc_pca.cli.plot import _load_projection

    projection = tmp_path / "projection.json"
    projection.write_text(json.dumps({"projection": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}))
    labels, points = _load_projection(projection)
    assert labels == ["rows (no provider labels in this file)"] * 2
    np.testing.assert_array_equal(points, [[1.0, 2.0], [4.0, 5.0]])


def test_plot_refuses_a_projection_json_it_cannot_read_naming_what_is_missing(tmp_path, capsys):
    m = model(tmp_path / "m.json")
    bad = tmp_path / "bad.json"
    for document, expected in [
        ({"components": []}, "has no 'projection'"),
        ({"projection": {"rows": []}}, "needs 'columns'"),
        ({"projection": table(k=1)}, "holds 1 component(s) per row"),
        ({"projection": [1.0, 2.0]}, "must form a 2-D array"),
    ]:
        bad.write_text(json.dumps(document))
        assert (
            main(["plot", str(m), "--projection", str(bad), "--out", str(tmp_path / "f.png")]) == EXIT_INPUT
        )
        assert expected in capsys.readouterr().err, document


def test_a_pppca_scree_is_a_share_of_the_total_variance_and_the_axes_say_how_much(tmp_path):
    from mpc_pca.cli.plot import _load_projection, draw

    projection = tmp_path / "projection.json"
    projection.write_text(json.dumps({"projection": table()}))
    result = {
        "protocol": "pppca-ss",
        "explained_variance": [3.0, 2.0, 1.0],
        "explained_variance_ratio": [0.5, 0.3, 0.1],
    }
    fig = draw(result, _load_projection(projection))
    scree, rows = fig.axes[:2]
    assert scree.get_ylabel() == "% of the total variance"
    np.testing.assert_allclose([b.get_height() for b in scree.patches], [50.0, 30.0, 10.0])
    np.testing.assert_allclose(scree.lines[0].get_ydata(), [50.0, 80.0, 90.0])  # stops short of 100 %
    assert rows.get_xlabel() == "PC1 (50.0 % of total variance)"
    assert rows.get_ylabel() == "PC2 (30.0 % of total variance)"


def test_a_dp_scree_without_the_total_is_labelled_as_a_share_of_the_released_components():
    from mpc_pca.cli.plot import draw, variance_shares

    result = {"protocol": "capepca", "explained_variance": [6.0, None, 2.0]}
    shares, of_total = variance_shares(result)
    assert not of_total
    np.testing.assert_allclose(shares, [0.75, np.nan, 0.25])
    labels, points = ["provider0"] * 3, np.zeros((3, 2))
    fig = draw(result, (labels, points))
    scree, rows = fig.axes[:2]
    assert scree.get_ylabel() == "% of the 3 released components' variance"
    assert "total variance not released" in scree.get_title()
    assert rows.get_xlabel() == "PC1 (75.0 % of variance of the 3 released)"
    assert rows.get_ylabel() == "PC2"  # its variance was not released
