"""Issue 35: parties whose backends differ in a setting that must match (frac_bits) are stopped, named.

With ``frac_bits`` 20 at one contributor and 30 at the other, a secure sum of
``[1, 2, 3]`` twice decodes as ``[1025, 2050, 3075]`` without a word. The
embeddable API agrees the settings with ``agree_settings=True``; the
deployments agree them in their announcements.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.pppca.dp_deploy import PPPCADPDeployment
from protocols import AdditiveBackend, FixedPointCodec
from protocols.agreement import agree_sum_settings
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from protocols.secure_sum import secure_sum, secure_sum_symmetric
from tests.helpers.deployment_harness import announce

VALUES = {"p0": np.array([1.0, 2.0, 3.0]), "p1": np.array([1.0, 2.0, 3.0]), "s": None}


def _run(backends, sent=None, function=secure_sum, values=VALUES):
    def role(name):
        def run(party):
            try:
                return function(
                    party,
                    values[name],
                    contributors=["p0", "p1"],
                    receiver="s",
                    backend=backends[name],
                    agree_settings=True,
                )
            finally:
                if sent is not None:
                    sent[name] = party.channel.meter.messages_sent

        return run

    return run_inprocess({name: role(name) for name in values}, timeout=10)


def test_different_frac_bits_are_refused_naming_both_parties_and_values_before_any_input_is_sent():
    backends = {
        "p0": AdditiveBackend(),
        "p1": AdditiveBackend(codec=FixedPointCodec(30)),
        "s": AdditiveBackend(),
    }
    sent: dict[str, int] = {}
    with pytest.raises(InputValidationError, match=r"frac_bits differs: 's' uses 20, 'p1' uses 30"):
        _run(backends, sent)
    assert sent == {"p0": 1, "p1": 1, "s": 0}  # each contributor sent its settings, no share seed, no sum


def test_a_mode_difference_is_refused_too():
    backends = {
        "p0": AdditiveBackend("masks"),
        "p1": AdditiveBackend("shares"),
        "s": AdditiveBackend("masks"),
    }
    with pytest.raises(
        InputValidationError, match=r"backend differs: 's' uses 'additive-masks', 'p1' uses 'additive'"
    ):
        _run(backends)


@pytest.mark.parametrize("mode", ["shares", "masks", "sparse-masks"])
def test_equal_settings_sum_and_agree_once_per_group(mode):
    backends = {name: AdditiveBackend(mode) for name in VALUES}
    total = _run(backends).outputs["s"]
    np.testing.assert_allclose(total, [2.0, 4.0, 6.0])


def test_the_symmetric_sum_agrees_too():
    values = {"p0": np.eye(2), "p1": np.eye(2), "s": None}
    backends = {
        "p0": AdditiveBackend(codec=FixedPointCodec(24)),
        "p1": AdditiveBackend(),
        "s": AdditiveBackend(),
    }
    with pytest.raises(InputValidationError, match=r"frac_bits differs: 's' uses 20, 'p0' uses 24"):
        _run(backends, function=secure_sum_symmetric, values=values)


def test_agreement_runs_once_per_group_and_run():
    backend = AdditiveBackend()

    def contributor(party):
        for _ in range(3):
            agree_sum_settings(party, backend, ["p0", "p1"], "s")
        return party.channel.meter.messages_sent

    def receiver(party):
        for _ in range(3):
            agree_sum_settings(party, backend, ["p0", "p1"], "s")
        return party.channel.meter.messages_sent

    run = run_inprocess({"p0": contributor, "p1": contributor, "s": receiver}, timeout=10)
    assert run.outputs == {"p0": 1, "p1": 1, "s": 2}


@pytest.mark.parametrize(
    ("deployment", "extra"),
    [(PPPCADeployment("pppca-ss"), {}), (PPPCADPDeployment(), {"epsilon": 1.0, "delta": 1e-5})],
)
def test_a_deployment_refuses_announcements_with_different_frac_bits_naming_every_party(deployment, extra):
    rows = np.random.default_rng(0).normal(size=(40, 4)) / 4
    base = {"n_components": 2, "backend": "additive", "key_bits": None, **extra}
    layout = deployment.layout(2)
    settings = [{**base, "frac_bits": 20} for _ in layout]
    settings[layout["provider1"]]["frac_bits"] = 24
    _, views = announce(deployment, np.array_split(rows, 2), settings)
    with pytest.raises(
        InputValidationError, match=r"disagree on frac_bits: .*'provider0': 20.*'provider1': 24"
    ):
        deployment.configure(views, 2)
