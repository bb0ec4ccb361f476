"""The DP protocols' deployments run as the deploy floor will run them (threads harness).

For every protocol name: a fixed noise seed gives the in-process CLI's JSON
(every field but the harness's own), mismatched announcements are refused
naming the parties, bad rows and settings are refused before anything is
sent, and the message cap bounds every message actually sent.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from mpc_pca import registry
from mpc_pca.cli.flags import PRIVACY_DEFAULTS
from mpc_pca.cli.runners import run_inprocess
from mpc_pca.data.latent import make_topic_model
from mpc_pca.deployment import DEFAULT_MESSAGE_CAP, Deployment
from mpc_pca.deployment_kit import HARNESS_FIELDS, seeded_generator
from mpc_pca.dp.cape_deploy import CapeDeployment
from mpc_pca.dp.capeagn_deploy import CapeAGNDeployment
from mpc_pca.dp.curator_deploy import CuratorDeployment
from mpc_pca.dp.dispca_deploy import DisPCADeployment
from mpc_pca.dp.dpdpca_deploy import DPDPCADeployment
from mpc_pca.dp.dpdpca_estimator import DPDPCA
from mpc_pca.dp.mechanisms import spawn_generators
from mpc_pca.pppca.dp_deploy import PPPCADPDeployment
from mpc_pca.pppca.dp_estimator import PPPCADP
from protocols.errors import InputValidationError
from tests.helpers.deployment_harness import announce, run_deployment

SEED = 20260611
#: The registry's defaults (``mpc_pca.cli.options.DP_DEFAULTS`` and the other options unset).
DEFAULTS: dict[str, Any] = {
    "n_components": 2,
    "epsilon": 1.0,
    "delta": 1e-5,
    "neighbour": "replace-one",
    "row_norm": "clip",
    "noise_calibration": "analytic",
    "intermediate_dim": None,
    "cape_calibration": "joint",
    "key_bits": None,
    "min_honest": None,
    "model": None,
    "sigma": None,
    "budget_split": None,
    "backend": None,
    "frac_bits": None,
}
#: Test-only Paillier size for DPDPCA (the in-process estimator accepts it with the same switch).
SMALL_KEY = {"key_bits": 1024, "allow_insecure_key_size": True}
NAMES = ("capepca", "dispca", "dispca-full", "dpdpca", "ag", "pooled", "pppca-dp", "capeagn")


def deployment(name: str) -> Deployment:
    classes: dict[str, type[Deployment]] = {
        "capepca": CapeDeployment,
        "dispca": DisPCADeployment,
        "dispca-full": DisPCADeployment,
        "dpdpca": DPDPCADeployment,
        "ag": CuratorDeployment,
        "pooled": CuratorDeployment,
        "pppca-dp": PPPCADPDeployment,
        "capeagn": CapeAGNDeployment,
    }
    return classes[name](name)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def wine_parts() -> list[np.ndarray]:
    X = StandardScaler().fit_transform(load_wine().data)
    X = X / (1.01 * np.linalg.norm(X, axis=1).max())  # every row of norm < 1: nothing is clipped
    return [np.ascontiguousarray(p) for p in np.array_split(X, 3)]


@pytest.fixture(scope="module")
def topic_parts() -> list[np.ndarray]:
    return make_topic_model(1500, n_words=8, n_topics=2, n_sites=3, rng=np.random.default_rng(3)).parts


def settings_for(name: str) -> dict[str, Any]:
    settings = dict(DEFAULTS)
    if name == "dpdpca":
        settings.update(SMALL_KEY)
    if name == "capeagn":
        settings.update(n_components=2, epsilon=4.0)
    return settings


def parts_for(name: str, wine: list[np.ndarray], topics: list[np.ndarray]) -> list[np.ndarray]:
    return topics if name == "capeagn" else wine


def cli_json(name: str, parts: list[np.ndarray], settings: Mapping[str, Any]) -> dict[str, Any]:
    """What ``mpc-pca run --protocol NAME --seed SEED`` writes, computed in-process."""
    if name == "dpdpca":  # the CLI has no test-only key size: the estimator it builds, with a small key
        model = DPDPCA(
            n_components=2,
            row_norm="clip",
            random_state=SEED,
            **SMALL_KEY,  # type: ignore[arg-type]
        ).fit(parts)
        variance = model.explained_variance_.tolist()
        return {
            "components": model.components_.tolist(),
            "explained_variance": variance,
            "mean": model.mean_.tolist(),
            "n_samples": model.n_samples_,
            "report": model.report_,
            "epsilon": 1.0,
            "delta": 1e-5,
            "neighbour": "replace-one",
            "row_norm": "clip",
            "captured_energy_ratio": 0.0,
            "noise_sigma": model.noise_sigma_,
            "effective_epsilon": model.effective_epsilon_,
        }
    if name == "pppca-dp":  # the fields of PPPCADPDeployment.result, from the estimator
        est = PPPCADP(
            n_components=2,
            epsilon=settings["epsilon"],
            delta=settings["delta"],
            timeout=60.0,
            random_state=SEED,
        )
        est.fit(parts)
        return {
            "backend": "additive",
            "components": est.components_.tolist(),
            "explained_variance": est.explained_variance_.tolist(),
            "explained_variance_ratio": est.explained_variance_ratio_.tolist(),
            "mean": est.mean_.tolist(),
            "n_samples": int(est.n_samples_),
            "epsilon": float(settings["epsilon"]),
            "delta": float(settings["delta"]),
            "min_honest": est.plan_.min_honest,
            "noise_std": est.noise_std_,
            "epsilon_by_colluders": est.epsilon_by_colluders_,
            "report": est.report_,
        }
    # what `mpc-pca run` runs in-process for this protocol: the registry's object as threads
    args = argparse.Namespace(protocol=name, noise_seed=SEED, timeout=60.0, **settings)
    for option, default in {**PRIVACY_DEFAULTS, **registry.entry(name).options}.items():
        if getattr(args, option, None) is None:  # the defaults the command line fills in
            setattr(args, option, default)
    result: dict[str, Any] = run_inprocess(args, parts, None)
    for key in ("_projection", "protocol", "feature_names"):  # run_command's own fields
        result.pop(key, None)
    return result


def assert_same_json(expected: Mapping[str, Any], got: Mapping[str, Any]) -> None:
    """Every field but :data:`HARNESS_FIELDS`, bit for bit: the parties do the in-process arithmetic.

    Exact, not to a tolerance: capePCA's aggregator subtracts the very masks
    ``f_s`` it drew, so a wrong aggregator stream moves the result only by
    rounding, far below any tolerance.
    """
    assert set(got) == set(expected) - set(HARNESS_FIELDS)
    for key, value in got.items():
        want = expected[key]
        if isinstance(want, (list, float)) and not isinstance(want, bool):
            np.testing.assert_array_equal(
                np.asarray(value, dtype=float), np.asarray(want, dtype=float), err_msg=key
            )
        else:
            assert value == want, key


@pytest.mark.parametrize("name", NAMES)
def test_fixed_seed_gives_the_in_process_json_and_the_cap_bounds_every_message(
    name: str, wine_parts: list[np.ndarray], topic_parts: list[np.ndarray]
) -> None:
    parts = parts_for(name, wine_parts, topic_parts)
    settings = settings_for(name)
    expected = cli_json(name, parts, settings)
    run = run_deployment(deployment(name), parts, settings, noise_seed=SEED)
    assert_same_json(expected, run.result)
    # (d) the cap is finite, below the floor's default, and no message of the run exceeded it
    assert 0 < run.largest_message <= run.cap < DEFAULT_MESSAGE_CAP
    # the layout: data holders first, ranks 0 .. W-1
    holders = deployment(name).data_holders(len(parts))
    assert sorted(run.layout.values()) == list(range(len(run.layout)))
    assert [run.layout[h] for h in holders] == list(range(len(parts)))


def test_pppca_dp_runs_with_noise(wine_parts: list[np.ndarray]) -> None:
    settings = {**DEFAULTS, "epsilon": 1.0, "min_honest": 2}
    run = run_deployment(deployment("pppca-dp"), wine_parts, settings, noise_seed=None)
    assert np.asarray(run.result["components"]).shape == (2, 13)
    assert run.result["min_honest"] == 2 and len(run.result["epsilon_by_colluders"]) == 4
    assert run.largest_message <= run.cap


def test_generators_follow_the_in_process_spawn_order_or_secrets() -> None:
    cape = deployment("capepca")
    layout = cape.layout(3)
    reference = [g.standard_normal(4) for g in spawn_generators(SEED, 5)]
    for party, rank in layout.items():
        gen = cape.generator(party, layout, SEED)
        assert gen is not None
        np.testing.assert_array_equal(gen.standard_normal(4), reference[rank])
    assert layout == {"provider0": 0, "provider1": 1, "provider2": 2, "aggregator": 3, "noise-generator": 4}
    first, second = seeded_generator(None, 0), seeded_generator(None, 0)
    assert not np.array_equal(first.standard_normal(4), second.standard_normal(4))
    dpdpca = deployment("dpdpca")
    assert dpdpca.generator("owner0", dpdpca.layout(3), SEED) is None
    proxy = dpdpca.generator("proxy", dpdpca.layout(3), SEED)
    assert proxy is not None
    np.testing.assert_array_equal(proxy.standard_normal(4), reference[0])


def per_party(name: str, n: int, **changes: Any) -> list[dict[str, Any]]:
    """Settings in rank order, the party at rank 1 with ``changes``."""
    width = len(deployment(name).layout(n))
    base = settings_for(name)
    return [{**base, **changes} if rank == 1 else dict(base) for rank in range(width)]


@pytest.mark.parametrize("name", NAMES)
def test_configure_refuses_mismatched_settings_naming_the_parties(
    name: str, wine_parts: list[np.ndarray], topic_parts: list[np.ndarray]
) -> None:
    dep = deployment(name)
    parts = parts_for(name, wine_parts, topic_parts)
    holder = dep.data_holders(len(parts))[1]
    if name == "pooled":  # not private: no epsilon to disagree on, but the row-norm policy must agree
        _, views = announce(dep, parts, per_party(name, len(parts), row_norm="error"))
        with pytest.raises(InputValidationError, match=rf"disagree on row_norm.*'{holder}': 'error'"):
            dep.configure(views, len(parts))
    else:
        epsilon = 2.5 if name != "pppca-dp" else 3.0
        _, views = announce(dep, parts, per_party(name, len(parts), epsilon=epsilon))
        with pytest.raises(InputValidationError, match=rf"disagree on epsilon.*'{holder}': {epsilon}"):
            dep.configure(views, len(parts))
    narrow = [parts[0], parts[1][:, :-1], parts[2]]
    _, views = announce(dep, narrow, settings_for(name))
    with pytest.raises(InputValidationError, match=rf"features differ.*'{holder}': {parts[0].shape[1] - 1}"):
        dep.configure(views, len(parts))
    _, views = announce(dep, parts, settings_for(name))
    del views[holder]
    with pytest.raises(InputValidationError, match=re.escape(f"missing ['{holder}']")):
        dep.configure(views, len(parts))


@pytest.mark.parametrize("name", NAMES)
def test_public_refuses_bad_rows_and_settings_before_anything_is_sent(
    name: str, wine_parts: list[np.ndarray], topic_parts: list[np.ndarray]
) -> None:
    dep = deployment(name)
    parts = parts_for(name, wine_parts, topic_parts)
    holder = dep.data_holders(len(parts))[0]
    settings = settings_for(name)
    bad = parts[0].copy()
    bad[4, 2] = np.nan
    with pytest.raises(InputValidationError, match=f"{holder}.*(NaN|nan|not finite)"):
        dep.public(holder, bad, settings)
    with pytest.raises(InputValidationError, match="scale"):
        dep.public(holder, parts[0], {**settings, "row_norm": "scale"})
    other = next(p for p in dep.layout(len(parts)) if p not in dep.data_holders(len(parts)))
    with pytest.raises(InputValidationError, match="scale"):
        dep.public(other, None, {**settings, "row_norm": "scale"})
    if name == "pooled":  # adds no noise: it announces no privacy parameter at all
        assert not {"epsilon", "delta", "neighbour"} & set(dep.public(other, None, settings))
    else:
        with pytest.raises(InputValidationError, match="epsilon"):
            dep.public(other, None, {**settings, "epsilon": -1.0})
    long_row = parts[0].copy()
    long_row[0] *= 10.0
    if name == "capeagn":  # word counts have no norm bound; a negative count is refused instead
        long_row[0, 0] = -1.0
        with pytest.raises(InputValidationError, match=r"row 0 .*non-negative integer"):
            dep.public(holder, long_row, settings)
    elif name == "pppca-dp":  # always clips: 'error' is refused as a setting
        with pytest.raises(InputValidationError, match="only 'clip'"):
            dep.public(holder, long_row, {**settings, "row_norm": "error"})
    else:
        with pytest.raises(InputValidationError, match=f"{holder}: .*row 0 has Euclidean norm"):
            dep.public(holder, long_row, {**settings, "row_norm": "error"})
    with pytest.raises(InputValidationError, match="holds no data"):
        dep.public(other, parts[0], settings)


def test_pppca_dp_noise_is_reproducible_only_with_a_seed(wine_parts: list[np.ndarray]) -> None:
    """A noise seed fixes every provider's discrete Gaussian draws; without one they come from secrets."""
    fits = [PPPCADP(n_components=2, epsilon=1.0, random_state=seed).fit(wine_parts) for seed in (3, 3, 4)]
    assert np.array_equal(fits[0].components_, fits[1].components_)
    assert np.array_equal(fits[0].explained_variance_, fits[1].explained_variance_)
    assert not np.array_equal(fits[0].explained_variance_, fits[2].explained_variance_)
    private = [PPPCADP(n_components=2, epsilon=1.0).fit(wine_parts) for _ in range(2)]
    assert not np.array_equal(private[0].explained_variance_, private[1].explained_variance_)
    with pytest.raises(InputValidationError, match="noise_seed=-1"):
        PPPCADP(n_components=2, random_state=-1).fit(wine_parts)


def test_a_deployment_refuses_a_protocol_it_does_not_run() -> None:
    assert CuratorDeployment().name == "ag" and DisPCADeployment("dispca-full").full
    with pytest.raises(InputValidationError, match=r"CapeDeployment runs protocol 'capepca', not 'dispca'"):
        CapeDeployment("dispca")
    with pytest.raises(InputValidationError, match=r"runs protocol 'dispca' or 'dispca-full', not 'DISPCA'"):
        DisPCADeployment("DISPCA")
