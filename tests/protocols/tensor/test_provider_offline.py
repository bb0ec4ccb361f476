"""Dealer-free correlated randomness (issue 39): Paillier OLE, provider triples, truncation pairs, store."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from protocols.errors import InputValidationError, TripleReuseError
from protocols.paillier.cipher import decrypt
from protocols.paillier.keys import generate_keypair
from protocols.runtime import run_inprocess
from protocols.tensor import TensorSession, ole, reveal, share_input, truncate
from protocols.tensor import ops as tensor_ops
from protocols.tensor.correlated import TruncationPair
from protocols.tensor.offline_cost import OpCounts, Timings, measure_timings, total_counts
from protocols.tensor.offline_store import OfflineExhaustedError, OfflineStore, Request, generate_offline
from protocols.tensor.provider_products import exchange_keys, shared_product
from protocols.tensor.provider_truncation import provider_truncation_pair

KEY_BITS = 512
ALPHA = 1e-6
_U = np.uint64
TOP = _U(2**64 - 1)


@pytest.fixture(scope="module")
def keys():
    return [generate_keypair(KEY_BITS, allow_insecure_key_size=True) for _ in range(5)]


def ring(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    out = rng.integers(0, 2**64, size=shape, dtype=_U)
    out.flat[0] = TOP  # wrap-around values: the largest word, and 2^63
    out.flat[-1] = _U(2**63)
    return out


def providers_of(m: int) -> list[str]:
    return [f"p{i}" for i in range(m)]


def run_providers(m: int, keys, program, timeout: float = 120.0) -> dict:
    """Run ``program(group)`` at ``m`` provider threads; return their outputs."""
    names = providers_of(m)

    def role(party):
        group = exchange_keys(
            party,
            names,
            key_bits=KEY_BITS,
            keypair=keys[names.index(party.name)],
            allow_insecure_key_size=True,
        )
        return program(group)

    return run_inprocess({name: role for name in names}, timeout=timeout).outputs


# -- two-party OLE -------------------------------------------------------------------


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 4), (4, 7)), ((1, 1), (1, 1)), ((5, 2), (2, 1))])
def test_matrix_ole_shares_sum_to_the_product_mod_2_64(keys, a_shape, b_shape):
    rng = np.random.default_rng(1)
    for a, b in [(ring(rng, a_shape), ring(rng, b_shape)), (np.full(a_shape, TOP), np.full(b_shape, TOP))]:
        payload = ole.encrypt_operand(keys[0], "matmul", b, a_shape[1])
        reply, sender = ole.respond(keys[0].public_key, "matmul", a, payload, b_shape)
        receiver = ole.finish(keys[0], "matmul", reply, a_shape, b_shape)
        assert np.array_equal(sender + receiver, a @ b)


def test_elementwise_ole_shares_sum_to_the_product_mod_2_64(keys):
    rng = np.random.default_rng(2)
    for a, b in [(ring(rng, (4, 5)), ring(rng, (4, 5))), (np.full(7, TOP), np.full(7, TOP))]:
        payload = ole.encrypt_operand(keys[0], "mul", b, 1)
        reply, sender = ole.respond(keys[0].public_key, "mul", a, payload, b.shape)
        assert np.array_equal(sender + ole.finish(keys[0], "mul", reply, a.shape, b.shape), a * b)


def test_the_slot_layout_leaves_room_for_content_and_mask():
    layout = ole.OleLayout(2048, 100)
    assert (layout.content_bits, layout.slot_bits, layout.slots) == (135, 176, 11)
    for key_bits, inner in [(2048, 100), (512, 4), (3072, 1), (256, 1)]:
        lay = ole.OleLayout(key_bits, inner)
        worst = inner * (2**64 - 1) ** 2 + 2**lay.mask_bits - 1
        assert worst < 2**lay.slot_bits  # no slot carries into its neighbour
        assert lay.slots * lay.slot_bits <= key_bits - 1  # the packed plaintext stays below n
    with pytest.raises(InputValidationError, match="at least 40"):
        ole.OleLayout(2048, 1, stat_bits=39)


def test_every_slot_gets_its_own_fresh_mask(keys):
    """The sender's shares are minus the masks: distinct in every slot and uniform low words."""
    b = np.zeros((4, 2000), dtype=_U)
    payload = ole.encrypt_operand(keys[0], "matmul", b, 4)
    _, first = ole.respond(keys[0].public_key, "matmul", np.zeros((1, 4), dtype=_U), payload, b.shape)
    _, second = ole.respond(keys[0].public_key, "matmul", np.zeros((1, 4), dtype=_U), payload, b.shape)
    words = np.concatenate([first.ravel(), second.ravel()])
    assert np.unique(words).size == words.size
    low_bytes = (words & _U(0xFF)).astype(np.int64)
    assert stats.chisquare(np.bincount(low_bytes, minlength=256)).pvalue > ALPHA


def test_a_malformed_reply_is_refused_without_unpickling(keys):
    payload = ole.encrypt_operand(keys[0], "mul", np.ones(3, dtype=_U), 1)
    with pytest.raises(Exception, match="ciphertext"):
        ole.respond(keys[0].public_key, "mul", np.ones(3, dtype=_U), payload[:-1], (3,))
    with pytest.raises(Exception, match="bytes"):
        ole.finish(keys[0], "mul", [1, 2, 3], (3,), (3,))  # type: ignore[arg-type]


# -- products and triples among M providers ------------------------------------------------


@pytest.mark.parametrize("m", [2, 3, 5])
def test_shared_products_among_providers_are_exact(keys, m):
    shapes = [
        ("matmul", (3, 4), (4, 6)),
        ("matmul", (1, 40), (40, 9)),
        ("matmul", (30, 40), (40, 2)),
        ("mul", (2, 3), (2, 3)),
    ]

    def program(group):
        rng = np.random.default_rng(10 + group.index)
        ops = [(kind, ring(rng, a), ring(rng, b)) for kind, a, b in shapes]
        return [(a, b, shared_product(group, kind, a, b)) for kind, a, b in ops]

    out = run_providers(m, keys, program)
    for t, (kind, _, _) in enumerate(shapes):
        a = sum(out[p][t][0] for p in out)
        b = sum(out[p][t][1] for p in out)
        c = sum(out[p][t][2] for p in out)
        assert np.array_equal(c, a @ b if kind == "matmul" else a * b)


def test_the_orientation_is_chosen_by_the_weighted_cost():
    def cost(m, n, p, slots, peers):
        return ole.matmul_ole_ops(m, n, p, slots, peers).weighted()

    for (m, n), p, slots in [((100, 100), 5, 11), ((5, 100), 100, 11), ((1, 40), 9, 2), ((3, 4), 6, 2)]:
        for peers in (1, 2, 4):
            chosen = ole.cheaper_transposed((m, n), (n, p), slots, peers)
            assert chosen == (cost(p, n, m, slots, peers) < cost(m, n, p, slots, peers))
    for peers in (1, 2, 4):  # the product test below runs both orientations at every M
        assert ole.cheaper_transposed((1, 40), (40, 9), 2, peers)
        assert not ole.cheaper_transposed((30, 40), (40, 2), 2, peers)
    assert not ole.cheaper_transposed((100, 100), (100, 5), 11, 2)  # the ladder's X = C Q shape


# -- truncation pairs -----------------------------------------------------------------


@pytest.mark.parametrize(("m", "bits"), [(2, 20), (3, 1), (3, 63)])
def test_truncation_pairs_are_exact_and_uniform(keys, m, bits):
    out = run_providers(m, keys, lambda group: provider_truncation_pair(group, (40,), bits))
    r, shifted, msb = (sum(out[p][i] for p in out) for i in range(3))
    assert np.array_equal(shifted, r >> _U(bits))
    assert np.array_equal(msb, (r >> _U(63)) << _U(64 - bits))
    bit_counts = [int(((r >> _U(t)) & _U(1)).sum()) for t in range(64)]
    # every bit of r is a fair coin: 40 draws per bit position, binomial two-sided tests
    pvalues = [stats.binomtest(c, 40).pvalue for c in bit_counts]
    assert min(pvalues) * 64 > ALPHA
    assert 0 < np.unique(r).size == r.size


def test_truncate_with_provider_pairs_matches_the_dealers_guarantee(keys, monkeypatch):
    """``truncate`` on shares, its pair made by the providers: floor(x / 2^bits) or one more."""
    holders, bits, f = providers_of(3), 20, 24
    values = np.array([0.0, 1e-6, -1e-6, 1234.5678, -987.25, 2.0**37, -(2.0**37)])
    made: dict[str, tuple] = {}

    def provider_pair(session, shape, drop):
        ident = session.next_op()
        if not session.is_holder:
            return None
        session.ledger.issue(ident, "truncation", (tuple(shape),), bits=drop)
        return TruncationPair(ident, *made[session.party.name], session)

    monkeypatch.setattr(tensor_ops, "truncation_pair", provider_pair)

    def role(party):
        if party.name in holders:
            group = exchange_keys(
                party,
                holders,
                key_bits=KEY_BITS,
                keypair=keys[holders.index(party.name)],
                allow_insecure_key_size=True,
            )
            made[party.name] = provider_truncation_pair(group, values.shape, bits)
        session = TensorSession(party, holders=holders, dealer="server", frac_bits=f)
        x = share_input(session, values if party.name == "p0" else None, owner="p0", shape=values.shape)
        return reveal(truncate(x, bits), "server")

    got = run_inprocess({n: role for n in [*holders, "server"]}, timeout=120).outputs["server"]
    scaled = np.rint(got * 2.0 ** (f - bits)).astype(np.int64)
    exact = np.floor(np.rint(values * 2.0**f) / 2.0**bits).astype(np.int64)
    assert np.all((scaled == exact) | (scaled == exact + 1))


# -- the offline store ----------------------------------------------------------------------


REQUESTS = [
    Request("matmul", ((3, 4), (4, 2))),
    Request("truncation", ((5,),)),
    Request("mask", ((2, 3),)),
    Request("fixed", ((3, 4),), mask=2),
    Request("mul", ((2, 2), (2, 2))),
]


def test_the_store_hands_out_each_item_once_by_kind_and_shape(keys):
    requests = [*REQUESTS, Request("matmul", ((3, 4), (4, 2)))]
    out = run_providers(2, keys, lambda group: generate_offline(group, requests))
    stores = [out["p0"], out["p1"]]

    def taken(items):
        numbers = {item[0] for item in items}
        assert len(numbers) == 1, "every provider takes the same item"
        return (numbers.pop(), *(sum(x) for x in zip(*(item[1:] for item in items), strict=True)))

    ident, a, b, c = taken([s.take_triple("matmul", (3, 4), (4, 2)) for s in stores])
    assert ident == 0 and np.array_equal(c, a @ b)
    ident, r, shifted, msb = taken([s.take_truncation((5,), 7) for s in stores])
    assert ident == 1 and np.array_equal(shifted, r >> _U(7)) and np.array_equal(msb, (r >> _U(63)) << _U(57))
    ident, mask = taken([s.take_mask((2, 3)) for s in stores])
    ident, fb, fc = taken([s.take_fixed(ident, (3, 4)) for s in stores])
    assert ident == 3 and np.array_equal(fc, mask @ fb)
    _, ea, eb, ec = taken([s.take_triple("mul", (2, 2), (2, 2)) for s in stores])
    assert np.array_equal(ec, ea * eb)
    ident, a, b, c = taken([s.take_triple("matmul", (3, 4), (4, 2)) for s in stores])  # the pool's second
    assert ident == 5 and np.array_equal(c, a @ b)
    assert stores[0].remaining == 0
    with pytest.raises(OfflineExhaustedError, match="made 2, all used"):
        stores[0].take_triple("matmul", (3, 4), (4, 2))
    with pytest.raises(TripleReuseError, match="already used"):
        stores[0].ledger.consume(0)


def test_the_same_bits_serve_any_truncation_width(keys):
    out = run_providers(2, keys, lambda group: generate_offline(group, [Request("truncation", ((6,),))] * 2))
    for bits in (1, 40):
        pairs = [s.take_truncation((6,), bits) for s in (out["p0"], out["p1"])]
        r, shifted, msb = (sum(x) for x in zip(*(p[1:] for p in pairs), strict=True))
        assert np.array_equal(shifted, r >> _U(bits))
        assert np.array_equal(msb, (r >> _U(63)) << _U(64 - bits))


def test_the_store_refuses_a_shape_or_kind_it_did_not_make(keys):
    store = run_providers(2, keys, lambda group: generate_offline(group, REQUESTS[:2]))["p0"]
    with pytest.raises(OfflineExhaustedError, match="made 0"):
        store.take_triple("matmul", (3, 4), (4, 3))
    with pytest.raises(OfflineExhaustedError, match="made 0"):
        store.take_truncation((4,), 7)
    with pytest.raises(OfflineExhaustedError, match="made 0"):
        store.take_triple("mul", (3, 4), (4, 2))
    with pytest.raises(InputValidationError, match="between 1 and 63 bits"):
        store.take_truncation((5,), 64)
    assert store.remaining == 2  # refused requests consume nothing
    with pytest.raises(InputValidationError, match="numbered"):
        OfflineStore([*store._items[1:]])
    with pytest.raises(InputValidationError, match="names the number of its mask"):
        Request("fixed", ((3, 4),))
    with pytest.raises(InputValidationError, match="unknown request kind"):
        Request("square", ((3, 4),))  # type: ignore[arg-type]


def test_cost_counts_follow_the_layout():
    counts = total_counts([Request("matmul", ((100, 100), (100, 5)))], 3, 2048)
    # B (100 x 5) in 100 ciphertexts (one block of 11 slots per row); 2 peers x 100 rows of replies,
    # each with a fresh mask; 2 x 100 bases, each a comb table (256) and 100 rows x 16 multiplications
    assert counts == OpCounts(
        own_encryptions=100,
        encryptions=2 * 100,
        multiplications=2 * 100 * (256 + 16 * 100),
        decryptions=200,
    )
    assert total_counts([Request("matmul", ((5, 100), (100, 100)))], 3, 2048) == counts  # runs transposed
    few_rows = total_counts([Request("matmul", ((2, 10), (10, 3)))], 2, 2048)
    assert few_rows == OpCounts(own_encryptions=10, encryptions=2, exponentiations=2 * 10, decryptions=2)
    assert counts.seconds(Timings(2048, 1.0, 0.0, 0.0, 0.0, 0.0)) == counts.encryptions
    assert counts.seconds(Timings(2048, 0.0, 1.0, 0.0, 0.0, 0.0)) == counts.own_encryptions


def test_own_key_encryption_decrypts_and_is_fresh(keys):
    plain = [0, 1, 2**200, int(keys[0].public_key.n) - 1]
    first, second = ole.encrypt_own(keys[0], plain), ole.encrypt_own(keys[0], plain)
    assert decrypt(keys[0].private_key, first) == plain
    assert all(a != b for a, b in zip(first, second, strict=True))


def test_the_comb_matches_powmod(keys):
    n2 = keys[0].public_key.n_square
    base = ole.encrypt_operand(keys[0], "mul", np.array([12345], dtype=_U), 1)
    (c,) = [int.from_bytes(base, "big")]
    exponents = [
        0,
        1,
        15,
        16,
        2**64 - 1,
        2**63,
        *np.random.default_rng(3).integers(0, 2**64, 10, dtype=_U).tolist(),
    ]
    for count in (len(exponents), ole.COMB_MIN_USES - 1):  # the comb, and powmod for few rows
        rows = [[1, 7] for _ in range(count)]
        ole._raise_into(rows, 1, c, exponents[:count], n2)
        assert [r[1] for r in rows] == [7 * pow(c, e, int(n2)) % n2 for e in exponents[:count]]


def test_timings_are_measured_for_the_key_size_asked():
    timings = measure_timings(256, samples=2, repeats=1, allow_insecure_key_size=True)
    assert timings.key_bits == 256
    assert (
        min(timings.encrypt, timings.encrypt_own, timings.exponentiate, timings.multiply, timings.decrypt) > 0
    )
