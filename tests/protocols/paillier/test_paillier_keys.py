"""Paillier keys: sizes, CSPRNG primes, CRT constants, serialisation."""

from __future__ import annotations

import gmpy2
import pytest

from protocols.errors import InputValidationError, WireFormatError
from protocols.paillier.keys import (
    MIN_INSECURE_KEY_BITS,
    SECURE_KEY_BITS,
    PaillierPrivateKey,
    PaillierPublicKey,
    check_key_bits,
    generate_keypair,
)
from protocols.paillier.serialize import public_key_from_bytes, public_key_to_bytes


@pytest.mark.parametrize("bits", SECURE_KEY_BITS)
def test_secure_sizes_generate_keys_of_exact_length(bits):
    public, private = generate_keypair(bits)
    assert public.bits == bits
    assert private.p.bit_length() == private.q.bit_length() == bits // 2
    assert private.p != private.q
    assert gmpy2.is_prime(private.p) and gmpy2.is_prime(private.q)
    assert gmpy2.gcd(public.n, (private.p - 1) * (private.q - 1)) == 1
    assert public.g == public.n + 1


def test_default_is_2048_bits():
    assert generate_keypair().public_key.bits == 2048


@pytest.mark.parametrize("bits", [1024, 512, 4096, 2047, 0, -2048])
def test_other_sizes_are_refused_without_the_insecure_flag(bits):
    with pytest.raises(InputValidationError, match=f"key_bits={bits}"):
        generate_keypair(bits)


@pytest.mark.parametrize("bits", [2048.0, "2048", True, None])
def test_key_bits_must_be_an_integer(bits):
    with pytest.raises(InputValidationError, match="integer"):
        check_key_bits(bits)


def test_insecure_flag_allows_small_even_sizes_only():
    assert generate_keypair(512, allow_insecure_key_size=True).public_key.bits == 512
    assert check_key_bits(MIN_INSECURE_KEY_BITS, allow_insecure_key_size=True) == MIN_INSECURE_KEY_BITS
    with pytest.raises(InputValidationError, match="at least 256"):
        check_key_bits(128, allow_insecure_key_size=True)
    with pytest.raises(InputValidationError, match="odd"):
        check_key_bits(1023, allow_insecure_key_size=True)


def test_keys_differ_between_calls():
    first = generate_keypair(512, allow_insecure_key_size=True).public_key
    second = generate_keypair(512, allow_insecure_key_size=True).public_key
    assert first != second


def test_private_key_repr_hides_the_factors():
    public, private = generate_keypair(512, allow_insecure_key_size=True)
    text = repr(private) + repr(public)
    assert str(int(private.p)) not in text and hex(int(private.p))[2:] not in text


def test_private_key_validation():
    public, private = generate_keypair(512, allow_insecure_key_size=True)
    with pytest.raises(InputValidationError, match="does not equal"):
        PaillierPrivateKey(public, private.p, private.q + 2)
    with pytest.raises(InputValidationError, match="distinct"):
        PaillierPrivateKey(PaillierPublicKey(private.p * private.p), private.p, private.p)
    composite = private.p * 3
    with pytest.raises(InputValidationError, match="prime"):
        PaillierPrivateKey(PaillierPublicKey(composite * private.q), composite, private.q)


def test_public_key_rejects_even_or_tiny_moduli():
    with pytest.raises(InputValidationError):
        PaillierPublicKey(2**512)
    with pytest.raises(InputValidationError):
        PaillierPublicKey(9)


def test_public_key_bytes_round_trip_with_size_checks():
    public = generate_keypair(1024, allow_insecure_key_size=True).public_key
    data = public_key_to_bytes(public)
    assert len(data) == 128
    assert public_key_from_bytes(data, 1024) == public
    with pytest.raises(WireFormatError, match="128 bytes"):
        public_key_from_bytes(data[:-1], 1024)
    with pytest.raises(WireFormatError, match="2048-bit"):
        public_key_from_bytes(data, 2048)
    with pytest.raises(WireFormatError, match="1024-bit"):
        public_key_from_bytes(b"\x00" + data[1:], 1024)
    with pytest.raises(WireFormatError):
        public_key_from_bytes(data[:-1] + b"\x02", 1024)  # even modulus
    with pytest.raises(WireFormatError):
        public_key_from_bytes(int(public.n), 1024)
