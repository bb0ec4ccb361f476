"""Issue 35: parties whose backends differ in a setting that must match are stopped, named, by default.

With ``frac_bits`` 20 at one contributor and 30 at the other, a secure sum of
``[1, 2, 3]`` twice decodes as ``[1025, 2050, 3075]`` without a word. The
embeddable API now agrees the settings in every sum by default (each
contributor's settings travel with its first protocol message, the receiver
compares them before it reads anything else); the deployments agree them in
their announcements.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.pppca.dp_deploy import PPPCADPDeployment
from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends import dropout
from protocols.backends.paillier import PaillierBackend
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from protocols.secure_sum import secure_sum, secure_sum_symmetric
from protocols.testing.recording import run_recorded
from tests.helpers.deployment_harness import announce

VALUES = {"p0": np.array([1.0, 2.0, 3.0]), "p1": np.array([1.0, 2.0, 3.0]), "s": None}


def _roles(backends, function=secure_sum, values=VALUES, meters=None, **options):
    def role(name):
        def run(party):
            try:
                return function(
                    party,
                    values[name],
                    contributors=["p0", "p1"],
                    receiver="s",
                    backend=backends[name],
                    **options,
                )
            finally:
                if meters is not None:
                    meters[name] = party.channel.meter

        return run

    return {name: role(name) for name in values}


def _refused(backends, **options):
    """Run with the default agreement; return the receiver's error and what it received."""
    meters: dict = {}
    run = run_recorded(_roles(backends, meters=meters, **options), timeout=10)
    assert "s" not in run.outputs  # the receiver output nothing
    return run.errors["s"], meters["s"]


def test_contributors_with_different_frac_bits_are_both_named_before_the_receiver_reads_a_share():
    backends = {
        "p0": AdditiveBackend(),
        "p1": AdditiveBackend(codec=FixedPointCodec(30)),
        "s": AdditiveBackend(),
    }
    error, meter = _refused(backends)
    assert isinstance(error, InputValidationError)
    assert str(error).startswith("the secure-sum setting frac_bits differs: 's' uses 20, 'p1' uses 30 ")
    assert "every party's frac_bits: 's': 20, 'p0': 20, 'p1': 30" in str(error)
    assert meter.messages_received == 2  # the two settings messages, no partial sum
    assert meter.messages_sent == 0


def test_a_receiver_with_other_frac_bits_than_the_contributors_is_refused_naming_both():
    backends = {
        "p0": AdditiveBackend(),
        "p1": AdditiveBackend(),
        "s": AdditiveBackend(codec=FixedPointCodec(16)),
    }
    error, meter = _refused(backends)
    assert isinstance(error, InputValidationError)
    assert "frac_bits differs: 's' uses 16, 'p0' uses 20" in str(error)
    assert meter.messages_received == 2


def test_contributors_in_different_modes_are_named_not_deadlocked():
    """p0's shares-mode seed goes to p1, which (masks mode) never reads it; the settings come first."""
    backends = {"p0": AdditiveBackend(), "p1": AdditiveBackend("masks"), "s": AdditiveBackend()}
    error, meter = _refused(backends)
    assert isinstance(error, InputValidationError)
    assert "backend differs: 's' uses 'additive', 'p1' uses 'additive-masks'" in str(error)
    assert "every party's backend: 's': 'additive', 'p0': 'additive', 'p1': 'additive-masks'" in str(error)
    assert meter.messages_received == 2


def test_a_receiver_in_another_mode_is_refused_naming_both():
    backends = {"p0": AdditiveBackend("masks"), "p1": AdditiveBackend("masks"), "s": AdditiveBackend()}
    error, _ = _refused(backends)
    assert "backend differs: 's' uses 'additive', 'p0' uses 'additive-masks'" in str(error)


def test_the_symmetric_sum_agrees_too():
    values = {"p0": np.eye(2), "p1": np.eye(2), "s": None}
    backends = {
        "p0": AdditiveBackend(codec=FixedPointCodec(24)),
        "p1": AdditiveBackend(),
        "s": AdditiveBackend(),
    }
    run = run_recorded(_roles(backends, function=secure_sum_symmetric, values=values), timeout=10)
    assert "frac_bits differs: 's' uses 20, 'p0' uses 24" in str(run.errors["s"])


@pytest.mark.parametrize(
    "make",
    [
        lambda: AdditiveBackend(),
        lambda: AdditiveBackend("masks"),
        lambda: AdditiveBackend("sparse-masks"),
        lambda: PaillierBackend(key_bits=512, allow_insecure_key_size=True),
    ],
    ids=["shares", "masks", "sparse-masks", "paillier"],
)
def test_equal_settings_sum_with_one_more_message_per_contributor_and_no_added_wait(make):
    """The settings go out with the first protocol message: same receiver traffic, one message more."""
    counts = {}
    for agree in (False, True):
        meters: dict = {}
        run = run_inprocess(
            _roles({n: make() for n in VALUES}, meters=meters, agree_settings=agree), timeout=30
        )
        np.testing.assert_allclose(run.outputs["s"], [2.0, 4.0, 6.0], atol=1e-5)
        counts[agree] = {n: (m.messages_sent, m.messages_received) for n, m in meters.items()}
    for name in ("p0", "p1"):
        assert counts[True][name][0] == counts[False][name][0] + 1
    assert counts[True]["s"] == (
        counts[False]["s"][0],
        counts[False]["s"][1] + 2,
    )  # the receiver sends no more


def test_every_sum_is_agreed_not_only_the_first_of_the_group():
    """A second sum of the same group with another codec at one contributor is refused too."""
    codecs = {"p0": [20, 20], "p1": [20, 24], "s": [20, 20]}

    def role(name):
        def run(party):
            return [
                secure_sum(
                    party,
                    VALUES[name],
                    contributors=["p0", "p1"],
                    receiver="s",
                    backend=AdditiveBackend(codec=FixedPointCodec(bits)),
                )
                for bits in codecs[name]
            ]

        return run

    run = run_recorded({name: role(name) for name in VALUES}, timeout=10)
    assert "frac_bits differs: 's' uses 20, 'p1' uses 24" in str(run.errors["s"])


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


def _dropout_roles(codecs, leaving=()):
    providers = ("p0", "p1", "p2", "p3", "p4")

    def backend(name):
        return AdditiveBackend("masks", codec=FixedPointCodec(codecs.get(name, 20)), dropout_threshold=3)

    def provider(name):
        def run(party):
            if name in leaving:
                party.channel.disconnect()  # gone before the sum, settings never sent
                return "left"
            return secure_sum(party, [1.0, 2.0], contributors=providers, receiver="s", backend=backend(name))

        return run

    def server(party):
        total = secure_sum(party, None, contributors=providers, receiver="s", backend=backend("s"))
        return total, dropout.last_outcome(party).dropped

    return {**{p: provider(p) for p in providers}, "s": server}


def test_a_dropout_sum_still_leaves_out_a_provider_gone_before_its_settings():
    run = run_inprocess(_dropout_roles({}, leaving=("p4",)), timeout=10)
    total, dropped = run.outputs["s"]
    assert tuple(dropped) == ("p4",)
    np.testing.assert_allclose(total, [4.0, 8.0])


def test_a_dropout_sum_refuses_different_frac_bits_naming_both():
    run = run_recorded(_dropout_roles({"p2": 24}), timeout=10)
    assert "frac_bits differs: 's' uses 20, 'p2' uses 24" in str(run.errors["s"])
    assert "s" not in run.outputs
