"""Shamir secret sharing (:mod:`protocols.shamir`): properties, validation, and lying shares."""

import itertools

import gmpy2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import InputValidationError, ProtocolError
from protocols.shamir import (
    PRIME,
    SHARE_BYTES,
    InconsistentSharesError,
    Share,
    check_threshold,
    reconstruct,
    reconstruct_bytes,
    split,
    split_bytes,
)

secrets_256 = st.integers(min_value=0, max_value=(1 << 256) - 1)


@st.composite
def sharing_plans(draw):
    n = draw(st.integers(min_value=2, max_value=8))
    t = draw(st.integers(min_value=2, max_value=n))
    return n, t


def test_the_field_is_the_smallest_prime_above_2_to_the_256():
    assert gmpy2.is_prime(PRIME, 64)
    assert all(not gmpy2.is_prime((1 << 256) + k, 64) for k in range(1, 297))


@settings(max_examples=60, deadline=None)
@given(secret=secrets_256, plan=sharing_plans(), data=st.data())
def test_any_threshold_subset_reconstructs_the_secret(secret, plan, data):
    n, t = plan
    shares = split(secret, n, t)
    assert [s.x for s in shares] == list(range(1, n + 1))
    subset = data.draw(st.lists(st.sampled_from(shares), min_size=t, max_size=n, unique=True))
    assert reconstruct(subset, t) == secret


@settings(max_examples=40, deadline=None)
@given(secret=st.binary(min_size=32, max_size=32), plan=sharing_plans())
def test_byte_secrets_round_trip_through_wire_bytes(secret, plan):
    n, t = plan
    shares = split_bytes(secret, n, t)
    wire = [(s.x, s.to_bytes()) for s in shares]
    assert all(len(b) == SHARE_BYTES for _, b in wire)
    parsed = [Share.from_bytes(x, b, sender=f"p{x}") for x, b in wire]
    assert reconstruct_bytes(parsed[-t:], t) == secret


@settings(max_examples=30, deadline=None)
@given(
    secret=secrets_256, plan=sharing_plans(), liar=st.integers(min_value=0), delta=st.integers(1, PRIME - 1)
)
def test_one_lying_share_is_named_when_two_more_than_threshold_are_given(secret, plan, liar, delta):
    n, t = plan
    shares = split(secret, n, t)
    if n < t + 2:
        shares = split(secret, t + 2, t)
    i = liar % len(shares)
    bad = Share(shares[i].x, (shares[i].y + delta) % PRIME)
    given_shares = [*shares[:i], bad, *shares[i + 1 :]]
    holders = {s.x: f"provider{s.x - 1}" for s in given_shares}
    with pytest.raises(InconsistentSharesError, match=f"provider{bad.x - 1}") as err:
        reconstruct(given_shares, t, holders=holders)
    assert err.value.suspects == (bad.x,)
    assert isinstance(err.value, ProtocolError)


def test_a_lie_among_threshold_plus_one_is_detected_but_not_named():
    shares = split(12345, 4, 3)
    bad = [*shares[:3], Share(4, (shares[3].y + 1) % PRIME)]
    with pytest.raises(InconsistentSharesError, match="cannot be singled out") as err:
        reconstruct(bad, 3)
    assert err.value.suspects == ()


def test_exactly_threshold_shares_cannot_be_checked_and_give_some_value():
    shares = split(7, 3, 3)
    assert reconstruct(shares, 3) == 7
    assert reconstruct([*shares[:2], Share(3, (shares[2].y + 1) % PRIME)], 3) != 7


@pytest.mark.parametrize(
    ("t", "n", "match"),
    [(1, 5, "threshold=1 is below 2"), (6, 5, "threshold=6 exceeds the number of shares n=5"),
     (True, 5, "threshold must be an integer"), (2, "5", "n_shares must be an integer")],
)  # fmt: skip
def test_invalid_thresholds_are_refused_naming_value_and_limit(t, n, match):
    with pytest.raises(InputValidationError, match=match):
        check_threshold(t, n)
    with pytest.raises(InputValidationError, match=match):
        split(1, n, t)


def test_reconstruction_input_is_validated():
    shares = split(99, 5, 3)
    with pytest.raises(
        InputValidationError, match="2 share\\(s\\) given; rebuilding needs at least threshold=3"
    ):
        reconstruct(shares[:2], 3)
    with pytest.raises(InputValidationError, match="distinct"):
        reconstruct([shares[0], shares[0], shares[1]], 3)
    with pytest.raises(InputValidationError, match="secret must be an integer"):
        split(PRIME, 3, 2)
    with pytest.raises(InputValidationError, match="32 bytes"):
        split_bytes(b"short", 3, 2)


@pytest.mark.parametrize("data", [b"x" * 32, PRIME.to_bytes(SHARE_BYTES, "big"), "text"])
def test_malformed_wire_shares_are_refused_naming_the_sender(data):
    with pytest.raises(ProtocolError, match="'provider3'"):
        Share.from_bytes(1, data, sender="provider3")


def test_coefficients_are_fresh_per_split():
    a, b = split(5, 3, 3), split(5, 3, 3)
    assert [s.y for s in a] != [s.y for s in b]
    assert all(reconstruct(list(c), 3) == 5 for c in itertools.combinations(a, 3))
