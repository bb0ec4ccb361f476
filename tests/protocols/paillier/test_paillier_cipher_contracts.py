"""Exact contracts of :mod:`protocols.paillier.cipher` checked on toy keys.

The key classes accept any odd modulus, so a toy key (``n = 11 * 13``) makes
exhaustive checks cheap. Properties covered:

* ``random_units`` keeps exactly the draws that are units of ``Z_n`` (0 and
  multiples of a prime factor are skipped, 1 is kept), in draw order, and
  reaches every unit;
* encryption and decryption are inverse on every plaintext of ``[0, n)``, and
  decryption agrees with python-paillier (independent oracle) on every value
  of its accepted domain ``[0, n^2)``, whose both ends are checked;
* refusals open with what was wrong and name the offending position and
  bound: plaintext outside ``[0, n)`` (the message ends with the way out,
  ``to_residue``), ciphertext outside ``[0, n^2)``, randomness of another
  key, an empty ``add_many``;
* a randomness source returning too few obfuscators is an error, never a
  silently shortened ciphertext list;
* signed residues: ``|value| < n/2`` is accepted exactly up to the limit,
  ``from_residue`` picks the representative in ``(-n/2, n/2]`` (``n/2``
  itself stays positive for an even modulus) and inverts ``to_residue``.
"""

from __future__ import annotations

import math

import pytest
from gmpy2 import mpz
from phe import paillier as phe_paillier

from protocols.errors import InputValidationError
from protocols.paillier import cipher
from protocols.paillier.keys import PaillierPrivateKey, PaillierPublicKey

P, Q = 11, 13
N = P * Q  # 143, odd, gcd(n, (p-1)(q-1)) = 1


@pytest.fixture(scope="module")
def toy():
    public = PaillierPublicKey(N)
    return public, PaillierPrivateKey(public, P, Q)


# -- randomness -----------------------------------------------------------------------------


def test_random_units_keep_exactly_the_units_in_draw_order(monkeypatch):
    n = mpz(15)
    script = iter([0, 3, 1, 5, 10, 2, 6, 14])  # 0 and multiples of 3 or 5 are not units
    bounds = []

    def scripted_randbelow(bound):
        bounds.append(bound)
        return next(script)

    monkeypatch.setattr(cipher.secrets, "randbelow", scripted_randbelow)
    assert cipher.random_units(n, 3) == [1, 2, 14]
    assert set(bounds) == {15}


def test_random_units_reach_every_unit_and_nothing_else():
    # 2000 draws over the 8 units of Z_15: a unit is missed with probability < 8 (7/8)^2000 < 1e-110.
    draws = cipher.random_units(mpz(15), 2000)
    assert set(draws) == {r for r in range(15) if math.gcd(r, 15) == 1}


def test_a_short_randomness_source_is_an_error_not_fewer_ciphertexts(toy):
    public, _ = toy

    class ShortSource:
        public_key = public

        def obfuscators(self, count):
            return cipher.StandardRandomness(public).obfuscators(count - 1)

    with pytest.raises(ValueError):
        cipher.encrypt(public, [1, 2, 3], ShortSource())


def test_randomness_of_another_key_is_refused(toy):
    public, _ = toy
    other = cipher.StandardRandomness(PaillierPublicKey(17 * 19))
    with pytest.raises(
        InputValidationError, match=r"^the randomness source belongs to a different public key"
    ):
        cipher.encrypt(public, [1], other)


# -- encryption and decryption ------------------------------------------------------------


def test_every_plaintext_round_trips(toy):
    public, private = toy
    plaintexts = list(range(N))
    assert cipher.decrypt(private, cipher.encrypt(public, plaintexts)) == plaintexts


def test_decryption_matches_python_paillier_on_its_whole_domain(toy):
    _, private = toy
    phe_public = phe_paillier.PaillierPublicKey(N)
    oracle = phe_paillier.PaillierPrivateKey(phe_public, P, Q)
    domain = list(range(N * N))  # includes 0 and multiples of p or q, which no encryption yields
    assert [int(m) for m in cipher.decrypt(private, domain)] == [oracle.raw_decrypt(c) for c in domain]


def test_ciphertext_range_is_zero_inclusive_to_n_squared_exclusive(toy):
    _, private = toy
    assert len(cipher.decrypt(private, [0, N * N - 1])) == 2
    for bad in (N * N, -1):
        with pytest.raises(InputValidationError, match=r"ciphertext #1 is outside \[0, n\^2\)"):
            cipher.decrypt(private, [5, bad])


def test_plaintext_out_of_range_points_to_to_residue(toy):
    public, _ = toy
    for bad in (N, -1):
        with pytest.raises(InputValidationError) as info:
            cipher.encrypt(public, [0, bad])
        message = str(info.value)
        assert "plaintext #1 is outside [0, n) for a 8-bit key" in message
        assert message.startswith("plaintext #1 ")
        assert message.endswith("reduce it modulo n (signed values: use to_residue)")  # the way out, last


def test_add_many_of_nothing_is_refused(toy):
    public, _ = toy
    with pytest.raises(InputValidationError, match=r"^add_many needs at least one ciphertext list"):
        cipher.add_many(public, [])


# -- signed residues ------------------------------------------------------------------------


def test_signed_values_are_accepted_exactly_below_half_the_modulus():
    half = (N - 1) // 2  # 71: the largest |value| with 2 |value| < 143
    assert cipher.to_residue(half, mpz(N)) == half
    assert cipher.to_residue(-half, mpz(N)) == N - half
    for bad in (half + 1, -(half + 1)):
        with pytest.raises(InputValidationError, match=rf"below n/2 .* got {bad}$"):
            cipher.to_residue(bad, mpz(N))


def test_half_of_an_even_modulus_is_refused_and_decodes_as_positive():
    n = mpz(10)
    with pytest.raises(InputValidationError, match=r"got 5$"):
        cipher.to_residue(5, n)
    with pytest.raises(InputValidationError, match=r"got -5$"):
        cipher.to_residue(-5, n)
    assert cipher.from_residue(5, n) == 5  # (-n/2, n/2] includes n/2
    assert cipher.from_residue(6, n) == -4


@pytest.mark.parametrize("n", [N, 10])
def test_from_residue_inverts_to_residue_on_every_encodable_value(n):
    modulus = mpz(n)
    for value in range(-((n - 1) // 2), (n - 1) // 2 + 1):
        residue = cipher.to_residue(value, modulus)
        assert 0 <= residue < n
        assert cipher.from_residue(residue, modulus) == value
