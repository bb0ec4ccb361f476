"""Secret-shared tensors: products and truncation against exact results, one-time triples, views."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, RingOverflowError, TripleReuseError
from protocols.runtime import run_inprocess
from protocols.tensor import (
    TensorSession,
    from_share,
    matmul,
    matmul_public,
    mul,
    mul_public,
    reveal,
    share_input,
    truncate,
)
from protocols.tensor import ops as tensor_ops
from protocols.tensor.correlated import triple
from protocols.tensor.ops import beaver, fix_left, matmul_fixed

F = 24
ULP = 2.0**-F
DEALER = "dealer"


def holders_of(m: int) -> list[str]:
    return [f"h{i}" for i in range(m)]


def run_program(m: int, program, timeout: float = 30.0):
    """Run ``program(session)`` at every holder and the dealer; return the run."""
    holders = holders_of(m)

    def role(party):
        return program(TensorSession(party, holders=holders, dealer=DEALER, frac_bits=F))

    return run_inprocess({name: role for name in [*holders, DEALER]}, timeout=timeout)


def encoded_ints(x: np.ndarray) -> np.ndarray:
    """The signed integers the codec encodes ``x`` as (object dtype: exact Python ints)."""
    return FixedPointCodec(F).encode(x).view(np.int64).astype(object)


def floor_div(values: np.ndarray, bits: int) -> np.ndarray:
    return np.vectorize(lambda v: v >> bits, otypes=[object])(values)


def assert_within_one_ulp(revealed: np.ndarray, exact_scaled: np.ndarray, bits: int) -> None:
    """``revealed * 2^f`` must be ``floor(exact / 2^bits)`` or one more (the stated truncation bound)."""
    got = np.rint(revealed * 2.0**F).astype(np.int64).astype(object)
    low = floor_div(exact_scaled, bits)
    diff = got - low
    assert np.all((diff == 0) | (diff == 1)), diff


def share_both(session, x, y):
    """Holder 0 inputs x, the last holder inputs y."""
    first, last = session.holders[0], session.holders[-1]
    me = session.party.name
    sx = share_input(session, x if me == first else None, owner=first, shape=x.shape)
    sy = share_input(session, y if me == last else None, owner=last, shape=y.shape)
    return sx, sy


values = st.floats(-60.0, 60.0, allow_nan=False, allow_infinity=False)


@st.composite
def matmul_case(draw):
    m, n, p = (draw(st.integers(1, 5)) for _ in range(3))
    parties = draw(st.integers(2, 5))
    x = np.array(draw(st.lists(values, min_size=m * n, max_size=m * n))).reshape(m, n)
    y = np.array(draw(st.lists(values, min_size=n * p, max_size=n * p))).reshape(n, p)
    return parties, x, y


@given(matmul_case())
def test_matmul_is_exact_up_to_one_ulp(case):
    parties, x, y = case

    def program(session):
        sx, sy = share_both(session, x, y)
        return reveal(matmul(sx, sy), DEALER)

    got = run_program(parties, program).outputs[DEALER]
    exact = encoded_ints(x).dot(encoded_ints(y))  # 2f fractional bits, exact
    assert_within_one_ulp(got, exact, F)
    # against the float product: one ulp plus the encoding error of the operands
    slack = (
        ULP
        + ULP / 2 * (np.abs(x).sum(axis=1)[:, None] + np.abs(y).sum(axis=0)[None, :])
        + x.shape[1] * ULP**2
    )
    assert np.all(np.abs(got - x @ y) <= slack)


@given(st.integers(2, 5), st.integers(1, 30), st.data())
def test_elementwise_product_is_exact_up_to_one_ulp(parties, size, data):
    x = np.array(data.draw(st.lists(values, min_size=size, max_size=size)))
    y = np.array(data.draw(st.lists(values, min_size=size, max_size=size)))

    def program(session):
        sx, sy = share_both(session, x, y)
        return reveal(mul(sx, sy), DEALER)

    got = run_program(parties, program).outputs[DEALER]
    assert_within_one_ulp(got, encoded_ints(x) * encoded_ints(y), F)
    assert np.all(np.abs(got - x * y) <= ULP + ULP / 2 * (np.abs(x) + np.abs(y)) + ULP**2)


@given(st.integers(2, 5), st.integers(1, 40), st.integers(1, 40), st.data())
def test_truncation_is_floor_or_floor_plus_one(parties, size, bits, data):
    """Any value below 2^62 in magnitude, any shift: the result is floor(x / 2^bits) or one more."""
    raw = data.draw(st.lists(st.integers(-(2**62) + 1, 2**62 - 1), min_size=size, max_size=size))
    ints = np.array(raw, dtype=np.int64)
    shares = _split_ints(ints, parties)

    def program(session):
        share = shares[session.index] if session.is_holder else None
        x = from_share(session, share, ints.shape, F + bits)
        return truncate(x, bits).share

    # Summed from the holders' shares in the ring, not revealed as float64: a float64 holds
    # integers exactly only below 2^53, and truncated values here reach 2^61.
    outputs = run_program(parties, program).outputs
    total = np.sum([outputs[h] for h in holders_of(parties)], axis=0, dtype=np.uint64)
    diff = total.view(np.int64).astype(object) - floor_div(ints.astype(object), bits)
    assert np.all((diff == 0) | (diff == 1)), diff


@pytest.mark.parametrize("bits", [1, 24, 40])
def test_truncation_is_exact_up_to_one_at_the_extremes_of_its_range(bits):
    """Values next to +-2^62 make the masked opening wrap for about half of the dealer's masks,
    which small values (the bulk of random draws) almost never do; 100 copies of each value."""
    extremes = [2**62 - 1, -(2**62) + 1, 2**61 + 12345, -(2**61), 3 << 60, 0, 1, -1]
    ints = np.repeat(np.array(extremes, dtype=np.int64), 100)
    shares = _split_ints(ints, 3)

    def program(session):
        share = shares[session.index] if session.is_holder else None
        return truncate(from_share(session, share, ints.shape, F + bits), bits).share

    outputs = run_program(3, program).outputs
    total = np.sum([outputs[h] for h in holders_of(3)], axis=0, dtype=np.uint64)
    diff = total.view(np.int64).astype(object) - floor_div(ints.astype(object), bits)
    assert np.all((diff == 0) | (diff == 1)), diff


def _split_ints(ints: np.ndarray, parties: int) -> list[np.ndarray]:
    from protocols.sharing import split

    return split(ints.view(np.uint64), parties)


@given(matmul_case())
def test_public_products_are_exact_up_to_one_ulp(case):
    parties, x, y = case
    scalar = float(y.flat[0])

    def program(session):
        sx, _ = share_both(session, x, y)
        return reveal(matmul_public(sx, y), DEALER), reveal(mul_public(sx, scalar), DEALER)

    got_mat, got_scalar = run_program(parties, program).outputs[DEALER]
    assert_within_one_ulp(got_mat, encoded_ints(x).dot(encoded_ints(y)), F)
    assert_within_one_ulp(got_scalar, encoded_ints(x) * encoded_ints(np.array(scalar)), F)


def test_fixed_operand_products_match_fresh_triples():
    rng = np.random.default_rng(3)
    c = rng.normal(size=(6, 6))
    ys = [rng.normal(size=(6, 2)) for _ in range(3)]

    def program(session):
        sc, _ = share_both(session, c, ys[0])
        fixed = fix_left(sc)
        out = []
        for y in ys:
            _, sy = share_both(session, c, y)
            out.append(reveal(matmul_fixed(fixed, sy), DEALER))
        return out

    for got, y in zip(run_program(3, program).outputs[DEALER], ys, strict=True):
        assert_within_one_ulp(got, encoded_ints(c).dot(encoded_ints(y)), F)


# -- one-time correlated randomness ---------------------------------------------


def test_a_triple_cannot_be_used_twice():
    x = np.ones((2, 2))

    def program(session):
        sx, sy = share_both(session, x, x)
        tri = triple(session, "matmul", sx.shape, sy.shape)
        if not session.is_holder:
            return None
        beaver(sx, sy, tri)
        beaver(sx, sy, tri)  # must raise before sending anything
        return "reused"

    with pytest.raises(TripleReuseError, match="already used"):
        run_program(2, program)


def test_every_item_is_used_once_and_streams_differ():
    """After a program, each holder consumed exactly one item per triple and truncation."""
    x = np.arange(6.0).reshape(2, 3)

    def program(session):
        sx, sy = share_both(session, x, x.T)
        first = triple(session, "mul", (2, 2), (2, 2))
        second = triple(session, "mul", (2, 2), (2, 2))
        matmul(sx, sy)
        mul(sx, sx)
        if session.is_holder:
            assert not np.array_equal(first.a, second.a)
            return session.ledger.consumed, session.stats.triples, session.stats.truncations
        return None

    run = run_program(3, program)
    for name in holders_of(3):
        consumed, triples, truncations = run.outputs[name]
        assert triples == 4 and truncations == 2
        assert consumed == 2 + 2  # the two unused triples were never consumed


def test_reveal_reaches_only_the_named_party():
    x = np.array([1.5, -2.25])

    def program(session):
        sx, _ = share_both(session, x, x)
        return reveal(sx, "h1")

    run = run_program(3, program)
    assert np.array_equal(run.outputs["h1"], x)
    assert all(run.outputs[n] is None for n in ("h0", "h2", DEALER))
    assert run.reports[DEALER].bytes_received == 0  # the dealer received nothing at all


# -- views ---------------------------------------------------------------------------

# Masks come from the OS-seeded CSPRNG, which cannot be seeded: a tiny level keeps
# false alarms at 1e-6 per check while a leak fails by many orders of magnitude.
ALPHA = 1e-6
VIEW_SIZE = 4000


def _bit_chi_square_pvalue(words: np.ndarray) -> float:
    """Chi-square test that each of the 64 bit positions is 1 half the time."""
    bits = np.unpackbits(words.astype("<u8").view(np.uint8)).reshape(-1, 64)
    ones = bits.sum(axis=0)
    n = bits.shape[0]
    return float(stats.chi2.sf(np.sum((2 * ones - n) ** 2 / n), df=64))


def _view(party_name: str, value_x: float, value_y: float, monkeypatch, m: int = 3) -> np.ndarray:
    """What ``party_name`` sees while computing ``x * y`` (elementwise) and revealing it to the dealer.

    Every ring word it receives, and for a holder also every value it learns in
    an opening (the sum of all holders' masked shares), which is where an
    unmasked opening would show even if each message looked random.
    """
    x = np.full(VIEW_SIZE, value_x)
    y = np.full(VIEW_SIZE, value_y)
    received: list[np.ndarray] = []
    recording = {"on": False}
    original_open = tensor_ops._open

    def recording_open(session, arrays):
        totals = original_open(session, arrays)
        if recording["on"] and session.party.name == party_name:
            received.extend(t.copy() for t in totals)
        return totals

    monkeypatch.setattr(tensor_ops, "_open", recording_open)

    def program(session):
        party = session.party
        if party.name == party_name:
            original = party.recv

            def recording_recv(frm, timeout=None):
                message = original(frm, timeout)
                items = message if isinstance(message, list) else [message]
                if recording["on"]:
                    received.extend(a.copy() for a in items if isinstance(a, np.ndarray))
                return message

            party.recv = recording_recv  # type: ignore[method-assign]
        session.start()
        sx, sy = share_both(session, x, y)
        product = mul(sx, sy)  # the dealer may run ahead: its words are recorded when read
        return product, reveal(product, DEALER)

    recording["on"] = True  # sharing the inputs is seeds only; record the product and the reveal
    run_program(m, program)
    return np.concatenate(received)


@pytest.mark.parametrize("who", ["h0", "h2", DEALER])
def test_view_of_a_product_is_independent_of_the_inputs(who, monkeypatch):
    """Holders (including the last one, which gets the dealer's words) and the dealer see uniform words."""
    zero = _view(who, 0.0, 0.0, monkeypatch)
    big = _view(who, 1234.5678, -987.654, monkeypatch)
    assert zero.size == big.size > 0
    assert _bit_chi_square_pvalue(zero) > ALPHA
    assert _bit_chi_square_pvalue(big) > ALPHA
    assert stats.ks_2samp(zero >> np.uint64(32), big >> np.uint64(32)).pvalue > ALPHA


def test_view_test_would_catch_an_unmasked_opening():
    leaked = FixedPointCodec(F).encode(np.full(VIEW_SIZE, 1234.5678))
    assert _bit_chi_square_pvalue(leaked) < ALPHA


# -- bad inputs ----------------------------------------------------------------------


def test_input_too_large_for_the_ring_is_refused_before_sending():
    def program(session):
        return share_input(
            session, np.array([2.0**40]) if session.party.name == "h0" else None, owner="h0", shape=(1,)
        )

    with pytest.raises(RingOverflowError, match="magnitude"):
        run_program(2, program, timeout=5)


def test_bad_sessions_and_shapes_are_refused():
    def program(session):
        sx, sy = share_both(session, np.ones((2, 3)), np.ones((2, 3)))
        return matmul(sx, sy)

    with pytest.raises(InputValidationError, match="cannot matrix-multiply"):
        run_program(2, program, timeout=5)

    def single(party):
        return TensorSession(party, holders=["h0"], dealer=DEALER)

    with pytest.raises(InputValidationError, match="at least 2 holders"):
        run_inprocess({"h0": single, DEALER: single}, timeout=5)


def test_truncation_of_a_multiple_of_the_shift_is_exact():
    """With zero low bits there is no carry: the result must be exact, at any party count."""
    ints = np.array([3 << 30, -(5 << 30), 0], dtype=np.int64)
    shares = _split_ints(ints, 4)

    def program(session):
        share = shares[session.index] if session.is_holder else None
        return reveal(truncate(from_share(session, share, (3,), F + 30), 30), DEALER)

    got = run_program(4, program).outputs[DEALER]
    assert np.array_equal(got * 2.0**F, [3.0, -5.0, 0.0])


def _dealer_attack(reveal_with_resharing: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The dealer knows every mask share; it tries to solve holders' output shares for ``E = X - A``.

    Holder ``i``'s share of a Beaver product is ``c_i + E b_i + a_i F`` (plus
    ``E F`` at holder 0). With the raw shares of holders 1 and 2 the dealer
    has two linear equations in ``E`` and ``F`` per entry, solvable mod 2^64
    whenever the determinant is odd. Returns (true x, recovered x, usable mask).
    """
    size = 300
    rng = np.random.default_rng(11)
    x = rng.uniform(-100, 100, size)
    y = rng.uniform(-100, 100, size)
    shares: dict[str, np.ndarray] = {}

    def program(session):
        party = session.party
        if session.is_dealer:
            original = party.recv

            def recording(frm, timeout=None):
                message = original(frm, timeout)
                shares[frm] = message.copy()
                return message

            party.recv = recording  # type: ignore[method-assign]
        sx, sy = share_both(session, x, y)
        tri = triple(session, "mul", (size,), (size,))
        z = beaver(sx, sy, tri) if session.is_holder else from_share(session, None, (size,), 2 * F)
        if not reveal_with_resharing:
            session.zero_share = lambda shape: np.zeros(shape, dtype=np.uint64)  # type: ignore[method-assign]
        revealed = reveal(z, DEALER)
        return session if session.is_dealer else revealed

    session = run_program(3, program).outputs[DEALER]
    streams = session.dealer_streams(0)  # the triple was operation 0
    a, b, c = [], [], []
    for stream in streams:
        a.append(stream.ring_elements((size,)))
        b.append(stream.ring_elements((size,)))
        c.append(stream.ring_elements((size,)))
    c[2] += sum(a) * sum(b) - sum(c)  # the last holder's correction
    r1 = shares["h1"] - c[1]
    r2 = shares["h2"] - c[2]
    det = b[1] * a[2] - a[1] * b[2]
    usable = (det & np.uint64(1)) == 1
    inverse = np.array([pow(int(v), -1, 2**64) if v & 1 else 0 for v in det.tolist()], dtype=np.uint64)
    recovered_e = (r1 * a[2] - r2 * a[1]) * inverse
    recovered_x = (recovered_e + sum(a)).view(np.int64) / 2.0**F
    return FixedPointCodec(F).decode(FixedPointCodec(F).encode(x)), recovered_x, usable


def test_the_dealer_cannot_unmask_a_product_from_the_reveal():
    true_x, recovered, usable = _dealer_attack()
    assert usable.sum() > 50
    assert np.mean(np.isclose(recovered[usable], true_x[usable], atol=1e-6)) < 0.05


def test_dealer_attack_works_without_the_resharing():
    """Control: without the zero re-sharing the dealer would read the input exactly."""
    true_x, recovered, usable = _dealer_attack(reveal_with_resharing=False)
    assert np.allclose(recovered[usable], true_x[usable], atol=1e-6)
