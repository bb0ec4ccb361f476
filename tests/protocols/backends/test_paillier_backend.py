"""The paillier secure-sum backend: same results as the additive backend, PPPCA-HE, protocol checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.data.partition import split_rows
from protocols.agreement import settings_message
from protocols.backends import make_backend
from protocols.backends.additive import AdditiveBackend
from protocols.backends.paillier import PaillierBackend, chunk_ranges
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, ProtocolError, RingOverflowError
from protocols.paillier.arrays import encrypt_ring
from protocols.paillier.cipher import encrypt
from protocols.paillier.keys import generate_keypair
from protocols.paillier.packing import PackingLayout
from protocols.paillier.serialize import ciphertexts_to_bytes
from protocols.runtime import run_inprocess
from protocols.secure_sum import run_secure_sum, secure_sum, secure_sum_symmetric
from tests.helpers.oracles import align_signs

BITS = 1024  # test-only key size; one default-size run below
DATASETS = {"wine": load_wine().data, "iris": load_iris().data, "breast_cancer": load_breast_cancer().data}


@pytest.fixture(scope="module")
def keypair():
    return generate_keypair(BITS, allow_insecure_key_size=True)


def small_backend(keypair=None, **options) -> PaillierBackend:
    return PaillierBackend(BITS, allow_insecure_key_size=True, keypair=keypair, **options)


@given(
    m=st.integers(1, 5),
    shape=st.sampled_from([(3,), (2, 4), (0,), (40,), ()]),
    receiver_index=st.integers(-1, 4),
    packing=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_equals_the_additive_backend(keypair, m, shape, receiver_index, packing, seed):
    rng = np.random.default_rng(seed)
    values = {f"p{i}": rng.normal(scale=1e4, size=shape) for i in range(m)}
    receiver = "server" if receiver_index < 0 or receiver_index >= m else f"p{receiver_index}"
    got, _ = run_secure_sum(values, receiver=receiver, backend=small_backend(keypair, packing=packing))
    expected, _ = run_secure_sum(values, receiver=receiver, backend=AdditiveBackend())
    assert got.shape == shape
    assert np.array_equal(got, expected)


def test_fresh_key_per_run_and_precompute_option(monkeypatch):
    import protocols.backends.paillier as backend_module

    moduli = []
    real_generate = backend_module.generate_keypair

    def recording_generate(*args, **kwargs):
        pair = real_generate(*args, **kwargs)
        moduli.append(pair.public_key.n)
        return pair

    monkeypatch.setattr(backend_module, "generate_keypair", recording_generate)
    values = {"a": [1.5, -2.25], "b": [-0.5, 4.0], "c": [1e6, -1e6]}
    backend = small_backend()  # one backend object, used for several runs
    for options in ({}, {"precompute": True}, {"packing": False, "precompute": True}):
        got, _ = run_secure_sum(values, receiver="server", backend=small_backend(**options))
        assert np.array_equal(got, [1e6 + 1.0, -1e6 + 1.75])
    for _ in range(2):
        run_secure_sum(values, receiver="server", backend=backend)
    # one key pair per run, never reused across runs (nor by one backend object)
    assert len(moduli) == 5 and len(set(moduli)) == 5


def test_workers_spread_encryption_and_decryption(keypair, monkeypatch):
    import protocols.paillier.arrays as arrays_module

    calls = {"encrypt": 0, "decrypt": 0}
    real_encrypt, real_decrypt = arrays_module.encrypt_parallel, arrays_module.decrypt_parallel

    def counting_encrypt(*args, **kwargs):
        calls["encrypt"] += 1
        assert kwargs.get("workers", 1) == 2
        return real_encrypt(*args, **kwargs)

    def counting_decrypt(*args, **kwargs):
        calls["decrypt"] += 1
        assert kwargs.get("workers", 1) == 2
        return real_decrypt(*args, **kwargs)

    monkeypatch.setattr(arrays_module, "encrypt_parallel", counting_encrypt)
    monkeypatch.setattr(arrays_module, "decrypt_parallel", counting_decrypt)
    rng = np.random.default_rng(1)
    values = {"a": rng.normal(size=100), "b": rng.normal(size=100)}
    backend = small_backend(keypair, packing=False, workers=2)  # 100 ciphertexts: above the threshold
    got, _ = run_secure_sum(values, receiver="server", backend=backend)
    expected, _ = run_secure_sum(values, receiver="server", backend=AdditiveBackend())
    assert np.array_equal(got, expected)
    # b encrypts and the server decrypts each chunk of at least 8 ciphertexts in parallel; a, the
    # aggregator, multiplies its plaintexts into b's ciphertexts and encrypts nothing
    sizes = [hi - lo for _, (lo, hi) in chunk_ranges(100, None)]
    assert sizes == [32, 32, 32, 4]
    assert calls == {"encrypt": 3, "decrypt": 3}


def test_default_backend_by_name_is_2048_bit():
    backend = make_backend("paillier")
    assert isinstance(backend, PaillierBackend) and backend.key_bits == 2048 and backend.packing
    got, run = run_secure_sum({"a": [1.0, 2.0], "b": [3.0, -4.0]}, receiver="server", backend=backend)
    assert np.array_equal(got, [4.0, -2.0])
    # the key message carries n (256 bytes); the aggregate carries one 512-byte ciphertext
    assert run.reports["server"].bytes_sent > 2 * 256
    assert run.reports["server"].bytes_received > 512


def test_receiver_sees_only_the_aggregate_and_never_aggregates(keypair):
    values = {"p0": [1.0], "p1": [2.0], "p2": [3.0]}
    _, run = run_secure_sum(values, receiver="p0", backend=small_backend(keypair))
    receiver = run.reports["p0"]
    # p0 is the first contributor but also the receiver: p1 aggregates, p0 gets one message
    assert receiver.messages_received == 1
    assert run.reports["p1"].messages_received == 2  # the key from p0 and p2's ciphertexts
    assert run.reports["p2"].messages_sent == 1


def test_key_is_sent_once_per_run_and_reused(keypair):
    backend = small_backend()
    contributors = ("a", "b")

    def contributor(value):
        def role(party):
            first = secure_sum(party, value, contributors=contributors, receiver="s", backend=backend)
            second = secure_sum(
                party, [2 * v for v in value], contributors=contributors, receiver="s", backend=backend
            )
            return first, second

        return role

    def server(party):
        first = secure_sum(party, None, contributors=contributors, receiver="s", backend=backend)
        second = secure_sum(party, None, contributors=contributors, receiver="s", backend=backend)
        return first, second, party.context

    run = run_inprocess({"a": contributor([1.0, 2.0]), "b": contributor([0.5, 0.25]), "s": server})
    first, second, context = run.outputs["s"]
    assert np.array_equal(first, [1.5, 2.25]) and np.array_equal(second, [3.0, 4.5])
    assert run.reports["s"].messages_sent == 2  # one key message per contributor, not per sum
    assert sum("keypair" in key for key in context) == 1


def test_symmetric_helper_sums_upper_triangles_only(keypair):
    rng = np.random.default_rng(3)
    mats = {}
    for name in ("a", "b", "c"):
        x = rng.normal(size=(10, 4))
        mats[name] = x.T @ x
    backend = small_backend(keypair)
    contributors = tuple(mats)

    def role(name):
        def run(party):
            return secure_sum_symmetric(
                party, mats.get(name), contributors=contributors, receiver="s", backend=backend
            )

        return run

    run = run_inprocess({name: role(name) for name in (*contributors, "s")})
    total = run.outputs["s"]
    assert total.shape == (4, 4) and np.array_equal(total, total.T)
    assert np.allclose(total, sum(mats.values()), atol=1e-5)
    assert run.outputs["a"] is None
    with pytest.raises(InputValidationError, match="square"):
        secure_sum_symmetric(None, np.ones((2, 3)), contributors=contributors, receiver="s", backend=backend)


# -- PPPCA with homomorphic encryption (Algorithm 1) vs scikit-learn -----------------------------


def assert_matches_sklearn(model, X, k, tol=1e-6):
    reference = PCA(n_components=k, svd_solver="full").fit(X)
    components = align_signs(model.components_, reference.components_)
    assert np.max(np.abs(components - reference.components_)) < tol
    rel = np.abs(model.explained_variance_ - reference.explained_variance_) / reference.explained_variance_
    assert np.max(rel) < tol
    assert np.allclose(model.mean_, reference.mean_, rtol=0, atol=1e-6)
    assert model.n_samples_ == X.shape[0]


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("parties", [2, 3, 4, 5])
def test_pppca_he_matches_sklearn_on_real_data(keypair, name, parties):
    X = DATASETS[name]
    k = min(3, X.shape[1])
    parts = split_rows(X, parties, "random", parties)
    model = PPPCA(n_components=k, backend=small_backend(keypair)).fit(parts)
    assert_matches_sklearn(model, X, k)


def test_pppca_he_with_the_default_key_by_name():
    X = DATASETS["wine"]
    model = PPPCA(n_components=4, backend="paillier").fit(np.array_split(X, 3))
    assert_matches_sklearn(model, X, 4)
    ss = PPPCA(n_components=4, backend="additive").fit(np.array_split(X, 3))
    assert np.array_equal(model.components_, ss.components_)  # identical ring sums, identical result


def test_pppca_he_precompute_unpacked_and_consumer(keypair):
    X = DATASETS["iris"]
    parts = np.array_split(X, 4)
    projected = PPPCA(
        n_components=2, backend=small_backend(keypair, precompute=True, packing=False)
    ).fit_transform(parts)
    reference = PCA(n_components=2, svd_solver="full").fit(X)
    expected = (X - reference.mean_) @ reference.components_.T
    signs = np.sign(np.sum(projected * expected, axis=0))
    assert np.allclose(projected * signs, expected, atol=1e-6)


# -- configuration and input validation ------------------------------------------------------------


@pytest.mark.parametrize("bits", [1024, 4096, 512])
def test_key_bits_outside_2048_and_3072_need_the_insecure_flag(bits):
    with pytest.raises(InputValidationError, match=f"key_bits={bits}"):
        PaillierBackend(bits)
    with pytest.raises(InputValidationError, match=f"key_bits={bits}"):
        make_backend("paillier", key_bits=bits)


def test_constructor_checks(keypair):
    assert PaillierBackend(3072).key_bits == 3072
    with pytest.raises(InputValidationError, match="contradicts"):
        PaillierBackend(2048, keypair=keypair, allow_insecure_key_size=True)
    with pytest.raises(InputValidationError, match="key_bits=1024"):
        PaillierBackend(keypair=keypair)  # a supplied small key still needs the flag
    with pytest.raises(InputValidationError, match="workers"):
        PaillierBackend(workers=0)
    with pytest.raises(InputValidationError, match="exponent_bits=100"):
        PaillierBackend(exponent_bits=100)
    with pytest.raises(InputValidationError, match="window_bits"):
        PaillierBackend(window_bits=0)
    other = generate_keypair(BITS, allow_insecure_key_size=True)
    with pytest.raises(InputValidationError, match="does not match"):
        PaillierBackend(keypair=(keypair.public_key, other.private_key), allow_insecure_key_size=True)


def test_ring_overflow_is_refused_before_anything_is_sent(keypair):
    codec = FixedPointCodec(20)
    too_big = codec.max_abs(2) * 1.01
    with pytest.raises(RingOverflowError, match="summand"):
        run_secure_sum({"a": [too_big], "b": [0.0]}, receiver="s", backend=small_backend(keypair))
    with pytest.raises(InputValidationError, match="non-finite"):
        run_secure_sum({"a": [np.nan], "b": [0.0]}, receiver="s", backend=small_backend(keypair))


# -- malformed peers: everything received is checked --------------------------------------------


def _run_against(fake_role, backend):
    """Run the honest receiver 's' and contributor 'b' against a fake aggregator 'a'."""
    contributors = ("a", "b")

    def honest_b(party):
        return secure_sum(party, [1.0, 2.0, 3.0], contributors=contributors, receiver="s", backend=backend)

    def server(party):
        return secure_sum(party, None, contributors=contributors, receiver="s", backend=backend)

    return run_inprocess({"a": fake_role, "b": honest_b, "s": server}, timeout=20)


def _fake_aggregator(keypair, mutate):
    def role(party):
        party.send("s", settings_message(small_backend(keypair)))  # the settings agreement's message
        party.recv("s")  # the public key
        party.recv("b")  # b's ciphertexts
        layout = PackingLayout.for_summands(BITS, 2)
        enc = encrypt_ring(keypair.public_key, np.zeros(3, dtype=np.uint64), layout=layout)
        message = {
            "shape": [3],
            "offset": 0,
            "layout": layout.describe(),
            "weight": 2,
            "ciphertexts": enc.to_bytes(),
        }
        party.send("s", mutate(message, enc))

    return role


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m, e: {**m, "ciphertexts": m["ciphertexts"][:-1]}, "malformed ciphertext array"),
        (lambda m, e: {**m, "ciphertexts": m["ciphertexts"] * 2}, "expected 1 ciphertexts"),
        (lambda m, e: {**m, "shape": [40]}, "expected 3 ciphertexts"),
        (lambda m, e: {**m, "offset": 1}, "chunk at ciphertext 1, expected 0"),
        (lambda m, e: {**m, "shape": [2**60]}, r"expected \d+ ciphertexts"),
        (lambda m, e: {**m, "shape": [2**40, 2**30]}, "at least 2"),
        (lambda m, e: {**m, "shape": [-1]}, "malformed shape"),
        (lambda m, e: {**m, "layout": [BITS, 5]}, "packing layout"),
        (lambda m, e: {**m, "weight": 7}, "sum of 7 arrays"),
        (lambda m, e: m["ciphertexts"], "encrypted-array message"),
        (lambda m, e: {**m, "ciphertexts": b"\xff" * len(m["ciphertexts"])}, r"not in \[1, n\^2\)"),
        (lambda m, e: {**m, "ciphertexts": [1, 2]}, "bytes"),
    ],
)
def test_receiver_rejects_a_malformed_aggregate(keypair, mutate, match):
    with pytest.raises(ProtocolError, match=match):
        _run_against(_fake_aggregator(keypair, mutate), small_backend(keypair))


def test_receiver_rejects_an_aggregate_that_decrypts_outside_the_slots(keypair):
    def mutate(message, enc):
        # a well-formed ciphertext whose plaintext (n - 1) fills bits no 2-party packed sum can reach
        forged = encrypt(keypair.public_key, [int(keypair.public_key.n) - 1])
        return {**message, "ciphertexts": ciphertexts_to_bytes(keypair.public_key, forged)}

    with pytest.raises(ProtocolError, match="does not decrypt to a valid sum"):
        _run_against(_fake_aggregator(keypair, mutate), small_backend(keypair))


def test_aggregator_rejects_a_wrongly_shaped_contribution(keypair):
    backend = small_backend(keypair)
    contributors = ("a", "b")

    def fake_b(party):
        party.recv("s")
        enc = encrypt_ring(keypair.public_key, np.zeros(40, dtype=np.uint64), layout=backend.layout(2))
        party.send(
            "a",
            {
                "shape": [40],
                "offset": 0,
                "layout": backend.layout(2).describe(),
                "weight": 1,
                "ciphertexts": enc.to_bytes(),
            },
        )

    def honest(name):
        def role(party):
            value = [1.0, 2.0, 3.0] if name == "a" else None
            return secure_sum(party, value, contributors=contributors, receiver="s", backend=backend)

        return role

    with pytest.raises(ProtocolError, match=r"shape \(40,\), expected \(3,\)"):
        run_inprocess({"a": honest("a"), "b": fake_b, "s": honest("s")}, timeout=20)


def test_contributor_rejects_a_public_key_of_the_wrong_size(keypair):
    smaller = generate_keypair(768, allow_insecure_key_size=True)
    server_backend = PaillierBackend(keypair=smaller, allow_insecure_key_size=True)
    client_backend = small_backend()
    contributors = ("a", "b")

    def client(party):
        return secure_sum(party, [1.0], contributors=contributors, receiver="s", backend=client_backend)

    def server(party):
        return secure_sum(party, None, contributors=contributors, receiver="s", backend=server_backend)

    with pytest.raises(ProtocolError, match="1024-bit"):
        run_inprocess({"a": client, "b": client, "s": server}, timeout=20)


def test_contributor_rejects_a_non_key_message():
    backend = small_backend()

    def server(party):
        party.send("a", {"something": b"else"})
        party.send("b", [1, 2, 3])

    def client(party):
        return secure_sum(party, [1.0], contributors=("a", "b"), receiver="s", backend=backend)

    with pytest.raises(ProtocolError, match="expected a Paillier public key"):
        run_inprocess({"a": client, "b": client, "s": server}, timeout=20)


def test_cli_runs_pppca_he(tmp_path, capsys):
    from mpc_pca.cli import main

    out = tmp_path / "he.json"
    assert (
        main(
            [
                "run",
                "--protocol",
                "pppca-he",
                "--data",
                "builtin:iris",
                "--parties",
                "2",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    assert "pppca-he" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["backend"] == "paillier" and len(result["components"]) == 2
    assert main(["run", "--protocol", "pppca-he", "--data", "builtin:iris", "--key-bits", "1024"]) == 3
    assert "--key-bits 1024 is not allowed" in capsys.readouterr().err
