"""The local bit work of IKNP OT extension, vectorised: seed expansion, transpose, hash.

* :func:`expand`: a 16-byte base-OT key stretched into a column of the
  extension matrix with AES-128 in counter mode (the PRG ``G`` of IKNP);
  the batch number is the initial counter block, so every batch of a link
  draws fresh bits from the same key.
* :func:`transpose`: the ``128 x m`` bit matrix (one row per base OT, bits
  packed most significant first) into ``m`` rows of 16 bytes (one per
  extended OT), by 8 x 8 bit-block transposes on 64-bit words (the
  three-step swap of Warren, *Hacker's Delight*, section 7-3).
* :func:`hash_rows`: a tweakable circular correlation-robust hash from
  fixed-key AES, ``H(x, j) = pi(pi(x) xor j) xor pi(x)`` (Guo, Katz, Wang and
  Yu, "Efficient and Secure Multiparty Computation from Fixed-Key Block
  Ciphers", IEEE S&P 2020, section 7.4), with the OT's index ``j`` as the
  tweak; the first 8 bytes are kept as a ring word mod ``2^64``.
"""

from __future__ import annotations

import hashlib

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

_U = np.uint64
#: The public fixed key of the permutation ``pi`` (any constant works; this one is nothing-up-my-sleeve).
FIXED_KEY = hashlib.sha256(b"mpc-pca ot: fixed key of the correlation-robust hash").digest()[:16]
#: Rows of the extension matrix (base OTs per link).
ROWS = 128


def expand(key: bytes, batch: int, n_bytes: int) -> NDArray[np.uint8]:
    """``n_bytes`` pseudorandom bytes from ``key`` for batch number ``batch`` (AES-128-CTR)."""
    counter = batch.to_bytes(8, "big") + bytes(8)
    encryptor = Cipher(algorithms.AES(key), modes.CTR(counter)).encryptor()
    return np.frombuffer(encryptor.update(bytes(n_bytes)), dtype=np.uint8)


def expand_all(keys: tuple[bytes, ...], batch: int, n_bytes: int) -> NDArray[np.uint8]:
    """One :func:`expand` per key, stacked: shape ``(len(keys), n_bytes)``."""
    return np.stack([expand(key, batch, n_bytes) for key in keys])


def _swap(x: NDArray[np.uint64], mask: int, shift: int) -> NDArray[np.uint64]:
    t = (x ^ (x >> _U(shift))) & _U(mask)
    return x ^ t ^ (t << _U(shift))


def transpose(columns: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """The ``m x 128`` bit matrix, one 16-byte row per extended OT, from its ``128 x m`` transpose.

    Parameters
    ----------
    columns : ndarray of uint8, shape (128, m // 8)
        Row ``i`` holds bit ``i`` of every extended OT, OT ``8 c + k`` at bit
        ``7 - k`` of byte ``c`` (numpy's ``packbits`` order).

    Returns
    -------
    ndarray of uint8, shape (m, 16)
        Row ``j`` is OT ``j``'s 128 bits, bit ``i`` at bit ``7 - i % 8`` of
        byte ``i // 8``: ``np.packbits(np.unpackbits(columns, axis=1), axis=0).T``,
        four times faster.
    """
    rows, width = columns.shape
    # Eight matrix rows per 64-bit word, one word per (row group, byte column); the byte order puts row 8g
    # in the word's most significant byte, as the swaps below expect.
    blocks = columns.reshape(rows // 8, 8, width).transpose(0, 2, 1)[:, :, ::-1]
    words = np.ascontiguousarray(blocks).view(_U).reshape(rows // 8, width)
    words = _swap(words, 0x00AA00AA00AA00AA, 7)
    words = _swap(words, 0x0000CCCC0000CCCC, 14)
    words = _swap(words, 0x00000000F0F0F0F0, 28)
    out = words.view(np.uint8).reshape(rows // 8, width, 8)[:, :, ::-1].transpose(1, 2, 0)
    return np.ascontiguousarray(out).reshape(width * 8, rows // 8)


def hash_rows(rows: NDArray[np.uint8], first_index: int) -> NDArray[np.uint64]:
    """``H(row_j, first_index + j)`` for every 16-byte row, as ring words (first 8 bytes, little-endian).

    Parameters
    ----------
    rows : ndarray of uint8, shape (m, 16)
    first_index : int
        Tweak of row 0; a link never uses an index twice.
    """
    m = rows.shape[0]
    permute = Cipher(algorithms.AES(FIXED_KEY), modes.ECB()).encryptor()
    once = np.frombuffer(permute.update(np.ascontiguousarray(rows).tobytes()), dtype=np.uint8).reshape(m, 16)
    tweaks = np.zeros((m, 2), dtype=_U)
    tweaks[:, 0] = np.arange(first_index, first_index + m, dtype=_U)
    tweaked = once ^ tweaks.view(np.uint8).reshape(m, 16)
    twice = np.frombuffer(permute.update(tweaked.tobytes()), dtype=np.uint8).reshape(m, 16)
    return (twice ^ once)[:, :8].copy().view("<u8").reshape(m).astype(_U, copy=False)
