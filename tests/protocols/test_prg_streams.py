"""Contracts of the ChaCha20 ring PRG (``protocols.prg``) that masks and shares rely on.

Covered properties:

* ``ring_elements`` is exactly the ChaCha20 keystream of (key, nonce) read as
  little-endian 64-bit words, across the 64 KiB chunk boundary and for any shape;
* a key or nonce of the wrong length is refused, naming the expected and actual size;
* ``accumulate`` refuses (and leaves untouched) a target that is read-only, not
  C-contiguous or not uint64, with a message saying what it needs;
* a keystream that comes back short is an error naming both byte counts, never a
  mask built from uninitialised memory;
* ``nonce_for_counter`` has a fixed layout (4 zero bytes of block counter, then the
  stream number as 12 little-endian bytes), which every party must reproduce
  bit for bit, and refuses a negative counter.
"""

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from protocols.prg import RingPRG, nonce_for_counter

KEY = bytes(range(32))


def chacha_words(key, nonce, count):
    """Oracle: the first ``count`` keystream words straight from ``cryptography``."""
    stream = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update(bytes(8 * count))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64)


@pytest.mark.parametrize("shape", [(), 1, (3, 5), 8192, 8193, (2, 8192 + 3)])
def test_ring_elements_are_the_chacha20_keystream(shape):
    nonce = nonce_for_counter(7)
    got = RingPRG(KEY, nonce).ring_elements(shape)
    expected_shape = (shape,) if isinstance(shape, int) else shape
    count = int(np.prod(expected_shape, dtype=np.int64))
    assert got.shape == expected_shape and got.dtype == np.uint64
    np.testing.assert_array_equal(got.reshape(-1), chacha_words(KEY, nonce, count))


def test_consecutive_draws_continue_the_stream():
    prg = RingPRG(KEY, bytes(16))
    first, second = prg.ring_elements(3), prg.ring_elements((2, 2))
    np.testing.assert_array_equal(np.concatenate([first, second.ravel()]), chacha_words(KEY, bytes(16), 7))


def test_fresh_keys_give_independent_streams():
    a, b = RingPRG().ring_elements(4), RingPRG().ring_elements(4)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize(
    ("key", "nonce", "message"),
    [
        (bytes(31), None, r"^PRG key must be 32 bytes, got 31$"),
        (KEY, bytes(12), r"^PRG nonce must be 16 bytes, got 12$"),
        (KEY, bytes(17), r"^PRG nonce must be 16 bytes, got 17$"),
    ],
    ids=["short-key", "short-nonce", "long-nonce"],
)
def test_wrong_key_or_nonce_length_is_refused_with_both_sizes(key, nonce, message):
    with pytest.raises(ValueError, match=message):
        RingPRG(key, nonce)


def _read_only():
    arr = np.arange(4, dtype=np.uint64)
    arr.setflags(write=False)
    return arr


@pytest.mark.parametrize(
    "make_target",
    [
        _read_only,
        lambda: np.arange(8, dtype=np.uint64)[::2],  # writable but strided
        lambda: np.arange(8, dtype=np.uint64).reshape(2, 4).T,  # Fortran order
        lambda: np.arange(4, dtype=np.int64),  # contiguous and writable, wrong dtype
    ],
    ids=["read-only", "strided", "transposed", "int64"],
)
def test_accumulate_refuses_unsuitable_targets_and_leaves_them_alone(make_target):
    target = make_target()
    before = target.copy()
    with pytest.raises(ValueError, match=r"^accumulate needs a writable, C-contiguous uint64 array$"):
        RingPRG(KEY).accumulate(target)
    np.testing.assert_array_equal(target, before)


class _ShortCipher:
    """Stands in for the ChaCha20 encryptor but writes 8 bytes fewer than asked."""

    def update_into(self, data, buf):
        n = len(data) - 8
        buf[:n] = bytes(n)
        return n


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda prg: prg.ring_elements(3), r"^ChaCha20 produced 16 bytes, expected 24$"),
        (lambda prg: prg.accumulate(np.zeros(3, np.uint64)), r"^ChaCha20 produced 16 bytes, expected 24$"),
        (
            lambda prg: prg.accumulate(np.zeros(5, np.uint64), subtract=True),
            r"^ChaCha20 produced 32 bytes, expected 40$",
        ),
    ],
    ids=["ring_elements", "accumulate", "accumulate-subtract"],
)
def test_short_keystream_is_an_error_naming_both_byte_counts(call, message):
    prg = RingPRG(KEY)
    prg._encryptor = _ShortCipher()  # fault injection: the guard is the only thing between us and garbage
    with pytest.raises(RuntimeError, match=message):
        call(prg)


def test_nonce_layout_is_block_counter_then_little_endian_stream_number():
    assert nonce_for_counter(0) == bytes(16)
    assert nonce_for_counter(0x0102) == bytes(4) + b"\x02\x01" + bytes(10)
    assert nonce_for_counter(2**96 - 1) == bytes(4) + b"\xff" * 12
    nonces = {nonce_for_counter(c) for c in range(300)}
    assert len(nonces) == 300 and all(len(n) == 16 for n in nonces)


def test_derived_stream_matches_the_keystream_under_that_nonce():
    got = RingPRG(KEY, nonce_for_counter(513)).ring_elements(4)
    np.testing.assert_array_equal(got, chacha_words(KEY, bytes(4) + b"\x01\x02" + bytes(10), 4))
    assert not np.array_equal(got, RingPRG(KEY, nonce_for_counter(514)).ring_elements(4))


def test_negative_stream_counter_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^stream counter must be non-negative, got -1$"):
        nonce_for_counter(-1)
