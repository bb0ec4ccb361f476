"""Cryptographically secure pseudo-random ring elements.

All shares and masks in this engine are expanded from ChaCha20 keystreams
(``cryptography``'s implementation). A fresh stream is keyed from
:func:`secrets.token_bytes`; a *derived* stream (for pairwise masks that two
parties must reproduce identically) is keyed from a shared secret and a
per-call nonce. numpy's and torch's generators are never used for these.
"""

from __future__ import annotations

import math
import secrets

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import NDArray

KEY_BYTES = 32
NONCE_BYTES = 16
_SLACK_WORDS = 8  # 64 bytes, one ChaCha20 block
_CHUNK_BYTES = 1 << 16
_CHUNK_WORDS = _CHUNK_BYTES // 8
#: The plaintext every keystream chunk encrypts: allocated once (a fresh ``bytes(n)`` per stream
#: cost about a third of the keystream itself for a d = 100 triangle).
_ZEROS = memoryview(bytes(_CHUNK_BYTES))


class RingPRG:
    """A ChaCha20 keystream read as uniformly random elements of Z_{2^64}.

    Parameters
    ----------
    key : bytes, optional
        32-byte key. When omitted a fresh key is drawn from :mod:`secrets`.
    nonce : bytes, optional
        16-byte nonce (ChaCha20's counter and nonce as ``cryptography`` takes them).
        Defaults to all zeros, which is safe only because every key is used for one
        stream; callers deriving many streams from one key pass distinct nonces.
    """

    def __init__(self, key: bytes | None = None, nonce: bytes | None = None) -> None:
        key = secrets.token_bytes(KEY_BYTES) if key is None else key
        nonce = bytes(NONCE_BYTES) if nonce is None else nonce
        if len(key) != KEY_BYTES:
            raise ValueError(f"PRG key must be {KEY_BYTES} bytes, got {len(key)}")
        if len(nonce) != NONCE_BYTES:
            raise ValueError(f"PRG nonce must be {NONCE_BYTES} bytes, got {len(nonce)}")
        self._encryptor = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()

    def random_bytes(self, n: int) -> bytes:
        """Next ``n`` keystream bytes."""
        return self._encryptor.update(bytes(n))

    def ring_elements(self, shape: int | tuple[int, ...]) -> NDArray[np.uint64]:
        """Uniform elements of Z_{2^64} with the given shape."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = math.prod(shape)
        # Encrypt zeros straight into a writable array, a chunk at a time, so
        # no full-size zero input is allocated; the cipher wants up to one
        # block of slack after each chunk it writes.
        out = np.empty(count + _SLACK_WORDS, dtype="<u8")
        view = memoryview(out.data).cast("B")
        total = 8 * count
        for start in range(0, total, _CHUNK_BYTES):
            self._expand_into(view[start:], min(_CHUNK_BYTES, total - start))
        return out[:count].view(np.uint64).reshape(shape)

    def accumulate(self, target: NDArray[np.uint64], *, subtract: bool = False) -> NDArray[np.uint64]:
        """Add (or subtract) the next ``target.size`` ring elements to ``target`` in place.

        Same keystream as ``target += self.ring_elements(target.shape)``, but
        expanded 64 KiB at a time, so a mask or share never exists as a
        full-size array (``target`` must be C-contiguous).
        """
        if target.dtype != np.uint64 or not target.flags.c_contiguous or not target.flags.writeable:
            raise ValueError("accumulate needs a writable, C-contiguous uint64 array")
        flat = target.reshape(-1)
        combine = np.subtract if subtract else np.add
        words = _CHUNK_WORDS
        scratch = np.empty(min(words, flat.size) + _SLACK_WORDS, dtype="<u8")
        view = memoryview(scratch.data).cast("B")
        for start in range(0, flat.size, words):
            size = min(words, flat.size - start)
            self._expand_into(view, 8 * size)
            span = flat[start : start + size]
            combine(span, scratch[:size].view(np.uint64), out=span)
        return target

    def _expand_into(self, view: memoryview, nbytes: int) -> None:
        """Write the next ``nbytes`` keystream bytes at the start of ``view`` (which has a block of slack)."""
        written = self._encryptor.update_into(_ZEROS[:nbytes], view)
        if written != nbytes:
            raise RuntimeError(f"ChaCha20 produced {written} bytes, expected {nbytes}")


def nonce_for_counter(counter: int) -> bytes:
    """A distinct 16-byte nonce for the ``counter``-th stream under one key."""
    if counter < 0:
        raise ValueError(f"stream counter must be non-negative, got {counter}")
    # The first 4 bytes are ChaCha20's block counter (start at zero); the
    # remaining 12 bytes carry the stream number.
    return bytes(4) + counter.to_bytes(12, "little")
