"""Issue 35: capeAGN options that the chosen model would ignore are refused, not dropped silently."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.data.latent import make_topic_model
from mpc_pca.dp import CapeAGN
from mpc_pca.dp.capeagn_deploy import agn_view
from protocols.errors import InputValidationError

STM = ["run", "--protocol", "capeagn", "--data", "synthetic:stm:2000:3", "--n-components", "3"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            ["--model", "stm", "--sigma", "0.1"],
            "--sigma 0.1 applies to the mixture-of-Gaussians model (--model mog) only",
        ),
        (["--sigma", "0.1"], "--sigma 0.1 applies to the mixture-of-Gaussians model (--model mog) only"),
        (["--row-norm", "error"], "--row-norm error applies to --model mog only"),
    ],
)
def test_an_option_stm_ignores_exits_3_in_one_line(capsys, extra, expected):
    assert main([*STM, *extra]) == 3
    err = "".join(
        line for line in capsys.readouterr().err.splitlines(True) if not line.startswith("mpc-pca: progress:")
    )
    assert err.count("\n") == 1 and "Traceback" not in err  # the error is one line (beside the progress line)
    assert expected in err


def test_the_estimator_refuses_sigma_with_stm_before_any_party_starts():
    parts = make_topic_model(300, n_words=12, n_topics=2, n_sites=2, rng=np.random.default_rng(0)).parts
    with pytest.raises(InputValidationError, match=r"sigma=0.1 .*model='mog'\) only"):
        CapeAGN(2, model="stm", sigma=0.1).fit(parts)


def test_a_deployment_refuses_sigma_with_stm_in_its_own_settings():
    settings = {
        "model": "stm",
        "sigma": 0.1,
        "epsilon": 1.0,
        "delta": 1e-5,
        "neighbour": "replace-one",
        "noise_calibration": "analytic",
        "n_components": 2,
        "row_norm": "clip",
    }
    with pytest.raises(
        InputValidationError,
        match=r"sigma=0.1 applies to the mixture-of-Gaussians model \(model=\'mog\'\) only",
    ):
        agn_view("capeagn", settings)
