"""Base OTs (Chou-Orlandi over RFC 3526 group 14): the chosen keys, the group, refused elements."""

from __future__ import annotations

import gmpy2
import numpy as np
import pytest

from protocols.errors import ProtocolError
from protocols.ot import group
from protocols.ot.base import BASE_OTS, KEY_BYTES, base_ots
from protocols.runtime import run_inprocess

PEERS = ("p0", "p1", "p2")


def test_the_group_is_rfc_3526_group_14():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 2200
    pi_bits = int(mpmath.floor(mpmath.mpf(2) ** 1918 * mpmath.pi))
    rfc_prime = 2**2048 - 2**1984 - 1 + 2**64 * (pi_bits + 124476)  # RFC 3526 section 3
    assert rfc_prime == group.P
    assert gmpy2.is_prime(group.P, 40) and gmpy2.is_prime(group.Q, 40)
    assert group.power(group.G, group.Q) == 1  # 2 generates the order-q subgroup


def test_every_provider_chose_exactly_one_of_the_two_offered_keys():
    def role(party):
        return base_ots(party, [p for p in PEERS if p != party.name])

    out = run_inprocess(dict.fromkeys(PEERS, role), timeout=120).outputs
    for sender in PEERS:
        for receiver in PEERS:
            if sender == receiver:
                continue
            offered = out[sender][0][receiver]
            chosen = out[receiver][1][sender]
            assert len(chosen.keys) == BASE_OTS and chosen.choices.shape == (BASE_OTS,)
            assert 20 < int(chosen.choices.sum()) < BASE_OTS - 20  # secret choice bits, both values used
            for i, choice in enumerate(chosen.choices):
                other = offered.keys0[i] if choice else offered.keys1[i]
                assert chosen.keys[i] == (offered.keys1[i] if choice else offered.keys0[i])
                assert other != chosen.keys[i] and len(other) == KEY_BYTES
    assert len({k for p in PEERS for o in out[p][0].values() for k in o.keys0 + o.keys1}) == 2 * 6 * BASE_OTS


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (group.element_to_bytes(gmpy2.mpz(1)), "outside the base-OT group"),
        (group.element_to_bytes(group.P - 1), "outside the base-OT group"),
        (group.element_to_bytes(group.P - 2), "outside the base-OT group"),  # -2 is a non-residue mod p
        (b"\x00" * 255, "255, expected 256 bytes"),
        ([1, 2], "list, expected 256 bytes"),
    ],
)
def test_a_bad_group_element_is_refused_naming_the_sender(raw, match):
    with pytest.raises(ProtocolError, match=rf"'mallory'.*{match}|{match}"):
        group.element_from_bytes(raw, sender="mallory")


def test_a_peer_sending_a_bad_element_stops_the_base_ots_with_its_name():
    def honest(party):
        return base_ots(party, ["mallory"])

    def mallory(party):
        party.send("honest", group.element_to_bytes(group.P - 2))
        party.recv("honest")
        return None

    with pytest.raises(Exception, match="'mallory' sent a value outside the base-OT group"):
        run_inprocess({"honest": honest, "mallory": mallory}, timeout=30)


def test_a_short_answer_list_is_refused():
    def honest(party):
        return base_ots(party, ["mallory"])

    def mallory(party):
        party.send("honest", group.element_to_bytes(group.power(group.G, group.random_exponent())))
        party.recv("honest")
        party.recv("honest")
        party.send("honest", [group.element_to_bytes(group.G)] * (BASE_OTS - 1))
        return None

    with pytest.raises(
        Exception, match=f"'mallory' sent {BASE_OTS - 1} answers for its base OTs, expected {BASE_OTS}"
    ):
        run_inprocess({"honest": honest, "mallory": mallory}, timeout=30)


def test_exponents_are_fresh_and_full_width():
    draws = [group.random_exponent() for _ in range(64)]
    assert len(set(draws)) == 64
    assert max(int(d).bit_length() for d in draws) == group.EXPONENT_BITS
    assert np.mean([int(d).bit_length() >= group.EXPONENT_BITS - 4 for d in draws]) > 0.8
