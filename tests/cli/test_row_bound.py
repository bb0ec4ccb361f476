"""``--row-bound B`` (each site divides its rows by a public bound) and the privacy lines of a DP summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.party import party_command
from mpc_pca.cli.privacy import privacy_fields, privacy_summary
from mpc_pca.registry import entry
from protocols.errors import InputValidationError


def _rows(tmp_path, scale: float) -> list[str]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4)) * np.array([3.0, 2.0, 1.0, 0.5])
    X *= 0.9 / np.linalg.norm(X, axis=1).max()
    files = []
    for i, part in enumerate(np.array_split(X * scale, 2)):
        path = tmp_path / f"s{scale:g}-{i}.csv"
        np.savetxt(path, part, fmt="%.17g", delimiter=",")
        files.append(str(path))
    return files


def test_row_bound_divides_every_site_s_rows_by_the_bound(tmp_path, capsys):
    """Rows 40 times too long with --row-bound 40 give the release of the rows themselves (same noise seed)."""
    base = ["run", "--protocol", "ag", "--no-header", "--noise-seed", "5", "--row-norm", "error"]
    outputs = {}
    for scale, extra in ((1.0, []), (40.0, ["--row-bound", "40"])):
        out = tmp_path / f"{scale:g}.json"
        assert main([*base, "--data", *_rows(tmp_path, scale), *extra, "--output", str(out)]) == 0
        outputs[scale] = json.loads(out.read_text())
    assert np.allclose(outputs[40.0]["components"], outputs[1.0]["components"], atol=1e-12)
    assert outputs[40.0]["row_bound"] == 40.0 and "row_bound" not in outputs[1.0]
    assert "clipped" not in capsys.readouterr().err
    # without the bound, --row-norm error refuses the long rows: the division is what made them fit
    assert main([*base, "--data", *_rows(tmp_path, 40.0)]) == 3
    assert "has Euclidean norm" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--protocol", "ag", "--row-bound", "0"], r"--row-bound 0\.0 must be a positive finite number"),
        (["--protocol", "ag", "--row-bound", "-2"], r"--row-bound -2\.0 must be a positive finite number"),
        (["--protocol", "ag", "--row-bound", "inf"], r"--row-bound inf must be a positive finite number"),
        (["--protocol", "ag", "--row-bound", "nan"], r"--row-bound nan must be a positive finite number"),
        (["--protocol", "pppca-ss", "--row-bound", "2"], "--row-bound does not apply to protocol 'pppca-ss'"),
        (["--protocol", "capeagn", "--row-bound", "2"], "--row-bound does not apply to capeagn"),
        (["--protocol", "ag", "--row-bound", "2", "--row-norm", "scale"], "--row-bound and --row-norm scale"),
    ],
)
def test_row_bound_is_refused_with_its_value_before_any_party_starts(argv, message, capsys):
    assert main(["run", "--data", "builtin:iris", *argv]) == 3
    assert message.replace("\\", "") in capsys.readouterr().err.replace("\\", "")
    # the same check in a party, before it opens any link (nothing listens at port 1)
    party = ["party", "--rank", "0", "--world-size", "5", "--master", "127.0.0.1:1", "--insecure", *argv]
    with pytest.raises(InputValidationError, match=message):
        party_command(build_parser().parse_args(party), {})


def test_privacy_fields_name_every_cause_and_a_protocol_without_noise():
    assert privacy_fields(entry("capepca"), []) == {"private": True, "privacy_leaks": []}
    assert privacy_fields(entry("capepca"), ["a fixed noise seed (1) ..."]) == {
        "private": False,
        "privacy_leaks": ["a fixed noise seed (1) ..."],
    }
    assert privacy_fields(entry("pooled"), [])["private"] is False


def test_the_summary_names_the_guarantees_that_exceed_epsilon():
    base = {"epsilon": 1.0, "delta": 1e-5, "private": True}
    assert privacy_summary({**base, "effective_epsilon": 1.0}) == ["privacy: epsilon=1.0, delta=1e-05"]
    paper = privacy_summary({**base, "effective_epsilon": 1.3247, "calibration": "paper"})
    assert len(paper) == 2 and "joint view of all releases: 1.325 (calibration paper" in paper[1]
    colluders = privacy_summary({**base, "epsilon_by_colluders": [1.0, 1.0, 1.4547, float("inf")]})
    assert colluders[1].startswith(
        "  epsilon against the server colluding with c = 0..3 providers: 1, 1, 1.455, inf"
    )
    assert privacy_summary({**base, "epsilon_by_colluders": [1.0, 1.0]}) == [
        "privacy: epsilon=1.0, delta=1e-05"
    ]
