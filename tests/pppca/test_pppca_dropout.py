"""PPPCA with dropout tolerance (``dropout_threshold``): the estimator, the roles, the settings."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.pppca import PPPCA
from mpc_pca.pppca.config import PPPCAConfig
from mpc_pca.pppca.deployment import PPPCADeployment, read_projection
from mpc_pca.pppca.protocol import consumer_role, provider_role
from mpc_pca.pppca.scaling import agree_exponents, provider_exponents
from mpc_pca.pppca.server import server_role
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from protocols import AdditiveBackend
from protocols.backends import dropout
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from tests.helpers.pppca_threads import run_pppca


class _DiedError(Exception):
    """The simulated death of a provider right before its masked input."""


def test_the_estimator_with_a_threshold_gives_the_same_model_and_names_nobody(wine):
    parts = np.array_split(wine, 4)
    plain = PPPCA(3, backend="additive-masks").fit(parts)
    tolerant = PPPCA(3, backend="additive-masks", dropout_threshold=3).fit(parts)
    assert tolerant.dropped_providers_ == []
    assert np.allclose(tolerant.components_, plain.components_, atol=1e-9)
    assert np.allclose(tolerant.explained_variance_, plain.explained_variance_, rtol=1e-12)
    assert not hasattr(plain, "dropped_providers_")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"backend": "additive", "dropout_threshold": 3}, "needs the additive-masks backend"),
     ({"backend": "additive-masks", "dropout_threshold": 2}, r"t=2 is too small for M=4 providers.*t >= 3"),
     ({"backend": "additive-masks", "dropout_threshold": 5}, "threshold=5 exceeds the number of shares n=4"),
     ({"backend": "additive-masks", "dropout_threshold": 1}, "dropout_threshold")],
)  # fmt: skip
def test_the_estimator_refuses_what_cannot_run(wine, kwargs, match):
    with pytest.raises(InputValidationError, match=match):
        PPPCA(2, **kwargs).fit(np.array_split(wine, 4))


@pytest.mark.parametrize("gone", [0, 3])  # provider0 is also the first of the answer check's providers
def test_a_provider_dying_before_its_masked_input_leaves_the_pca_of_the_others(wine, monkeypatch, gone):
    parts = np.array_split(wine, 5)
    exponents = agree_exponents([provider_exponents(p).tolist() for p in parts])
    config = PPPCAConfig(5, wine.shape[1], 2, True, exponents, dropout_threshold=3)
    backend = AdditiveBackend("masks")
    original = dropout.send_masked_input

    def dies(party, receiver, message):
        if party.name == f"provider{gone}":
            raise _DiedError
        original(party, receiver, message)

    monkeypatch.setattr(dropout, "send_masked_input", dies)

    def provider(data):
        def run(party):
            try:
                return provider_role(party, data, config, backend)
            except _DiedError:
                party.channel.disconnect()
                return "died"

        return run

    roles = {name: provider(data) for name, data in zip(provider_names(5), parts, strict=True)}
    roles[SERVER] = lambda party: server_role(party, config, backend)
    roles[CONSUMER] = lambda party: consumer_role(party, config)
    run = run_inprocess(roles)
    model = run.outputs[SERVER]
    survivors = [p for i, p in enumerate(parts) if i != gone]
    reference, projection, _ = run_pppca(survivors, 2, AdditiveBackend("masks"), with_consumer=True)
    assert model.dropped_providers == (f"provider{gone}",)
    assert model.result_fields()["dropped_providers"] == [f"provider{gone}"]
    assert model.n_samples == sum(len(p) for p in survivors)
    assert np.allclose(model.components, reference.components, atol=1e-9)
    assert np.allclose(model.mean, reference.mean, atol=1e-9)
    assert np.allclose(run.outputs[CONSUMER], projection, atol=1e-6)
    assert run.outputs[f"provider{gone}"] == "died"


@pytest.mark.parametrize(
    ("name", "settings", "match"),
    [("pppca-he", {"backend": "paillier"}, "pppca-ss with backend='additive-masks'"),
     ("pppca-ss", {"backend": "additive"}, "not pppca-ss with backend='additive' and"),
     ("pppca-ss", {"backend": "additive-masks", "reveal": "components"}, "reveal='components'"),
     ("pppca-ss", {"backend": "additive-masks", "dropout_threshold": 1}, "at least 2, got 1")],
)  # fmt: skip
def test_the_deployment_refuses_dropout_settings_it_cannot_run(name, settings, match):
    with pytest.raises(InputValidationError, match=match):
        PPPCADeployment(name).check_settings({"dropout_threshold": 3, **settings})


def test_the_threshold_must_not_exceed_the_providers():
    deployment = PPPCADeployment("pppca-ss")
    settings = {"n_components": 2, "backend": "additive-masks", "dropout_threshold": 4}
    data = np.arange(20.0).reshape(10, 2)
    views = {name: deployment.public(name, data if name.startswith("provider") else None, settings)
             for name in deployment.layout(3)}  # fmt: skip
    with pytest.raises(
        InputValidationError, match="dropout_threshold=4 exceeds the number of providers \\(3\\)"
    ):
        deployment.configure(views, 3)
    settings["dropout_threshold"] = 2
    views = {name: deployment.public(name, data if name.startswith("provider") else None, settings)
             for name in deployment.layout(4)}  # fmt: skip
    with pytest.raises(InputValidationError, match=r"t=2 is too small for M=4 providers.*t >= 3"):
        deployment.configure(views, 4)
    settings["dropout_threshold"] = 3
    views = {name: deployment.public(name, data if name.startswith("provider") else None, settings)
             for name in deployment.layout(3)}  # fmt: skip
    assert deployment.configure(views, 3).config.dropout_threshold == 3


def test_the_cli_refuses_a_threshold_of_half_the_providers_with_exit_3(capsys):
    code = main(["run", "--protocol", "pppca-ss", "--backend", "additive-masks", "--dropout-threshold", "2",
                 "--data", "builtin:iris", "--parties", "4"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err, err
    assert "t=2 is too small for M=4 providers: it must satisfy 2*t > M, i.e. t >= 3" in err


def test_the_flag_is_refused_by_protocols_without_it(capsys):
    code = main(["run", "--protocol", "pppca-he", "--data", "builtin:iris", "--dropout-threshold", "2"])
    assert code != 0
    assert "--dropout-threshold does not apply to protocol 'pppca-he'" in capsys.readouterr().err


def test_a_late_provider_is_named_in_every_deployment_result_and_ends_without_error(wine, monkeypatch):
    """Its masked input arrives after the survivor set: not counted, told so, no error."""
    import threading

    deployment = PPPCADeployment("pppca-ss")
    settings = {"n_components": 2, "backend": "additive-masks", "dropout_threshold": 3}
    parts = np.array_split(wine, 4)
    layout = deployment.layout(4)
    data = dict(zip(provider_names(4), parts, strict=True))
    views = {name: deployment.public(name, data.get(name), settings) for name in layout}
    run = deployment.configure(views, 4)
    announced = threading.Event()
    send_input, send_or_gone = dropout.send_masked_input, dropout._send_or_gone

    def late(party, receiver, message):
        if party.name == "provider3":
            announced.wait(30)
        send_input(party, receiver, message)

    def watch(party, peer, message):
        sent = send_or_gone(party, peer, message)
        if isinstance(message, dict) and "survivors" in message and peer == "provider3":
            announced.set()
        return sent

    monkeypatch.setattr(dropout, "send_masked_input", late)
    monkeypatch.setattr(dropout, "_send_or_gone", watch)
    roles = {name: deployment.role(name, run, data.get(name), None) for name in layout}
    outputs = run_inprocess(roles, timeout=4.0).outputs
    results = {name: deployment.result(name, run, outputs[name]) for name in layout}
    assert results[SERVER]["dropped_providers"] == ["provider3"]
    assert results[SERVER]["n_samples"] == sum(len(p) for p in parts[:3])
    assert results[CONSUMER]["dropped_providers"] == ["provider3"]
    labels, projection = read_projection(results[CONSUMER]["projection"])
    assert projection.shape[0] == sum(len(p) for p in parts[:3])
    assert sorted(set(labels)) == ["provider0", "provider1", "provider2"]
    assert results["provider3"] == {
        "n_rows": len(parts[3]),
        "dropped": True,
        "dropped_providers": ["provider3"],
    }
    assert results["provider0"]["dropped"] is False and results["provider0"]["dropped_providers"] == [
        "provider3"
    ]


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_the_one_masked_input_rebuilds_n_the_sums_and_the_centred_gram_within_its_stated_bound(wine, offset):
    """Dropout mode's ``[s_i, n_i, G_i]`` in two limbs (mpc_pca.pppca.dropout_payload), ring-summed as the sum does."""
    from mpc_pca.pppca import dropout_payload
    from mpc_pca.pppca.local_stats import LocalStatistics
    from mpc_pca.pppca.scaling import column_exponents, normalized
    from protocols import FixedPointCodec

    data = wine + offset
    parts = np.array_split(data, 5)
    exponents = tuple(column_exponents(data).tolist())
    codec = FixedPointCodec(20)
    ring = sum(
        codec.encode(
            dropout_payload.payload(normalized(LocalStatistics.of(p), exponents), 5, 20), n_summands=5
        )
        for p in parts
    )
    stats, packed, diagonal = dropout_payload.opened(codec.decode(ring), data.shape[1], 5, 20)
    scale = np.ldexp(1.0, np.asarray(exponents))
    assert stats[-1] == len(data)
    assert np.allclose(stats[:-1] * scale, data.sum(axis=0), rtol=1e-14, atol=0)
    from protocols.triangle import from_upper_triangle

    gram = from_upper_triangle(packed, data.shape[1]) * np.outer(scale, scale)
    centred = data - data.mean(axis=0)
    exact = centred.T @ centred
    u = dropout_payload.centring_error(diagonal, exponents, 5, 20)
    error = np.abs(gram - exact)
    assert np.all(
        error <= np.outer(u, u) + 1e-12 * np.abs(exact).max()
    )  # the bound, plus numpy's own rounding
    assert np.max(error / np.abs(exact).max()) < (1e-13 if offset == 0 else 1e-10)
