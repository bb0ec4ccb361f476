"""Packing of Z_2^64 slots into Paillier plaintexts: hypothesis properties and overflow checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, WireFormatError
from protocols.paillier.arrays import EncryptedArray, decrypt_ring, encrypt_ring, sum_encrypted
from protocols.paillier.keys import generate_keypair
from protocols.paillier.packing import PackingLayout, PackingOverflowError, headroom_for
from protocols.paillier.precompute import FixedBaseRandomness

BITS = 1024  # test-only key size (allow_insecure_key_size)
ring_values = st.integers(0, 2**64 - 1)


@pytest.fixture(scope="module")
def key():
    return generate_keypair(BITS, allow_insecure_key_size=True)


def ring_arrays(count: int, size: int):
    return st.lists(arrays(np.uint64, size, elements=ring_values), min_size=count, max_size=count)


def ring_sum(values: list[np.ndarray]) -> np.ndarray:
    total = np.zeros_like(values[0])
    for v in values:
        total += v  # uint64 wraps modulo 2^64
    return total


@st.composite
def summands_within_headroom(draw):
    headroom = draw(st.integers(0, 4))
    m = draw(st.integers(1, 2**headroom))
    size = draw(st.integers(0, 40))
    return headroom, draw(ring_arrays(m, size))


def test_layout_geometry_at_2048_bits():
    layout = PackingLayout.for_summands(2048, 4)
    assert (layout.slot_bits, layout.slots, layout.capacity) == (66, 31, 4)
    assert layout.slots * layout.slot_bits <= 2047
    assert PackingLayout.for_summands(2048, 5).slots == 30
    assert PackingLayout.for_summands(3072, 2).slots == 47
    assert [headroom_for(m) for m in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]
    assert layout.plaintext_count(62) == 2 and layout.plaintext_count(63) == 3
    with pytest.raises(InputValidationError, match="no room"):
        PackingLayout(128, 64)
    with pytest.raises(InputValidationError):
        headroom_for(0)


@given(summands_within_headroom())
def test_pack_add_unpack_without_encryption(case):
    headroom, values = case
    layout = PackingLayout(BITS, headroom)
    packed = [layout.pack(v) for v in values]
    assert all(p < 2 ** (BITS - 1) for ps in packed for p in ps)
    summed = [sum(column) for column in zip(*packed, strict=True)]
    assert np.array_equal(layout.unpack(summed, values[0].size, len(values)), ring_sum(values))


@given(summands_within_headroom())
def test_pack_encrypt_add_decrypt_unpack_equals_the_plain_sum(key, case):
    headroom, values = case
    layout = PackingLayout(BITS, headroom)
    encrypted = [encrypt_ring(key.public_key, v, layout=layout) for v in values]
    total = sum_encrypted(encrypted)
    assert total.weight == len(values)
    assert np.array_equal(decrypt_ring(key.private_key, total), ring_sum(values))


@given(st.integers(0, 3), st.integers(1, 12), st.data())
def test_adding_beyond_the_headroom_raises(key, headroom, size, data):
    layout = PackingLayout(BITS, headroom)
    values = data.draw(ring_arrays(layout.capacity + 1, size))
    encrypted = [encrypt_ring(key.public_key, v, layout=layout) for v in values]
    within = sum_encrypted(encrypted[:-1])
    with pytest.raises(PackingOverflowError, match=f"at most {layout.capacity}"):
        within + encrypted[-1]


def test_overflow_is_caught_when_unpacking_a_plaintext_with_too_many_summands():
    layout = PackingLayout(BITS, 1)  # capacity 2
    v = np.full(5, 2**63 - 1, dtype=np.uint64)  # the largest slot value, 2^64 - 1, after the offset
    too_many = [sum(col) for col in zip(*(layout.pack(v) for _ in range(3)), strict=True)]
    with pytest.raises(PackingOverflowError):
        layout.unpack(too_many, 5, 2)
    with pytest.raises(PackingOverflowError, match="at most 2"):
        layout.unpack(too_many, 5, 3)
    with pytest.raises(PackingOverflowError, match="above its last slot"):
        layout.unpack([layout.pack(v)[0] + (1 << (5 * layout.slot_bits))], 5, 1)
    with pytest.raises(InputValidationError, match="need 1 plaintexts"):
        layout.unpack([], 5, 1)
    with pytest.raises(InputValidationError, match="uint64"):
        layout.pack(np.zeros(3, dtype=np.int64))


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20), st.integers(2, 5), st.booleans())
def test_negative_reals_through_the_codec(key, xs, m, packing):
    codec = FixedPointCodec()
    layout = PackingLayout.for_summands(BITS, m) if packing else None
    inputs = [np.asarray(xs) * (i + 1) * (-1) ** i for i in range(m)]
    encrypted = [encrypt_ring(key.public_key, codec.encode(x, m), layout=layout) for x in inputs]
    decoded = codec.decode(decrypt_ring(key.private_key, sum_encrypted(encrypted)))
    reference = codec.decode(ring_sum([codec.encode(x, m) for x in inputs]))
    assert np.array_equal(decoded, reference)
    assert np.allclose(decoded, sum(inputs), atol=m * codec.resolution)


@given(arrays(np.uint64, 7, elements=ring_values), st.integers(0, 4))
def test_packed_scalar_multiplication_uses_the_headroom(key, v, k):
    layout = PackingLayout(BITS, 2)
    encrypted = encrypt_ring(key.public_key, v, layout=layout)
    product = encrypted.multiply(k)
    assert product.weight == k
    assert np.array_equal(decrypt_ring(key.private_key, product), v * np.uint64(k))


def test_packed_scalar_limits(key):
    layout = PackingLayout(BITS, 2)
    encrypted = encrypt_ring(key.public_key, np.arange(3, dtype=np.uint64), layout=layout)
    with pytest.raises(PackingOverflowError):
        encrypted.multiply(5)
    with pytest.raises(InputValidationError, match="non-negative"):
        encrypted.multiply(-1)
    with pytest.raises(InputValidationError, match="per-element"):
        encrypted.multiply(np.array([1, 2, 3]))


@given(
    arrays(np.uint64, (2, 3), elements=ring_values),
    arrays(np.int64, (2, 3), elements=st.integers(-(2**31), 2**31)),
)
def test_unpacked_per_element_scalars(key, v, ks):
    encrypted = encrypt_ring(key.public_key, v)
    assert not encrypted.packed and len(encrypted.ciphertexts) == 6
    product = encrypted.multiply(ks)
    assert np.array_equal(decrypt_ring(key.private_key, product), v * ks.astype(np.uint64))


def test_unpacked_scalar_shape_and_dtype_checks(key):
    encrypted = encrypt_ring(key.public_key, np.arange(4, dtype=np.uint64))
    with pytest.raises(InputValidationError, match="shape"):
        encrypted.multiply(np.ones(3, dtype=np.int64))
    with pytest.raises(InputValidationError, match="integer array"):
        encrypted.multiply(np.ones(4))
    with pytest.raises(PackingOverflowError, match="capacity"):
        encrypted.multiply(2 ** (BITS - 64))


def test_fixed_base_randomness_in_packed_encryption(key):
    source = FixedBaseRandomness(key.public_key)
    layout = PackingLayout.for_summands(BITS, 3)
    values = [np.arange(40, dtype=np.uint64) * np.uint64(i + 1) for i in range(3)]
    total = sum_encrypted([encrypt_ring(key.public_key, v, layout=layout, randomness=source) for v in values])
    assert np.array_equal(decrypt_ring(key.private_key, total), ring_sum(values))


def test_encrypted_array_bytes_round_trip_and_shape_checks(key):
    layout = PackingLayout.for_summands(BITS, 2)
    encrypted = encrypt_ring(key.public_key, np.arange(20, dtype=np.uint64).reshape(4, 5), layout=layout)
    data = encrypted.to_bytes()
    back = EncryptedArray.from_bytes(key.public_key, data, (4, 5), layout, 1)
    assert back.ciphertexts == encrypted.ciphertexts and back.shape == (4, 5)
    with pytest.raises(WireFormatError, match="expected 3 ciphertexts"):
        EncryptedArray.from_bytes(key.public_key, data, (5, 7), layout, 1)
    with pytest.raises(WireFormatError, match="expected 20 ciphertexts"):
        EncryptedArray.from_bytes(key.public_key, data, (4, 5), None, 1)
    with pytest.raises(InputValidationError, match="shape"):
        encrypted + encrypt_ring(key.public_key, np.arange(20, dtype=np.uint64), layout=layout)
    other = generate_keypair(BITS, allow_insecure_key_size=True).public_key
    with pytest.raises(InputValidationError, match="different keys"):
        encrypted + encrypt_ring(other, np.arange(20, dtype=np.uint64).reshape(4, 5), layout=layout)
