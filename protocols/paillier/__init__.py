"""Paillier encryption on gmpy2 for secure sums (Liu et al., AAAI 2020, Algorithm 1).

Modules, one concern each:

``keys``
    Key generation (2048 or 3072 bits; smaller only with the test-only
    ``allow_insecure_key_size``), ``g = n + 1``, CRT constants.
``cipher``
    Vectorised encrypt / CRT decrypt / add / scalar multiply on ``mpz`` lists.
``packing``
    Many offset-encoded Z_{2^64} slots per plaintext, with headroom bits for
    summing ``M`` parties.
``precompute``
    Fixed-base randomness (DJN-style ``h_s^a``; full-length exponents need DCR
    only, half-length ones add the short-exponent assumption), with the
    table's window sized to the batch and a test of when a table pays.
``offline``
    Offline/online encryption with textbook obfuscators precomputed.
``parallel``
    Encryption/decryption over worker processes.
``serialize``
    Fixed-width big-endian bytes for ciphertexts and public keys.
``arrays``
    :class:`EncryptedArray`, tying the above together with overflow checks;
    unrandomized ``1 + m n`` arrays for an aggregator's own input, which can
    never be serialised on their own.

The secure-sum backend built on this package is
:class:`protocols.backends.paillier.PaillierBackend`. ``phe`` (python-paillier,
GPLv3) is used only by the tests (as an oracle) and the benchmark.
"""

from protocols.paillier.arrays import EncryptedArray, decrypt_ring, encrypt_ring, sum_encrypted
from protocols.paillier.cipher import StandardRandomness, add, decrypt, encrypt, multiply
from protocols.paillier.keys import (
    DEFAULT_KEY_BITS,
    SECURE_KEY_BITS,
    PaillierKeyPair,
    PaillierPrivateKey,
    PaillierPublicKey,
    generate_keypair,
)
from protocols.paillier.packing import PackingLayout, PackingOverflowError
from protocols.paillier.precompute import FixedBaseRandomness

__all__ = [
    "DEFAULT_KEY_BITS",
    "SECURE_KEY_BITS",
    "EncryptedArray",
    "FixedBaseRandomness",
    "PackingLayout",
    "PackingOverflowError",
    "PaillierKeyPair",
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "StandardRandomness",
    "add",
    "decrypt",
    "decrypt_ring",
    "encrypt",
    "encrypt_ring",
    "generate_keypair",
    "multiply",
    "sum_encrypted",
]
