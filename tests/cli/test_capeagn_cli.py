"""``mpc-pca run --protocol capeagn`` and the ``synthetic:`` data specs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.data.datasets import load_data
from mpc_pca.data.latent import make_topic_model
from mpc_pca.dp.recovery import recovery_error
from protocols.errors import InputValidationError


def test_capeagn_cli_writes_components_weights_privacy_and_report(tmp_path, capsys):
    out = tmp_path / "agn.json"
    argv = ["run", "--protocol", "capeagn", "--data", "synthetic:stm:20000:3", "--parties", "4"]
    argv += ["--n-components", "3", "--epsilon", "4", "--delta", "1e-6", "--seed", "2", "--output", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert np.asarray(result["components"]).shape == (3, 30)
    assert sum(result["weights"]) == pytest.approx(1.0)
    assert result["epsilon"] == 4.0 and result["delta"] == 1e-6 and result["model"] == "stm"
    assert set(result["report"]) == {
        "provider0",
        "provider1",
        "provider2",
        "provider3",
        "aggregator",
        "noise-generator",
    }
    truth = make_topic_model(20000, n_words=30, n_topics=3, rng=np.random.default_rng(3))
    err = recovery_error(
        truth.components, truth.weights, np.asarray(result["components"]), np.asarray(result["weights"])
    )
    assert err.component_error < 0.1
    assert "weights:" in capsys.readouterr().out


def test_capeagn_cli_mog_and_option_errors(capsys):
    base = [
        "run",
        "--protocol",
        "capeagn",
        "--data",
        "synthetic:mog:3000",
        "--n-components",
        "3",
        "--seed",
        "0",
    ]
    assert main([*base, "--model", "mog", "--sigma", "0.08"]) == 0
    assert main([*base, "--model", "mog"]) == 3
    assert "--model mog needs sigma" in capsys.readouterr().err
    assert main(["run", "--protocol", "capepca", "--data", "builtin:iris", "--model", "mog"]) == 3
    assert "--model does not apply to protocol 'capepca'" in capsys.readouterr().err
    assert main([*base, "--budget-split", "1.5", "--model", "mog", "--sigma", "0.08"]) == 3
    assert "--budget-split 1.5 must lie strictly between 0 and 1" in capsys.readouterr().err


def test_synthetic_specs():
    counts = load_data("synthetic:stm:50:4")
    assert counts.shape == (50, 30) and np.all(counts.sum(axis=1) == 10)
    assert np.array_equal(counts, load_data("synthetic:stm:50:4"))
    with pytest.raises(InputValidationError, match="synthetic:lda"):
        load_data("synthetic:lda")


def test_docs_capeagn_example_prints_what_it_claims(capsys):
    """The capeAGN how-to's example (``docs/howto/capeagn.md``) prints the line its last comment claims."""
    from tests.helpers.markdown_blocks import DOCS, block

    example = block(DOCS / "howto" / "capeagn.md", ordinal=0, lang="python")
    assert "CapeAGN" in example.text
    namespace: dict = {}
    exec(compile(example.text, example.where, "exec"), namespace)
    claimed = example.text.strip().splitlines()[-1].split("#", 1)[1].strip()
    assert capsys.readouterr().out.strip() == claimed
    assert namespace["model"].effective_epsilon_ == 1.0
