"""What a peer announces before a run: typed schemas, row counts checked against N, caps no one can raise.

Issue 24 ("an insider controls others' memory", "silent wrong results", typed
settings): a provider's announced row count used to size every party's message
cap and was never compared with anything; a settings value of the wrong type
crashed peers with ``TypeError``/``OverflowError``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc_pca.deploy import run_threads
from mpc_pca.deployment import PublicSettings
from mpc_pca.deployment_kit import MAX_FEATURES
from mpc_pca.dp.cape_deploy import CapeDeployment
from mpc_pca.floor import check_floor_views
from mpc_pca.pppca import protocol
from mpc_pca.pppca.config import PPPCAConfig
from mpc_pca.pppca.deployment import (
    MAX_ANNOUNCED_ROWS,
    MAX_KEY_BITS,
    PPPCADeployment,
    cap_bound,
)
from protocols.errors import InputValidationError, ProtocolError
from tests.helpers.deployment_harness import announce, run_deployment
from tests.helpers.hypothesis_budget import examples

CAPE_SETTINGS: dict[str, Any] = {
    "n_components": 2,
    "epsilon": 1.0,
    "delta": 1e-5,
    "neighbour": "replace-one",
    "row_norm": "clip",
    "noise_calibration": "analytic",
    "cape_calibration": "joint",
}
PPPCA_SETTINGS: dict[str, Any] = {
    "n_components": 2,
    "backend": "additive",
    "frac_bits": 20,
    "key_bits": None,
    "reveal": "covariance",
    "standardize": False,
}


def wine_rows() -> np.ndarray:
    from sklearn.datasets import load_wine

    return np.asarray(load_wine().data, dtype=np.float64)


@pytest.fixture
def parts(wine):
    return np.array_split(wine, 3)


class Announcing(PPPCADeployment):
    """PPPCA whose providers announce ``rows[name]`` instead of their row count (everything else honest)."""

    def __init__(self, rows: Mapping[str, int]) -> None:
        super().__init__("pppca-ss")
        self.rows = dict(rows)

    def public(self, party: str, data: Any, settings: Mapping[str, Any]) -> PublicSettings:
        view = super().public(party, data, settings)
        if party in self.rows:
            view["n_rows"] = self.rows[party]
        return view


# -- 1. announced row counts against the N of the secure sum ---------------------------------


def test_a_provider_announcing_ten_times_its_rows_is_refused_by_the_server_naming_every_count(parts):
    sizes = [len(p) for p in parts]
    lying = Announcing({"provider1": 10 * sizes[1]})
    with pytest.raises(ProtocolError) as info:
        run_threads("pppca-ss", parts, {"n_components": 2}, deployment=lying, timeout=30)
    text = str(info.value)
    announced = sizes[0] + 10 * sizes[1] + sizes[2]
    assert f"N={sum(sizes)}" in text, text
    assert f"announced {announced} rows" in text, text
    assert f"'provider1': {10 * sizes[1]}" in text, text


def test_counts_that_add_up_but_differ_from_the_rows_sent_are_refused_by_the_consumer(parts):
    sizes = [len(p) for p in parts]
    shifted = Announcing({"provider0": sizes[0] + 5, "provider1": sizes[1] - 5})
    with pytest.raises(ProtocolError, match=r"provider0 sent .*projected rows"):
        run_threads("pppca-ss", parts, {"n_components": 2}, deployment=shifted, timeout=30)


def test_honest_counts_run_and_the_consumer_gets_every_provider_s_rows(parts):
    run = run_deployment(PPPCADeployment("pppca-ss"), parts, PPPCA_SETTINGS, noise_seed=None)
    assert run.config.config.announced_rows == tuple(len(p) for p in parts)
    assert run.run.outputs["consumer"].shape == (sum(len(p) for p in parts), 2)


# -- 2. message caps that no announcement can raise -------------------------------------------


def test_an_announcement_of_2_to_the_60_rows_is_refused_at_configure_naming_the_provider(parts):
    _, views = announce(PPPCADeployment("pppca-ss"), parts, PPPCA_SETTINGS)
    views["provider2"]["n_rows"] = 2**60
    with pytest.raises(
        InputValidationError, match=rf"provider2 announced n_rows={2**60}.*<= {MAX_ANNOUNCED_ROWS}"
    ):
        PPPCADeployment("pppca-ss").configure(views, 3)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.integers(1, MAX_ANNOUNCED_ROWS), min_size=3, max_size=3),
    keys=st.one_of(
        st.just(("additive", None)), st.tuples(st.just("paillier"), st.sampled_from([None, 2048, 3072]))
    ),
)
def test_the_cap_of_any_accepted_announcement_stays_below_the_bound_of_the_agreed_values(rows, keys):
    backend, key_bits = keys
    deployment = PPPCADeployment("pppca-ss")
    wine = wine_rows()
    chosen = {**PPPCA_SETTINGS, "backend": backend, "key_bits": key_bits}
    _, honest = announce(deployment, np.array_split(wine, 3), chosen)
    views = copy.deepcopy(honest)
    for name, n in zip(("provider0", "provider1", "provider2"), rows, strict=True):
        views[name]["n_rows"] = n
    cap = deployment.message_cap(deployment.configure(views, 3))
    assert cap <= cap_bound(wine.shape[1], 2, key_bits)
    # no row count enters the cap: the honest announcements give the same one
    assert cap == deployment.message_cap(deployment.configure(honest, 3))


@pytest.mark.parametrize("n_rows", [7, 21])  # 21: a multiple of the chunk, ended by an empty chunk
def test_projected_rows_go_in_chunks_that_the_cap_bounds(monkeypatch, wine, n_rows):
    k = 2
    parts = [wine[:n_rows], wine[n_rows : 2 * n_rows], wine[2 * n_rows :]]
    whole = run_deployment(PPPCADeployment("pppca-ss"), parts, PPPCA_SETTINGS, noise_seed=None)
    monkeypatch.setattr(protocol, "PROJECTION_CHUNK_BYTES", 7 * 8 * k)
    assert protocol.projection_chunk_rows(k) == 7
    chunked = run_deployment(PPPCADeployment("pppca-ss"), parts, PPPCA_SETTINGS, noise_seed=None)
    np.testing.assert_array_equal(chunked.run.outputs["consumer"], whole.run.outputs["consumer"])
    assert chunked.largest_message <= chunked.cap
    sent = chunked.run.report_dict()["provider0"]["messages_sent"]
    assert sent - whole.run.report_dict()["provider0"]["messages_sent"] == n_rows // 7


def test_the_consumer_refuses_a_chunk_longer_than_agreed():
    config = PPPCAConfig(1, 3, 1, True, announced_rows=(10,))

    class OneParty:
        name = "consumer"

        def __init__(self) -> None:
            self.messages = [np.zeros((protocol.projection_chunk_rows(1) + 1, 1))]

        def phase(self, label: str) -> Any:
            import contextlib

            return contextlib.nullcontext()

        def recv(self, frm: str) -> Any:
            return self.messages.pop(0)

    with pytest.raises(ProtocolError, match="provider0 sent a chunk of"):
        protocol.consumer_role(OneParty(), config)  # type: ignore[arg-type]


# -- 3. typed schema of every announcement ----------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=8),
    st.sampled_from(["additive", "paillier", "pppca-ss", "covariance", "components", "clip", "joint"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
PPPCA_KEYS = [
    "protocol", "n_providers", "columns", "n_components", "backend", "frac_bits", "key_bits",
    "reveal", "eigengap", "min_ratio", "eigensolver", "standardize", "n_features", "n_rows", "column_exponents",
    "n_parties", "x",
]  # fmt: skip


def edits(keys: list[str], parties: list[str]) -> st.SearchStrategy[list[tuple[str, str, Any, bool]]]:
    """Edits of valid announcements: (party, key, new value, delete the key instead)."""
    return st.lists(
        st.tuples(st.sampled_from(parties), st.sampled_from(keys), values, st.booleans()),
        min_size=1,
        max_size=3,
    )


def apply(views: dict[str, dict[str, Any]], changes: list[tuple[str, str, Any, bool]]) -> dict[str, Any]:
    edited = copy.deepcopy(views)
    for party, key, value, delete in changes:
        if delete:
            edited[party].pop(key, None)
        else:
            edited[party][key] = value
    return edited


def only_protocol_errors(call: Any, views: Mapping[str, Any], parties: list[str]) -> None:
    try:
        call(views)
    except (InputValidationError, ProtocolError) as exc:
        text = str(exc)
        assert any(name in text for name in parties) or "disagree" in text or "differ" in text, text


@pytest.fixture(scope="module")
def pppca_views() -> dict[str, dict[str, Any]]:
    views = announce(PPPCADeployment("pppca-ss"), np.array_split(wine_rows(), 2), PPPCA_SETTINGS)[1]
    for name, view in views.items():
        view["n_providers"] = 2
        if name.startswith("provider"):
            view["columns"] = None
    return views


@pytest.fixture(scope="module")
def cape_views() -> dict[str, dict[str, Any]]:
    wine = wine_rows()
    rows = wine / (1.01 * np.linalg.norm(wine, axis=1).max())
    return announce(CapeDeployment(), np.array_split(rows, 2), CAPE_SETTINGS)[1]


PPPCA_PARTIES = ["provider0", "provider1", "server", "consumer"]


@settings(max_examples=400, deadline=None)
@given(changes=edits(PPPCA_KEYS, PPPCA_PARTIES))
def test_pppca_announcements_of_any_shape_configure_or_are_refused_naming_the_sender(pppca_views, changes):
    views = apply(pppca_views, changes)
    deployment = PPPCADeployment("pppca-ss")

    def floor_then_configure(v: Mapping[str, Any]) -> None:
        check_floor_views(v, ("provider0", "provider1"))
        run = deployment.configure(v, 2)
        assert deployment.message_cap(run) <= cap_bound(
            run.config.n_features, run.config.n_components, run.key_bits
        )

    only_protocol_errors(floor_then_configure, views, PPPCA_PARTIES)
    only_protocol_errors(lambda v: deployment.configure(v, 2), views, PPPCA_PARTIES)


#: DP protocols whose own keys have a declared schema (every one of them).
DP_SCHEMAS = ("capepca", "dpdpca", "pppca-dp", "dispca", "dispca-full", "ag", "pooled", "capeagn")


def dp_views(name: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """``name``'s deployment and its parties' honest announcements for two data holders.

    Rows of norm < 1 (the wine data, centred and scaled); ``capeagn`` gets
    word counts of a small topic model instead.
    """
    from mpc_pca.data.latent import make_topic_model
    from tests.dp.test_deployments import deployment, settings_for

    if name == "capeagn":
        parts = make_topic_model(300, n_words=6, n_topics=2, n_sites=2, rng=np.random.default_rng(3)).parts
    else:
        wine = wine_rows() - wine_rows().mean(axis=0)
        parts = np.array_split(wine / (1.01 * np.linalg.norm(wine, axis=1).max()), 2)
    dep = deployment(name)
    return dep, announce(dep, parts, settings_for(name))[1]


@pytest.mark.parametrize("name", DP_SCHEMAS)
def test_dp_announcements_of_any_shape_configure_or_are_refused(name):
    dep, views = dp_views(name)
    parties = list(views)
    keys = sorted({key for view in views.values() for key in view} | {"n_providers", "columns", "x"})

    @settings(max_examples=examples(150), deadline=None)  # a quarter outside CI (tests/helpers)
    @given(changes=edits(keys, parties))
    def fuzz(changes: list[tuple[str, str, Any, bool]]) -> None:
        only_protocol_errors(lambda v: dep.configure(v, 2), apply(views, changes), parties)

    fuzz()
    dep.configure(views, 2)  # the honest announcements fit the schema
    edited = copy.deepcopy(views)  # an exact schema: an unknown key is refused naming its sender
    edited[parties[-1]]["x"] = 1
    with pytest.raises(InputValidationError, match=rf"{parties[-1]} announced unexpected keys \['x'\]"):
        dep.configure(edited, 2)


@pytest.mark.parametrize(
    ("name", "key", "value", "limit"),
    [
        ("dispca", "intermediate_dim", 2.5, "must be an integer, not float"),
        ("dispca-full", "epsilon", "1.0", "must be a number, not str"),
        ("ag", "neighbour", b"replace-one", "must be a str, not bytes"),
        ("pooled", "n_components", True, "must be an integer, not bool"),
        ("capeagn", "budget_split", [0.5], "must be a number, not list"),
    ],
)
def test_a_dp_refusal_names_the_sender_the_key_the_value_and_the_limit(name, key, value, limit):
    dep, views = dp_views(name)
    sender = list(views)[1]
    views[sender][key] = value
    with pytest.raises(InputValidationError) as info:
        dep.configure(views, 2)
    assert f"{sender} announced {key}={value!r}" in str(info.value)
    assert limit in str(info.value)


@pytest.mark.parametrize(
    ("key", "value", "limit"),
    [
        ("backend", b"additive", "must be a str, not bytes"),
        ("n_components", True, "must be an integer, not bool"),
        ("frac_bits", "20", "must be an integer, not str"),
        ("n_components", [2], "must be an integer, not list"),
        ("frac_bits", 2**70, "must be <= 52"),
        ("key_bits", 2**62, f"must be <= {MAX_KEY_BITS}"),
    ],
)
def test_the_refusal_names_the_sender_the_key_the_value_and_the_limit(pppca_views, key, value, limit):
    views = copy.deepcopy(pppca_views)
    views["provider1"][key] = value
    with pytest.raises(InputValidationError) as info:
        PPPCADeployment("pppca-ss").configure(views, 2)
    assert f"provider1 announced {key}={value!r}" in str(info.value)
    assert limit in str(info.value)


def test_the_floor_refuses_a_floor_key_of_the_wrong_type_naming_the_sender(pppca_views):
    views = copy.deepcopy(pppca_views)
    views["server"]["protocol"] = b"pppca-ss"
    with pytest.raises(
        InputValidationError, match=r"server announced protocol=b'pppca-ss', which must be a str"
    ):
        check_floor_views(views, ("provider0", "provider1"))
    views = copy.deepcopy(pppca_views)
    views["provider0"]["columns"] = "a"
    with pytest.raises(InputValidationError, match="provider0 announced columns='a', which must be a list"):
        check_floor_views(views, ("provider0", "provider1"))


def test_cape_refuses_a_width_beyond_the_bound_and_an_unknown_key_naming_the_sender(cape_views):
    views = copy.deepcopy(cape_views)
    for name in ("provider0", "provider1"):
        views[name]["n_features"] = 2**70  # agreed by every site, yet refused: it would size the cap
    with pytest.raises(
        InputValidationError,
        match=rf"provider0 announced n_features={2**70}, which must be <= {MAX_FEATURES}",
    ):
        CapeDeployment().configure(views, 2)
    views = copy.deepcopy(cape_views)
    views["aggregator"]["sigma"] = 1.0
    with pytest.raises(InputValidationError, match=r"aggregator announced unexpected keys \['sigma'\]"):
        CapeDeployment().configure(views, 2)


@pytest.mark.parametrize(
    ("key", "value", "limit"),
    [
        ("budget_split", 7.0, "strictly between 0 and 1"),
        ("model", "xyz", "choose one of ['stm', 'mog']"),
        ("cape_calibration", "bar", "choose one of ['joint', 'paper']"),
        ("noise_calibration", "foo", "choose one of ['analytic', 'classical']"),
    ],
)
def test_capeagn_refuses_an_invalid_value_even_when_every_party_announced_it(key, value, limit):
    dep, views = dp_views("capeagn")
    for view in views.values():
        view[key] = value
    with pytest.raises(InputValidationError, match=re.escape(limit)):
        dep.configure(views, 2)


@pytest.mark.parametrize(
    ("key", "value"), [("eigengap", 0.05), ("min_ratio", 0.2), ("eigensolver", "krylov")]
)
def test_a_party_announcing_another_eigensolve_setting_is_refused_naming_the_key(pppca_views, key, value):
    views = apply(pppca_views, [("provider1", key, value, False)])
    with pytest.raises(InputValidationError, match=f"disagree on {key}"):
        PPPCADeployment("pppca-ss").configure(views, 2)
