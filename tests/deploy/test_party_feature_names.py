"""Every model ``mpc-pca party`` writes names its columns, for the DP protocols as for PPPCA (issue 25).

Each party runs :func:`mpc_pca.deploy.run_party` (the body of ``mpc-pca
party``) in a thread of its own over loopback links, with named columns
(provider1's permuted), and writes its output file; every file holding
``components`` must carry the agreed ``feature_names``.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from mpc_pca.deploy import ArraySource, LinkOptions, PartySpec, run_party, run_threads
from mpc_pca.registry import deployment
from protocols.transport.rendezvous import Introducer

NAMES = tuple(f"f{j}" for j in range(13))
#: Extra settings per protocol (none: dpdpca runs with its default key size).
SETTINGS: dict[str, dict[str, object]] = {}
#: dpdpca's 2048-bit Paillier key takes about 13 s here: slow lane.
PROTOCOLS = (
    "capepca", "dispca", "dispca-full", pytest.param("dpdpca", marks=pytest.mark.slow), "ag", "pooled", "pppca-dp",
)  # fmt: skip


@pytest.fixture
def parts(wine):
    X = wine - wine.mean(axis=0)
    X = X / (1.01 * np.linalg.norm(X, axis=1).max())  # rows of norm < 1: nothing is clipped
    return np.array_split(X, 3)


def party_files(protocol: str, parts: list[np.ndarray], tmp_path) -> dict[str, dict]:
    """Every party of ``protocol`` through run_party in a thread; each party's output file, read back."""
    dep = deployment(protocol)
    layout = dep.layout(len(parts))
    holders = list(dep.data_holders(len(parts)))
    order = [4, 0, 1, 2, 3, *range(5, 13)]
    sources = [
        ArraySource(parts[0], NAMES),
        ArraySource(parts[1][:, order], tuple(NAMES[j] for j in order)),
        ArraySource(parts[2], NAMES),
    ]
    introducer = Introducer("127.0.0.1:0", layout, None, 30)
    errors: dict[str, BaseException] = {}

    def target(name: str) -> None:
        links = LinkOptions(
            f"127.0.0.1:{introducer.port}", insecure=True, listen_host="127.0.0.1", timeout=60,
            connect_timeout=30, host_rendezvous=False,
        )  # fmt: skip
        source = sources[holders.index(name)] if name in holders else None
        settings = {"n_components": 2, **SETTINGS.get(protocol, {})}
        spec = PartySpec(protocol, name, len(parts), links, source, settings, tmp_path / f"{name}.json")
        try:
            run_party(spec)
        except BaseException as exc:  # reported below with the party's name
            errors[name] = exc

    threads = [threading.Thread(target=target, args=(name,), daemon=True) for name in layout]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in layout}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_model_a_dp_party_writes_carries_the_agreed_feature_names(protocol, parts, tmp_path):
    files = party_files(protocol, parts, tmp_path)
    dep = deployment(protocol)
    winner = dep.result_party(dep.layout(len(parts)))
    assert "components" in files[winner], files[winner]
    with_model = [name for name, fields in files.items() if "components" in fields]
    for name in with_model:
        assert files[name]["feature_names"] == list(NAMES), name


def test_threads_of_a_dp_protocol_name_the_columns_too(parts):
    assert run_threads("pooled", parts, {"n_components": 2}, feature_names=NAMES)["feature_names"] == list(
        NAMES
    )
    assert run_threads("pooled", parts, {"n_components": 2})["feature_names"] is None
