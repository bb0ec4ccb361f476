"""Raw Paillier arithmetic, the phe oracle (both directions), randomness sources, serialisation."""

from __future__ import annotations

import gmpy2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from phe import paillier as phe_paillier

from protocols.errors import InputValidationError, WireFormatError
from protocols.paillier import cipher
from protocols.paillier.keys import generate_keypair
from protocols.paillier.parallel import decrypt_parallel, encrypt_parallel, worth_parallel
from protocols.paillier.precompute import FixedBaseRandomness, FixedBaseTable
from protocols.paillier.serialize import ciphertexts_from_bytes, ciphertexts_to_bytes

BITS = 1024  # test-only size (allow_insecure_key_size) to keep the suite fast
# n has exactly BITS bits, so these ranges are inside [0, n) and (-n/2, n/2) for every key.
plaintexts = st.integers(0, 2 ** (BITS - 1) - 1)
signed = st.integers(-(2 ** (BITS - 3)), 2 ** (BITS - 3))


@pytest.fixture(scope="module")
def key():
    return generate_keypair(BITS, allow_insecure_key_size=True)


@pytest.fixture(scope="module")
def phe_key(key):
    """The same p, q as python-paillier objects."""
    public = phe_paillier.PaillierPublicKey(int(key.public_key.n))
    return public, phe_paillier.PaillierPrivateKey(public, int(key.private_key.p), int(key.private_key.q))


@given(st.lists(plaintexts, min_size=1, max_size=5))
def test_encrypt_decrypt_round_trip(key, values):
    pub, priv = key
    ciphertexts = cipher.encrypt(pub, values)
    assert all(0 < c < pub.n_square for c in ciphertexts)
    assert cipher.decrypt(priv, ciphertexts) == values


def test_encryption_is_randomised(key):
    pub, priv = key
    first, second = cipher.encrypt(pub, [7, 7])
    assert first != second
    assert cipher.decrypt(priv, [first, second]) == [7, 7]


@given(st.lists(st.tuples(signed, signed), min_size=1, max_size=4))
def test_addition_is_homomorphic_for_signed_residues(key, pairs):
    pub, priv = key
    a = cipher.encrypt(pub, [cipher.to_residue(x, pub.n) for x, _ in pairs])
    b = cipher.encrypt(pub, [cipher.to_residue(y, pub.n) for _, y in pairs])
    total = cipher.decrypt(priv, cipher.add(pub, a, b))
    expected = [cipher.from_residue(x + y, pub.n) for x, y in pairs]
    assert [cipher.from_residue(m, pub.n) for m in total] == expected


@given(
    st.lists(
        st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**40), 2**40)), min_size=1, max_size=4
    )
)
def test_scalar_multiplication_per_element_and_shared(key, pairs):
    pub, priv = key
    xs = [x for x, _ in pairs]
    ks = [k for _, k in pairs]
    encrypted = cipher.encrypt(pub, [cipher.to_residue(x, pub.n) for x in xs])
    per_element = cipher.decrypt(priv, cipher.multiply(pub, encrypted, ks))
    assert [cipher.from_residue(m, pub.n) for m in per_element] == [k * x for x, k in pairs]
    shared = cipher.decrypt(priv, cipher.multiply(pub, encrypted, -3))
    assert [cipher.from_residue(m, pub.n) for m in shared] == [-3 * x for x in xs]


def test_add_many_and_length_checks(key):
    pub, priv = key
    parts = [cipher.encrypt(pub, [i, 10 * i]) for i in range(1, 5)]
    assert cipher.decrypt(priv, cipher.add_many(pub, parts)) == [10, 100]
    with pytest.raises(InputValidationError, match="lengths 2 and 1"):
        cipher.add(pub, parts[0], parts[1][:1])
    with pytest.raises(InputValidationError, match="one per ciphertext"):
        cipher.multiply(pub, parts[0], [1, 2, 3])
    with pytest.raises(InputValidationError):
        cipher.add_many(pub, [])


@pytest.mark.parametrize("offset", [-1, 0, 5])
def test_plaintexts_outside_zn_are_refused(key, offset):
    bad = -1 if offset < 0 else int(key.public_key.n) + offset
    with pytest.raises(InputValidationError, match=r"outside \[0, n\)"):
        cipher.encrypt(key.public_key, [bad])


def test_signed_residue_limits(key):
    pub = key.public_key
    with pytest.raises(InputValidationError, match="n/2"):
        cipher.to_residue(int(pub.n) // 2 + 1, pub.n)
    assert cipher.from_residue(cipher.to_residue(-5, pub.n), pub.n) == -5


# -- phe (python-paillier) as an independent oracle, same p and q -------------------------------


@given(st.lists(plaintexts, min_size=1, max_size=3))
def test_our_ciphertexts_decrypt_with_phe(key, phe_key, values):
    pub, phe_priv = key.public_key, phe_key[1]
    for value, c in zip(values, cipher.encrypt(pub, values), strict=True):
        assert phe_priv.raw_decrypt(int(c)) == value


@given(st.lists(plaintexts, min_size=1, max_size=3))
def test_phe_ciphertexts_decrypt_with_ours(key, phe_key, values):
    priv, phe_pub = key.private_key, phe_key[0]
    ciphertexts = [phe_pub.raw_encrypt(v) for v in values]
    assert cipher.decrypt(priv, ciphertexts) == values


@given(st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62))
def test_signed_integers_agree_with_phe_encoding_and_addition(key, phe_key, x, y):
    (pub, priv), (phe_pub, phe_priv) = key, phe_key
    # phe encodes an int with exponent 0 as x mod n: the same residue as ours.
    phe_x = phe_pub.encrypt(x)
    assert phe_x.exponent == 0
    ours_y = cipher.encrypt(pub, [cipher.to_residue(y, pub.n)])[0]
    phe_sum = phe_x + phe_paillier.EncryptedNumber(phe_pub, int(ours_y), 0)
    assert cipher.from_residue(cipher.decrypt(priv, [phe_sum.ciphertext(be_secure=False)])[0], pub.n) == x + y
    ours_sum = cipher.add(pub, [phe_x.ciphertext(be_secure=False)], [ours_y])[0]
    assert phe_priv.decrypt(phe_paillier.EncryptedNumber(phe_pub, int(ours_sum), 0)) == x + y


def test_phe_oracle_at_the_default_2048_bits():
    public, private = generate_keypair()
    phe_pub = phe_paillier.PaillierPublicKey(int(public.n))
    phe_priv = phe_paillier.PaillierPrivateKey(phe_pub, int(private.p), int(private.q))
    values = [0, 1, 2**64 - 1, int(public.n) - 1]
    assert [phe_priv.raw_decrypt(int(c)) for c in cipher.encrypt(public, values)] == values
    assert cipher.decrypt(private, [phe_pub.raw_encrypt(v) for v in values]) == values


# -- randomness sources ---------------------------------------------------------------------------


def test_fixed_base_table_matches_powmod(key):
    modulus = key.public_key.n_square
    table = FixedBaseTable(12345, modulus, exponent_bits=70, window_bits=5)
    for e in [0, 1, 31, 32, 2**69 + 17, 2**70 - 1]:
        assert table.power(e) == gmpy2.powmod(12345, e, modulus)
    with pytest.raises(InputValidationError, match="2\\^70"):
        table.power(2**70)


def test_fixed_base_randomness_gives_valid_distinct_encryptions(key):
    pub, priv = key
    n = int(pub.n)
    source = FixedBaseRandomness(pub)
    assert source.exponent_bits == 512
    rhos = source.obfuscators(4)
    assert len(set(rhos)) == 4
    # each obfuscator is an n-th residue: it decrypts to 0
    assert cipher.decrypt(priv, rhos) == [0, 0, 0, 0]
    values = [3, n - 3, 0]
    assert cipher.decrypt(priv, cipher.encrypt(pub, values, source)) == values
    assert source.table_bytes == 64 * 255 * pub.ciphertext_bytes


def test_fixed_base_exponent_below_half_the_modulus_is_refused(key):
    with pytest.raises(InputValidationError, match="half of n's length"):
        FixedBaseRandomness(key.public_key, exponent_bits=256)


def test_randomness_of_another_key_is_refused(key):
    pub = key.public_key
    other = generate_keypair(512, allow_insecure_key_size=True).public_key
    with pytest.raises(InputValidationError, match="different public key"):
        cipher.encrypt(pub, [1], cipher.StandardRandomness(other))


# -- serialisation --------------------------------------------------------------------------------


def test_ciphertext_bytes_are_fixed_width_and_round_trip(key):
    pub = key.public_key
    ciphertexts = cipher.encrypt(pub, [1, 2, 3])
    data = ciphertexts_to_bytes(pub, ciphertexts)
    assert len(data) == 3 * pub.ciphertext_bytes == 3 * 256
    assert ciphertexts_from_bytes(pub, data, 3) == ciphertexts


def test_malformed_ciphertext_bytes_raise_wire_errors(key):
    pub = key.public_key
    data = ciphertexts_to_bytes(pub, cipher.encrypt(pub, [1, 2]))
    with pytest.raises(WireFormatError, match="expected 3 ciphertexts"):
        ciphertexts_from_bytes(pub, data, 3)
    with pytest.raises(WireFormatError, match="multiple"):
        ciphertexts_from_bytes(pub, data[:-1])
    with pytest.raises(WireFormatError, match=r"\[1, n\^2\)"):
        ciphertexts_from_bytes(pub, b"\xff" * pub.ciphertext_bytes)
    with pytest.raises(WireFormatError, match=r"\[1, n\^2\)"):
        ciphertexts_from_bytes(pub, bytes(pub.ciphertext_bytes))
    with pytest.raises(WireFormatError, match="bytes"):
        ciphertexts_from_bytes(pub, [1, 2])


# -- worker processes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "processes"),
    [("standard", None), ("standard", True), ("fixed-base", None), ("fixed-base", False)],
)
def test_parallel_encryption_and_decryption_are_correct(key, mode, processes):
    pub, priv = key
    values = [int(v) for v in np.arange(9) * 1000 + 1]
    ciphertexts = encrypt_parallel(pub, values, workers=2, mode=mode, processes=processes)
    assert len(set(ciphertexts)) == len(values)
    assert cipher.decrypt(priv, ciphertexts) == values
    assert decrypt_parallel(priv, ciphertexts, workers=2) == values
    assert decrypt_parallel(priv, ciphertexts, workers=20) == values


def test_worker_process_rejects_bad_requests(key):
    from protocols.paillier.worker import handle

    with pytest.raises(WireFormatError, match="unknown worker operation"):
        handle({"op": "decrypt"})
    with pytest.raises(WireFormatError, match="randomness mode"):
        handle({"op": "encrypt", "n": key.public_key.to_bytes(), "plaintexts": b"", "mode": "fast"})
    with pytest.raises(WireFormatError, match="whole number"):
        handle({"op": "encrypt", "n": key.public_key.to_bytes(), "plaintexts": b"\x01", "mode": "standard"})


def test_parallel_argument_checks(key):
    pub = key.public_key
    with pytest.raises(InputValidationError, match="workers"):
        encrypt_parallel(pub, [1], workers=0)
    with pytest.raises(InputValidationError, match="randomness mode"):
        encrypt_parallel(pub, [1], workers=2, mode="fast")
    assert encrypt_parallel(pub, [], workers=2) == []
    assert not worth_parallel(3, 2, "standard")
    assert worth_parallel(100, 2, "standard") and worth_parallel(100, 2, "decrypt")
    assert not worth_parallel(1000, 2, "fixed-base")  # process start-up and table builds dominate
    assert worth_parallel(10_000, 2, "fixed-base")
    assert not worth_parallel(10_000, 1, "standard")
    with pytest.raises(InputValidationError, match="unknown mode"):
        worth_parallel(10, 2, "fast")
