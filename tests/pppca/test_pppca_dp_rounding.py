"""Issue 35: pppca-dp refuses a frac_bits whose row rounding would swamp the rows, naming the minimum."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.pppca.dp_deploy import PPPCADPDeployment
from mpc_pca.pppca.dp_rounding import min_frac_bits
from mpc_pca.threads import run_protocol
from protocols.errors import InputValidationError


@pytest.mark.parametrize("d", [1, 13, 1000, 10_000])
def test_the_minimum_caps_the_rounding_move_at_a_sixteenth(d):
    lowest = min_frac_bits(d)
    assert np.sqrt(d) * 2.0 ** -(lowest // 2 + 1) <= 1 / 16  # the minimum keeps the move within the cap
    assert lowest == 0 or np.sqrt(d) * 2.0 ** -(lowest // 2) > 1 / 16  # two bits fewer would not


def test_the_cli_refuses_frac_bits_0_in_one_line_naming_value_and_minimum(capsys):
    argv = ["run", "--protocol", "pppca-dp", "--data", "builtin:wine", "--frac-bits", "0"]
    assert main(argv) == 3
    err = "".join(
        line for line in capsys.readouterr().err.splitlines(True) if not line.startswith("mpc-pca: progress:")
    )
    assert err.count("\n") == 1 and "Traceback" not in err  # the error is one line (beside the progress line)
    assert (
        "--frac-bits 0 is too few for pppca-dp with d=13 features" in err
        and "--frac-bits must be >= 10" in err
    )


def test_the_minimum_runs_and_two_bits_fewer_is_refused():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(20, 13)) / 8 for _ in range(2)]
    settings = {"n_components": 2, "epsilon": 1.0, "delta": 1e-5, "backend": "additive"}
    with pytest.raises(InputValidationError, match=r"frac_bits=8 .* must be >= 10"):
        run_protocol(PPPCADPDeployment(), parts, {**settings, "frac_bits": 8})
    run = run_protocol(PPPCADPDeployment(), parts, {**settings, "frac_bits": 10})
    assert run.config.plan.frac_bits == 10 and np.asarray(run.output.components).shape == (2, 13)


def test_a_provider_refuses_it_in_its_own_announcement_before_the_run():
    settings = {"n_components": 2, "epsilon": 1.0, "delta": 1e-5, "frac_bits": 4}
    rows = np.full((5, 13), 0.1)
    with pytest.raises(InputValidationError, match=r"frac_bits=4 .* d=13 .* >= 10"):
        PPPCADPDeployment().public("provider0", rows, settings)
