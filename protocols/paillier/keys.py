"""Paillier key pairs: generation, the public key ``(n, g = n + 1)`` and CRT constants.

Step 1 of Liu et al. (AAAI 2020), Algorithm 1: "Server generates a key pair and
sends public key to all data providers". The modulus is ``n = p q`` for two
primes of equal length drawn from a CSPRNG; the generator is fixed to
``g = n + 1``, so ``g^m = 1 + m n (mod n^2)`` costs one multiplication.

The private key keeps ``p``, ``q`` and the constants for decryption by the
Chinese remainder theorem: ``m_p = L_p(c^(p-1) mod p^2) h_p mod p`` with
``L_p(x) = (x - 1) / p`` and ``h_p = ((p - 1) q)^(-1) mod p`` (because
``L_p((1 + n)^(p-1) mod p^2) = (p - 1) q mod p``), the same for ``q``, then
``m = m_q + q ((m_p - m_q) q^(-1) mod p)``.

Key sizes: 2048 bits (default) and 3072 bits. Smaller moduli are refused
unless the caller passes ``allow_insecure_key_size=True``, a switch meant for
unit tests only (a 1024-bit modulus can be factored by well-funded attackers).
"""

from __future__ import annotations

import secrets
from typing import NamedTuple

import gmpy2
from gmpy2 import mpz

from protocols.errors import InputValidationError

#: Modulus sizes accepted without ``allow_insecure_key_size``.
SECURE_KEY_BITS = (2048, 3072)
DEFAULT_KEY_BITS = 2048
#: Smallest modulus accepted even with ``allow_insecure_key_size`` (tests only):
#: it still leaves room for two 64-bit packing slots.
MIN_INSECURE_KEY_BITS = 256
#: Miller-Rabin rounds on top of GMP's BPSW test when checking primes.
_PRIME_TEST_ROUNDS = 40


def check_key_bits(key_bits: int, allow_insecure_key_size: bool = False) -> int:
    """Validate a modulus size and return it as ``int``.

    Parameters
    ----------
    key_bits : int
        Bit length of ``n``.
    allow_insecure_key_size : bool, default=False
        Test-only switch: accept any even size from
        :data:`MIN_INSECURE_KEY_BITS` up, instead of only 2048 or 3072.

    Raises
    ------
    InputValidationError
        If ``key_bits`` is not an allowed size.
    """
    if isinstance(key_bits, bool) or not isinstance(key_bits, int):
        raise InputValidationError(f"key_bits must be an integer, got {key_bits!r}")
    if key_bits in SECURE_KEY_BITS:
        return int(key_bits)
    if not allow_insecure_key_size:
        raise InputValidationError(
            f"key_bits={key_bits} is not allowed; choose one of {list(SECURE_KEY_BITS)} "
            "(smaller keys only with allow_insecure_key_size=True, for tests)"
        )
    if key_bits < MIN_INSECURE_KEY_BITS or key_bits % 2:
        raise InputValidationError(
            f"key_bits={key_bits} is too small or odd; even with allow_insecure_key_size=True "
            f"it must be an even number of at least {MIN_INSECURE_KEY_BITS}"
        )
    return int(key_bits)


class PaillierPublicKey:
    """Public key ``n`` (with ``g = n + 1``) of the Paillier cryptosystem.

    Parameters
    ----------
    n : int
        The modulus, a product of two distinct odd primes.

    Attributes
    ----------
    n, n_square : gmpy2.mpz
        The modulus and its square (the ciphertext modulus).
    bits : int
        Bit length of ``n``; plaintexts are integers in ``[0, n)``.
    """

    __slots__ = ("bits", "n", "n_square")

    def __init__(self, n: int) -> None:
        n = mpz(n)
        if n < 15 or n % 2 == 0:
            raise InputValidationError(f"a Paillier modulus must be an odd integer >= 15, got {int(n)}")
        self.n = n
        self.n_square = n * n
        self.bits = int(n.bit_length())

    @property
    def g(self) -> mpz:
        """The generator, fixed to ``n + 1``."""
        return self.n + 1

    @property
    def nbytes(self) -> int:
        """Length of :meth:`to_bytes`, ``ceil(bits / 8)``."""
        return (self.bits + 7) // 8

    @property
    def ciphertext_bytes(self) -> int:
        """Fixed width of one serialised ciphertext, the byte length of ``n^2``."""
        return (int(self.n_square.bit_length()) + 7) // 8

    def to_bytes(self) -> bytes:
        """The modulus as fixed-width big-endian bytes (what crosses the channel)."""
        return self.n.to_bytes(self.nbytes, "big")

    @classmethod
    def from_bytes(cls, data: bytes) -> PaillierPublicKey:
        """Parse :meth:`to_bytes` output (no size policy; see :func:`check_key_bits`)."""
        if not isinstance(data, (bytes, bytearray)) or not data:
            raise InputValidationError("a serialised public key must be non-empty bytes")
        return cls(mpz.from_bytes(bytes(data), "big"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PaillierPublicKey) and self.n == other.n

    def __hash__(self) -> int:
        return hash(("paillier-public-key", int(self.n)))

    def __repr__(self) -> str:
        return f"PaillierPublicKey(bits={self.bits}, n=0x{int(self.n) >> max(self.bits - 32, 0):08x}...)"


class PaillierPrivateKey:
    """Private key ``(p, q)`` with the constants for CRT decryption.

    Parameters
    ----------
    public_key : PaillierPublicKey
        The matching public key; ``p * q`` must equal its ``n``.
    p, q : int
        The two distinct prime factors of ``n``.

    Notes
    -----
    The representation never shows ``p`` or ``q``.
    """

    __slots__ = ("h_p", "h_q", "p", "p_square", "public_key", "q", "q_inverse", "q_square")

    def __init__(self, public_key: PaillierPublicKey, p: int, q: int) -> None:
        p, q = mpz(p), mpz(q)
        if p == q:
            raise InputValidationError("the two Paillier primes must be distinct")
        if p * q != public_key.n:
            raise InputValidationError("p * q does not equal the public modulus n")
        if not (gmpy2.is_prime(p, _PRIME_TEST_ROUNDS) and gmpy2.is_prime(q, _PRIME_TEST_ROUNDS)):
            raise InputValidationError("p and q must both be prime")
        if gmpy2.gcd(public_key.n, (p - 1) * (q - 1)) != 1:
            raise InputValidationError("gcd(n, (p-1)(q-1)) must be 1 for a Paillier key")
        self.public_key = public_key
        self.p, self.q = p, q
        self.p_square, self.q_square = p * p, q * q
        self.h_p = gmpy2.invert((p - 1) * q % p, p)
        self.h_q = gmpy2.invert((q - 1) * p % q, q)
        self.q_inverse = gmpy2.invert(q, p)

    def __repr__(self) -> str:
        return f"PaillierPrivateKey(bits={self.public_key.bits})"


class PaillierKeyPair(NamedTuple):
    """A public key and its private key."""

    public_key: PaillierPublicKey
    private_key: PaillierPrivateKey


def _random_prime(bits: int) -> mpz:
    """A random prime of exactly ``bits`` bits whose two top bits are set.

    The candidate comes from :func:`secrets.randbits`; :func:`gmpy2.next_prime`
    finds the next probable prime, which is re-checked with extra Miller-Rabin
    rounds. Setting both top bits makes the product of two such primes exactly
    ``2 * bits`` bits long.
    """
    top = mpz(3) << (bits - 2)
    while True:
        candidate = mpz(secrets.randbits(bits)) | top | 1
        prime = gmpy2.next_prime(candidate)
        if prime.bit_length() == bits and gmpy2.is_prime(prime, _PRIME_TEST_ROUNDS):
            return prime


def generate_keypair(
    key_bits: int = DEFAULT_KEY_BITS, *, allow_insecure_key_size: bool = False
) -> PaillierKeyPair:
    """Generate a Paillier key pair (Algorithm 1, step 1).

    Parameters
    ----------
    key_bits : int, default=2048
        Bit length of ``n``: 2048 or 3072.
    allow_insecure_key_size : bool, default=False
        Test-only: allow smaller even sizes (>= 256) to keep unit tests fast.

    Returns
    -------
    PaillierKeyPair
        ``(public_key, private_key)``.

    Notes
    -----
    ``p`` and ``q`` are drawn independently with :mod:`secrets`; the pair is
    rejected and redrawn unless ``p != q``, ``gcd(n, (p-1)(q-1)) = 1``,
    ``|p - q| >= 2^(key_bits/2 - 100)`` (no Fermat factoring) and ``n`` has
    exactly ``key_bits`` bits.
    """
    key_bits = check_key_bits(key_bits, allow_insecure_key_size)
    half = key_bits // 2
    min_gap = mpz(1) << max(half - 100, half // 2)
    while True:
        p = _random_prime(half)
        q = _random_prime(half)
        if p == q or abs(p - q) < min_gap:
            continue
        n = p * q
        if n.bit_length() != key_bits or gmpy2.gcd(n, (p - 1) * (q - 1)) != 1:
            continue
        public = PaillierPublicKey(n)
        return PaillierKeyPair(public, PaillierPrivateKey(public, p, q))
