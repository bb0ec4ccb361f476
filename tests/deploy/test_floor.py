"""The deploy floor: one PartySpec, the same four Deployment steps as threads, processes and hosts."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.deploy import ArraySource, LinkOptions, PartySpec, launch_local, run_party, run_threads
from mpc_pca.deploy.agreement import check_floor_views
from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.registry import ProtocolEntry, deployable_names, entries, entry
from protocols.errors import InputValidationError


@pytest.fixture
def parts(wine):
    return np.array_split(wine, 3)


def test_threads_through_the_deployment_give_the_estimator_result(parts):
    from mpc_pca.pppca import PPPCA

    result = run_threads("pppca-ss", parts, {"n_components": 3})
    model = PPPCA(3)
    model.fit_transform(parts)  # with the consumer, as the deployment runs it
    np.testing.assert_array_equal(result["components"], model.components_)
    assert set(result["report"]) == set(model.report_)
    for name, report in model.report_.items():
        assert result["report"][name]["bytes_sent"] == report["bytes_sent"], name


def test_processes_give_the_threads_result_with_every_party_its_own_spec(parts):
    threads = run_threads("pppca-ss", parts, {"n_components": 2})
    processes = launch_local("pppca-ss", parts, {"n_components": 2}, timeout=60, feature_names=None)
    np.testing.assert_allclose(processes["components"], threads["components"], rtol=0, atol=1e-12)
    assert list(processes["report"]) == ["provider0", "provider1", "provider2", "server", "consumer"]
    for name, report in threads["report"].items():
        for key in ("bytes_sent", "bytes_received", "messages_sent", "rounds"):
            assert processes["report"][name][key] == report[key], (name, key)


def test_providers_with_other_column_names_are_refused_before_any_process_starts(parts):
    names = [f"x{i}" for i in range(13)]
    with pytest.raises(
        InputValidationError, match=r"provider1 has different column names than provider0 \(1 columns vs 2\)"
    ):
        check_floor_views(
            {"provider0": {"protocol": "p", "n_providers": 2, "columns": ["a", "b"]},
             "provider1": {"protocol": "p", "n_providers": 2, "columns": ["b"]}},
            ("provider0", "provider1"),
        )  # fmt: skip
    with pytest.raises(InputValidationError, match="disagree on n_providers"):
        check_floor_views(
            {"a": {"protocol": "p", "n_providers": 2}, "b": {"protocol": "p", "n_providers": 3}}, ()
        )
    assert run_threads("pppca-ss", parts, feature_names=names)["n_samples"] == 178


def spec(party, data=None, **settings):
    links = LinkOptions("127.0.0.1:1", insecure=True, timeout=1, connect_timeout=1)
    return PartySpec("pppca-ss", party, 3, links, data, settings)


def test_a_party_refuses_bad_specs_before_it_opens_a_link(wine):
    with pytest.raises(InputValidationError, match="the server holds no data"):
        run_party(spec("server", ArraySource(wine)))
    with pytest.raises(InputValidationError, match="provider1 needs its data"):
        run_party(spec("provider1"))
    with pytest.raises(InputValidationError, match="has no party 'aggregator'"):
        run_party(spec("aggregator"))
    with pytest.raises(InputValidationError, match=r"takes no setting \['epsilon'\]"):
        run_party(spec("server", epsilon=1.0))
    with pytest.raises(InputValidationError, match="n_providers must be a positive integer"):
        PartySpec("pppca-ss", "server", 0, LinkOptions("h:1"))
    with pytest.raises(InputValidationError, match="3 column names for 13 columns"):
        run_party(spec("provider0", ArraySource(wine, ("a", "b", "c"))))


def test_registry_marks_a_protocol_deployable_when_its_deployment_module_exists(tmp_path, monkeypatch):
    probe = ProtocolEntry("probe", "a probe", runner="m:f", deployment="mpc_pca_probe_deploy:ProbeDeployment")
    assert not probe.deployable
    with pytest.raises(InputValidationError, match="cannot run as separate parties yet"):
        probe.make_deployment()
    (tmp_path / "mpc_pca_probe_deploy.py").write_text(
        "from mpc_pca.pppca.deployment import PPPCADeployment\n"
        "class ProbeDeployment(PPPCADeployment):\n"
        "    def __init__(self, name):\n"
        "        super().__init__('pppca-ss')\n"
        "        self.given = name\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert probe.deployable and probe.make_deployment().given == "probe"


def test_every_deployable_entry_builds_its_deployment_and_the_rest_are_named():
    import importlib.util

    for name, item in entries().items():
        module = None if item.deployment is None else item.deployment.partition(":")[0]
        exists = module is not None and importlib.util.find_spec(module) is not None
        assert item.deployable == exists, name
        if exists:
            assert item.make_deployment().name == name
    assert {"pppca-ss", "pppca-he"} <= set(deployable_names())
    assert entry("pppca-he").settings()["backend"] == "paillier"
    assert entry("capepca").settings({"epsilon": 2.0}) == {
        "n_components": 2, "epsilon": 2.0, "delta": 1e-5, "neighbour": "replace-one", "row_norm": "clip",
        "noise_calibration": "analytic", "cape_calibration": "joint",
    }  # fmt: skip
    assert entry("dispca-full").deployment == entry("dispca").deployment
    assert (
        entry("ag").deployment == entry("pooled").deployment == "mpc_pca.dp.curator_deploy:CuratorDeployment"
    )


def test_pppca_he_refuses_another_backend_in_every_mode(parts):
    with pytest.raises(InputValidationError, match="pppca-he uses the paillier backend"):
        run_threads("pppca-he", parts, {"backend": "additive"})
    with pytest.raises(InputValidationError, match="PPPCADeployment runs"):
        PPPCADeployment("capepca")
