"""DP that says when it is not private: one ``PrivacyLeakWarning`` per cause, once; the CLI's formatted lines and
its JSON ``private`` field; ``--noise-seed`` apart from the split's ``--seed`` (issue 25)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from mpc_pca.cli import build_parser, main
from mpc_pca.cli.party import party_command
from mpc_pca.dp.baselines import AnalyzeGaussPCA
from mpc_pca.dp.mechanisms import RetractedMechanismWarning
from mpc_pca.dp.preprocessing import bound_rows, center_and_scale_non_private
from mpc_pca.pppca.dp_estimator import PPPCADP
from mpc_pca.row_norms import CLIP_SHARE_LIMIT
from mpc_pca.validation import PrivacyLeakWarning, RowsClippedWarning
from protocols.errors import InputValidationError


def unit_parts(n: int = 300, seed: int = 0) -> list[np.ndarray]:
    """Two sites' rows, every norm below 1 (nothing is clipped)."""
    X = np.random.default_rng(seed).normal(size=(n, 5))
    X /= 1.01 * np.linalg.norm(X, axis=1).max()
    return [X[: n // 2], X[n // 2 :]]


def leaks(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]


def test_a_private_default_fit_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        AnalyzeGaussPCA(2).fit(unit_parts())
        PPPCADP(2).fit(unit_parts())


@pytest.mark.parametrize(
    ("params", "cause"),
    [
        ({"random_state": 3}, "a fixed noise seed (3)"),
        ({"delta": 0.01}, "delta=0.01 >= 1/n = 1/300"),
        ({"epsilon": math.inf}, "epsilon=inf: no noise is added"),
    ],
)
@pytest.mark.parametrize("estimator", [AnalyzeGaussPCA, PPPCADP])
def test_each_cause_warns_once_per_fit_and_names_the_value(estimator, params, cause):
    found = leaks(lambda: estimator(2, **params).fit(unit_parts()))
    assert len(found) == 1 and found[0].startswith(cause) and "NOT private" in found[0]


def test_delta_below_one_over_n_is_private():
    assert leaks(lambda: AnalyzeGaussPCA(2, delta=1 / 301).fit(unit_parts())) == []


def test_pooled_scaling_and_the_retracted_mechanism_are_privacy_leaks():
    found = leaks(lambda: center_and_scale_non_private(np.vstack(unit_parts())))
    assert len(found) == 1 and "row_norm='scale'" in found[0] and "NOT private" in found[0]
    assert issubclass(RetractedMechanismWarning, PrivacyLeakWarning)


@pytest.mark.parametrize(("clipped", "hint"), [(5, False), (15, True)])
def test_clipping_more_than_the_share_says_so_in_its_one_warning(clipped, hint):
    part = unit_parts(200)[0]  # 100 rows
    part[:clipped] *= 10
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bound_rows([part], "clip")
    assert [w.category for w in caught] == [RowsClippedWarning]  # one warning for the one cause
    message = str(caught[0].message)
    assert f"site 0: {clipped} of 100 rows had norm > 1" in message
    assert (f"more than {100 * CLIP_SHARE_LIMIT:.0f}%" in message) is hint
    assert ("row_norm='error'" in message) is hint


def write_unit_csv(path, seed: int = 0):
    X = np.vstack(unit_parts(seed=seed))
    path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in X) + "\n")
    return str(path)


def test_cli_private_default_run_prints_no_warning_and_says_private(tmp_path, capsys):
    out = tmp_path / "r.json"
    data = write_unit_csv(tmp_path / "unit.csv")
    assert main(["run", "--protocol", "capepca", "--data", data, "--no-header", "--output", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["private"] is True and result["privacy_leaks"] == []


def test_cli_prints_each_cause_once_formatted_and_records_it(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["run", "--protocol", "capepca", "--data", "builtin:wine", "--parties", "3", "--output", str(out)]
    argv += ["--row-norm", "scale", "--noise-seed", "5", "--delta", "0.5"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line and not line.startswith("mpc-pca: progress:")]
    causes = ["--row-norm scale", "a fixed noise seed (5)", "--delta 0.5 >= 1/n = 1/178"]
    assert len(lines) == len(causes)  # one line per cause, though three sites fit
    for cause in causes:
        assert sum(cause in line for line in lines) == 1
    assert all(line.startswith("mpc-pca: warning: ") and "NOT private" in line for line in lines)
    assert "Warning:" not in captured.err and ".py:" not in captured.err  # no Python source lines
    result = json.loads(out.read_text())
    assert result["private"] is False
    assert [sum(cause in r for r in result["privacy_leaks"]) for cause in causes] == [1, 1, 1]
    assert "NOT private" in captured.out  # the summary's privacy line


def test_cli_pooled_is_labelled_not_private(tmp_path):
    out = tmp_path / "r.json"
    data = write_unit_csv(tmp_path / "unit.csv")
    assert main(["run", "--protocol", "pooled", "--data", data, "--no-header", "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["private"] is False and "adds no noise" in result["privacy_leaks"][0]


def components(tmp_path, *extra: str) -> np.ndarray:
    out = tmp_path / "r.json"
    argv = ["run", "--protocol", "ag", "--data", "builtin:iris", "--split", "random", "--output", str(out)]
    assert main([*argv, "--force", *extra]) == 0
    return np.array(json.loads(out.read_text())["components"])


def test_the_split_seed_no_longer_fixes_the_noise(tmp_path):
    assert not np.array_equal(components(tmp_path, "--seed", "7"), components(tmp_path, "--seed", "7"))
    seeded = components(tmp_path, "--seed", "7", "--noise-seed", "1")
    assert np.array_equal(seeded, components(tmp_path, "--seed", "7", "--noise-seed", "1"))


def test_noise_seed_is_refused_where_there_is_no_noise(capsys):
    assert main(["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--noise-seed", "1"]) == 3
    assert "--noise-seed does not apply to protocol 'pppca-ss'" in capsys.readouterr().err


def test_party_seed_is_a_deprecated_alias_of_noise_seed(capsys):
    env = {"RANK": "3", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    args = build_parser().parse_args(["party", "--protocol", "capepca", "--seed", "4"])
    # the party says it is not private, then stops at its credentials: past the seed handling
    with (
        pytest.warns(PrivacyLeakWarning, match=r"a fixed noise seed \(4\)"),
        pytest.raises(InputValidationError, match="no TLS credentials"),
    ):
        party_command(args, env)
    assert args.noise_seed == 4
    assert "mpc-pca: warning: party --seed is deprecated; use --noise-seed" in capsys.readouterr().err
    both = build_parser().parse_args(["party", "--protocol", "capepca", "--seed", "4", "--noise-seed", "5"])
    with pytest.raises(InputValidationError, match="--seed 4 and --noise-seed 5 differ"):
        party_command(both, env)


def test_the_cli_prints_a_repeated_warning_once(capsys):
    from mpc_pca.cli.options import warnings_once

    with warnings_once() as found:
        for _ in range(3):  # e.g. a cause met by every site, or by a fit and a check
            warnings.warn("a fixed noise seed (1) ... NOT private", PrivacyLeakWarning, stacklevel=1)
            warnings.warn("site 0: 3 of 9 rows had norm > 1", RowsClippedWarning, stacklevel=1)
    assert capsys.readouterr().err.splitlines() == [
        "mpc-pca: warning: a fixed noise seed (1) ... NOT private",
        "mpc-pca: warning: site 0: 3 of 9 rows had norm > 1",
    ]
    assert found == ["a fixed noise seed (1) ... NOT private"]  # only the privacy causes


def test_the_harness_metric_does_not_warn_of_clipping_again():
    """``captured_energy_ratio`` is the harness's: the sites already warned of their clipped rows."""
    from types import SimpleNamespace

    from mpc_pca.cli.dp import centred_energy_ratio, second_moment_energy_ratio

    parts = [part * 10 for part in unit_parts()]  # every row clipped
    model = SimpleNamespace(components_=np.eye(5)[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0 < second_moment_energy_ratio(model, parts) <= 1
        assert 0 < centred_energy_ratio(model, parts) <= 1 + 1e-12
