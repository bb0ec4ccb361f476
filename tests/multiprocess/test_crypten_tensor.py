"""The CrypTen tensor engine (protocols.tensor.crypten_engine) over real processes, and reveal='components' on it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.errors import InputValidationError, ProtocolError, TripleReuseError
from tests.helpers.oracles import align_signs

pytest.importorskip("torch", reason="torch is not installed (README, 'Set up and run': optional line)")

from protocols.backends.crypten_compat import crypten_available

pytestmark = [
    pytest.mark.torch,
    pytest.mark.crypten,
    pytest.mark.skipif(
        not crypten_available(), reason="crypten is not installed (pip install --no-deps crypten==0.4.1)"
    ),
]

WORKER = Path(__file__).resolve().parents[1] / "helpers" / "crypten_tensor_worker.py"
FRAC = 24


def run_engine_world(workdir: Path, holders: int, cases: list[dict]) -> dict[str, dict]:
    """Run ``holders`` holders and a dealer of tests/helpers/crypten_tensor_worker.py; return their outputs."""
    from mpc_pca.deploy.local import child_environment
    from protocols.runtime.launcher import host_store, launch, raise_on_failure

    (workdir / "spec.json").write_text(json.dumps({"holders": holders, "frac_bits": FRAC, "cases": cases}))
    names = [f"h{i}" for i in range(holders)] + ["dealer"]
    store, port = host_store(len(names), 60)
    commands = {n: [sys.executable, str(WORKER), n, f"127.0.0.1:{port}", str(workdir)] for n in names}
    outcomes = launch(commands, timeout=120, env=child_environment())
    raise_on_failure(outcomes, store)
    return {n: json.loads((workdir / f"{n}.out.json").read_text()) for n in names}


def _enc(values: list) -> np.ndarray:
    """Integer encodings (Python ints, exact) of what share_input encodes (round to nearest)."""
    return np.vectorize(int, otypes=[object])(np.rint(np.array(values) * 2.0**FRAC).astype(np.int64))


def _random_cases(rng: np.random.Generator) -> list[dict]:
    cases = []
    for _ in range(3):
        m, n, p = (int(v) for v in rng.integers(1, 6, size=3))
        cases.append(
            {
                "op": "mul",
                "x": rng.normal(scale=3, size=(m, n)).tolist(),
                "y": rng.normal(scale=3, size=(m, n)).tolist(),
            }
        )
        cases.append(
            {
                "op": "matmul",
                "x": rng.normal(scale=3, size=(m, n)).tolist(),
                "y": rng.normal(scale=3, size=(n, p)).tolist(),
                "extra_bits": int(rng.integers(0, 4)),
            }
        )
        cases.append(
            {
                "op": "trunc",
                "x": rng.normal(scale=50, size=(m, p)).tolist(),
                "bits": int(rng.integers(1, FRAC + 1)),
            }
        )
    # products of equal shapes in a row: each must get its own triple (one-time ledger)
    shape = np.array(cases[0]["x"]).shape
    cases += [
        {"op": "mul", "x": rng.normal(size=shape).tolist(), "y": rng.normal(size=shape).tolist()}
        for _ in range(2)
    ]
    return cases


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(holders=st.integers(2, 4), seed=st.integers(0, 2**32 - 1))
def test_products_and_truncation_are_exact_to_one_ulp(tmp_path_factory, holders, seed):
    """mul / matmul / truncate on the CrypTen engine: ``floor(P / 2^s)`` or one more, P the exact product.

    That is within one ulp (``2^-f``, times ``2^-extra_bits``) of the product of the
    encoded operands, hence within ``2^-f`` plus the encoding error of the float product.
    """
    workdir = tmp_path_factory.mktemp("engine")
    cases = _random_cases(np.random.default_rng(seed))
    outputs = run_engine_world(workdir, holders, cases)
    results = outputs["dealer"]["output"]
    assert len(results) == len(cases)
    for case, got in zip(cases, results, strict=True):
        got = np.array(got)
        if case["op"] == "trunc":
            x = _enc(case["x"])
            bits = case["bits"]
            exact = np.vectorize(lambda v, b=bits: v >> b, otypes=[object])(x)
            raw = np.rint(got * 2.0 ** (FRAC - bits)).astype(np.int64)
            diff = raw.astype(object) - exact
            assert np.all((diff == 0) | (diff == 1)), (case, diff)
            continue
        x, y = _enc(case["x"]), _enc(case["y"])
        shift = FRAC + case.get("extra_bits", 0)
        product = x * y if case["op"] == "mul" else x.dot(y)
        exact = np.vectorize(lambda v, s=shift: v >> s, otypes=[object])(product)
        raw = np.rint(got * 2.0**FRAC).astype(np.int64)
        diff = raw.astype(object) - exact
        assert np.all((diff == 0) | (diff == 1)), (case, diff)
        # ... so against float: one ulp plus the operands' encoding error
        xf, yf = np.array(case["x"]), np.array(case["y"])
        ref = (xf * yf if case["op"] == "mul" else xf @ yf) / 2.0 ** case.get("extra_bits", 0)
        inner = 1 if case["op"] == "mul" else xf.shape[1]
        bound = 2.0**-FRAC + inner * (np.abs(xf).max() + np.abs(yf).max() + 1) * 2.0 ** -(FRAC + 1)
        assert np.max(np.abs(got - ref)) <= bound
    n_products = sum(case["op"] != "trunc" for case in cases)
    for i in range(holders):
        out = outputs[f"h{i}"]["output"]
        # every triple reached CrypTen through the dealer's provider (TFP raises in the worker) ...
        assert out["handed_out"] == n_products
        # ... and every triple and truncation pair was consumed exactly once in the ledger
        assert out["consumed"] == 2 * n_products + sum(case["op"] == "trunc" for case in cases)
        # no pickle path of CrypTen's communicator or torch.distributed is reachable inside the engine
        guards = out["guards"]
        assert guards.pop("restored") == "broadcast_object_list"
        assert set(guards.values()) == {"refused"}, guards


def _fake_session(name: str = "h0"):
    from protocols.tensor.session import TensorSession

    return TensorSession(SimpleNamespace(name=name), holders=["h0", "h1"], dealer="dealer")


def test_the_dealers_provider_hands_a_triple_to_crypten_only_once():
    from protocols.tensor.correlated import Triple
    from protocols.tensor.crypten_engine import make_dealer_provider

    session = _fake_session()
    provider = make_dealer_provider(session)
    session.ledger.issue(7, "mul", ((2, 3), (2, 3)))
    a, b = np.arange(6, dtype=np.uint64).reshape(2, 3), np.ones((2, 3), dtype=np.uint64)
    tri = Triple(7, "mul", a, b, a * b, session)
    first = provider.hand_out(tri)
    assert [t.share.numpy().tolist() for t in first] == [a.tolist(), b.tolist(), (a * b).tolist()]
    with pytest.raises(TripleReuseError, match="already used"):
        provider.hand_out(tri)
    assert provider.handed_out == 1
    # a triple the dealer never issued is refused too
    with pytest.raises(TripleReuseError, match="never issued"):
        provider.hand_out(Triple(8, "mul", a, b, a * b, session))
    # CrypTen's other correlated randomness (e.g. wrap_rng for its probabilistic truncation) is refused
    for call in (
        lambda: provider.wrap_rng((2,)),
        lambda: provider.square((2,)),
        lambda: provider.B2A_rng((2,)),
    ):
        with pytest.raises(ProtocolError, match="never deals"):
            call()


def test_pickle_paths_are_refused_and_restored():
    import torch.distributed as dist

    from protocols.backends.crypten_compat import (
        OBJECT_COLLECTIVES,
        _GroupCommunicator,
        no_object_collectives,
    )

    comm = _GroupCommunicator(None, [0, 1], 0, "h0")
    for call in (
        lambda: comm.send_obj({"a": 1}, 1),
        lambda: comm.recv_obj(1),
        lambda: comm.broadcast_obj(1, 0),
        lambda: comm.all_gather_obj(1),
    ):
        with pytest.raises(ProtocolError, match="pickles"):
            call()
    originals = {name: getattr(dist, name) for name in OBJECT_COLLECTIVES}
    with no_object_collectives():
        for name in OBJECT_COLLECTIVES:
            with pytest.raises(ProtocolError, match="pickles"):
                getattr(dist, name)([None])
    assert {name: getattr(dist, name) for name in OBJECT_COLLECTIVES} == originals


def test_components_with_crypten_in_process_is_refused_naming_the_option():
    from mpc_pca import PPPCA

    parts = np.array_split(np.random.default_rng(0).normal(size=(60, 4)), 2)
    with pytest.raises(
        InputValidationError, match=r"backend='crypten'.*processes.*transport='torch' is an alias"
    ):
        PPPCA(n_components=2, reveal="components", backend="crypten").fit(parts)


def test_the_engine_refuses_a_channel_that_is_not_torch_distributed():
    from protocols.runtime import run_inprocess
    from protocols.tensor import share_input
    from protocols.tensor.crypten_engine import CrypTenTensorSession

    def role(party):
        session = CrypTenTensorSession(party, holders=["h0", "h1"], dealer="dealer")
        share_input(session, np.zeros(2) if party.name == "h0" else None, owner="h0", shape=(2,))

    with pytest.raises(ProtocolError, match=r"processes over torch\.distributed"):
        run_inprocess({name: role for name in ("h0", "h1", "dealer")}, timeout=20)


# -- reveal="components" on the CrypTen engine, every party a process --------------------------------

#: One data set per number of providers: every data set and every M in 2..5 is covered.
ACCURACY_RUNS = [("digits", 5, 2), ("breast_cancer", 3, 3), ("wine", 3, 4), ("wine", 3, 5)]


@pytest.mark.slow
@pytest.mark.parametrize(("dataset", "k", "providers"), ACCURACY_RUNS)
def test_components_on_the_crypten_engine_match_sklearn(dataset, k, providers, record_property):
    """reveal='components', backend='crypten', default settings: within 1e-4 of scikit-learn (sign-aligned).

    Pickle paths raise in every party during the whole eigensolve (the engine's
    guards), so the run succeeding shows none of them is reached.
    """
    from sklearn import datasets
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    from mpc_pca.deploy import launch_local

    X = StandardScaler().fit_transform(getattr(datasets, f"load_{dataset}")().data)
    start = time.perf_counter()
    result = launch_local(
        "pppca-ss",
        np.array_split(X, providers),
        {"n_components": k, "reveal": "components", "backend": "crypten"},
        insecure=True,
        timeout=300,
    )
    seconds = time.perf_counter() - start
    ref = PCA(k).fit(X)
    got = np.array(result["components"])
    error = float(np.max(np.abs(align_signs(got, ref.components_) - ref.components_)))
    solve = result["secure_eigensolve"]
    rounds = {name: rep["rounds"] for name, rep in result["report"].items()}
    record_property("crypten_components", {"error": error, "seconds": seconds, "rounds": rounds, **solve})
    print(
        f"{dataset} k={k} M={providers}: error {error:.2e}, {solve['iterations']} iterations, rounds {rounds}, {seconds:.1f} s"
    )
    assert error < 1e-4
    np.testing.assert_allclose(result["explained_variance"], ref.explained_variance_, rtol=1e-4)
    assert solve["engine"] == "crypten" and solve["dealer"] == "server"
    assert solve["iterations"] == {"wine": 156, "breast_cancer": 164, "digits": 171}[dataset]
    # The server (dealer) received only the mean's secure sum and the revealed basis, Ritz matrix and
    # trace: O(M d k) words, never the d x d Gram matrix.
    d = X.shape[1]
    assert result["report"]["server"]["bytes_received"] < providers * 8 * (d * k + k * k + 2 * d + 16) + 2_000
    assert min(rounds[f"provider{i}"] for i in range(providers)) > 4_000


@pytest.mark.slow
def test_cli_runs_components_on_the_crypten_engine(tmp_path):
    """`mpc-pca run --reveal components --backend crypten --transport torch --insecure` (the command of docs/explanation/reveal-components.md)."""
    from sklearn.datasets import load_iris
    from sklearn.decomposition import PCA

    from mpc_pca.cli import main

    out = tmp_path / "result.json"
    argv = [
        "run",
        "--protocol",
        "pppca-ss",
        "--data",
        "builtin:iris",
        "--parties",
        "3",
        "--n-components",
        "2",
    ]
    argv += ["--reveal", "components", "--backend", "crypten", "--transport", "torch", "--insecure"]
    assert main([*argv, "--output", str(out), "-q"]) == 0
    result = json.loads(out.read_text())
    assert result["backend"] == "crypten" and result["secure_eigensolve"]["engine"] == "crypten"
    ref = PCA(2).fit(load_iris().data).components_
    got = np.array(result["components"])
    assert np.max(np.abs(align_signs(got, ref) - ref)) < 1e-4
    # in-process, the same request is refused as an input error before anything runs
    from mpc_pca.cli.options import EXIT_INPUT

    assert main(argv[:-3]) == EXIT_INPUT
