"""Vectorised Paillier operations on lists of integers (gmpy2 ``mpz``).

Encryption with ``g = n + 1``: ``Enc(m; r) = (1 + m n) r^n mod n^2`` for
``m`` in ``[0, n)`` and ``r`` uniform in ``Z_n^*`` (Algorithm 1, steps 2 and 6
of Liu et al., AAAI 2020). The factor ``rho = r^n mod n^2`` (the
*obfuscator*) is the expensive part; it comes from a randomness source:
:class:`StandardRandomness` (``r^n``, the default) or
:class:`~protocols.paillier.precompute.FixedBaseRandomness` (opt-in).

Homomorphisms used by party ``p`` (steps 3 and 7) and by scalar products:
``Enc(a) Enc(b) = Enc(a + b mod n)`` and ``Enc(a)^k = Enc(k a mod n)``.

Decryption (steps 4 and 8) works modulo ``p^2`` and ``q^2`` separately and
recombines with the CRT (see :mod:`protocols.paillier.keys`). The modular
exponentiations run through :func:`gmpy2.powmod_base_list`, which releases the
GIL, so parties running as threads encrypt and decrypt concurrently.
"""

from __future__ import annotations

import numbers
import secrets
from collections.abc import Sequence
from typing import Protocol

import gmpy2
from gmpy2 import mpz

from protocols.errors import InputValidationError
from protocols.paillier.keys import PaillierPrivateKey, PaillierPublicKey


class RandomnessSource(Protocol):
    """Anything that yields Paillier obfuscators ``rho`` (``n``-th residues mod ``n^2``)."""

    public_key: PaillierPublicKey

    def obfuscators(self, count: int) -> list[mpz]:
        """Return ``count`` fresh, independent obfuscators."""
        ...


def random_units(n: mpz, count: int) -> list[mpz]:
    """``count`` independent uniform elements of ``Z_n^*`` drawn with :mod:`secrets`."""
    out: list[mpz] = []
    bound = int(n)
    while len(out) < count:
        r = mpz(secrets.randbelow(bound))
        if r > 0 and gmpy2.gcd(r, n) == 1:
            out.append(r)
    return out


class StandardRandomness:
    """Textbook Paillier randomness: ``rho = r^n mod n^2`` with fresh uniform ``r``.

    Parameters
    ----------
    public_key : PaillierPublicKey
        Key whose ``n`` is used.

    Notes
    -----
    One full ``log2(n)``-bit exponentiation modulo ``n^2`` per ciphertext; its
    security rests on the decisional composite residuosity (DCR) assumption only.
    """

    name = "standard"

    def __init__(self, public_key: PaillierPublicKey) -> None:
        self.public_key = public_key

    def obfuscators(self, count: int) -> list[mpz]:
        units = random_units(self.public_key.n, count)
        return gmpy2.powmod_base_list(units, self.public_key.n, self.public_key.n_square)


def check_plaintexts(public_key: PaillierPublicKey, plaintexts: Sequence[int]) -> list[mpz]:
    """Convert to ``mpz`` and check every plaintext lies in ``[0, n)``."""
    values = [mpz(m) for m in plaintexts]
    n = public_key.n
    for index, m in enumerate(values):
        if m < 0 or m >= n:
            raise InputValidationError(
                f"plaintext #{index} is outside [0, n) for a {public_key.bits}-bit key; "
                "reduce it modulo n (signed values: use to_residue)"
            )
    return values


def encrypt(
    public_key: PaillierPublicKey,
    plaintexts: Sequence[int],
    randomness: RandomnessSource | None = None,
) -> list[mpz]:
    """Encrypt integers in ``[0, n)``: ``(1 + m n) rho mod n^2`` for each ``m``.

    Parameters
    ----------
    public_key : PaillierPublicKey
    plaintexts : sequence of int
        Values in ``[0, n)``.
    randomness : RandomnessSource, optional
        Source of obfuscators for ``public_key``; :class:`StandardRandomness` by default.

    Returns
    -------
    list of gmpy2.mpz
        One ciphertext in ``[1, n^2)`` per plaintext.
    """
    values = check_plaintexts(public_key, plaintexts)
    randomness = StandardRandomness(public_key) if randomness is None else randomness
    if randomness.public_key != public_key:
        raise InputValidationError("the randomness source belongs to a different public key")
    rhos = randomness.obfuscators(len(values))
    n, n2 = public_key.n, public_key.n_square
    return [(1 + m * n) * rho % n2 for m, rho in zip(values, rhos, strict=True)]


def decrypt(private_key: PaillierPrivateKey, ciphertexts: Sequence[int]) -> list[mpz]:
    """Decrypt with the CRT; returns plaintexts in ``[0, n)``.

    Parameters
    ----------
    private_key : PaillierPrivateKey
    ciphertexts : sequence of int
        Values in ``[0, n^2)``.
    """
    p, q = private_key.p, private_key.q
    p2, q2 = private_key.p_square, private_key.q_square
    cts = [mpz(c) for c in ciphertexts]
    n2 = private_key.public_key.n_square
    for index, c in enumerate(cts):
        if c < 0 or c >= n2:
            raise InputValidationError(f"ciphertext #{index} is outside [0, n^2)")
    xs_p = gmpy2.powmod_base_list([c % p2 for c in cts], p - 1, p2)
    xs_q = gmpy2.powmod_base_list([c % q2 for c in cts], q - 1, q2)
    out = []
    for x_p, x_q in zip(xs_p, xs_q, strict=True):
        m_p = (x_p - 1) // p * private_key.h_p % p
        m_q = (x_q - 1) // q * private_key.h_q % q
        out.append(m_q + q * ((m_p - m_q) * private_key.q_inverse % p))
    return out


def add(public_key: PaillierPublicKey, a: Sequence[int], b: Sequence[int]) -> list[mpz]:
    """Element-wise homomorphic addition: ``Enc(x) * Enc(y) mod n^2 = Enc(x + y)``."""
    if len(a) != len(b):
        raise InputValidationError(f"cannot add ciphertext lists of lengths {len(a)} and {len(b)}")
    n2 = public_key.n_square
    return [mpz(x) * y % n2 for x, y in zip(a, b, strict=True)]


def add_many(public_key: PaillierPublicKey, arrays: Sequence[Sequence[int]]) -> list[mpz]:
    """Element-wise homomorphic sum of several equally long ciphertext lists."""
    if not arrays:
        raise InputValidationError("add_many needs at least one ciphertext list")
    total = [mpz(c) for c in arrays[0]]
    for other in arrays[1:]:
        total = add(public_key, total, other)
    return total


def multiply(
    public_key: PaillierPublicKey, ciphertexts: Sequence[int], scalars: int | Sequence[int]
) -> list[mpz]:
    """Homomorphic product with integer scalars: ``Enc(x)^k = Enc(k x mod n)``.

    Parameters
    ----------
    public_key : PaillierPublicKey
    ciphertexts : sequence of int
    scalars : int or sequence of int
        One scalar for all ciphertexts, or one per ciphertext. Negative scalars
        are allowed (they use the modular inverse of the ciphertext).
    """
    n2 = public_key.n_square
    if isinstance(scalars, numbers.Integral):
        k = mpz(scalars)
        return [gmpy2.powmod(mpz(c), k, n2) for c in ciphertexts]
    scalars = list(scalars)  # type: ignore[arg-type]  # not Integral, so a sequence
    if len(scalars) != len(ciphertexts):
        raise InputValidationError(
            f"got {len(scalars)} scalars for {len(ciphertexts)} ciphertexts; pass one or one per ciphertext"
        )
    return [gmpy2.powmod(mpz(c), mpz(k), n2) for c, k in zip(ciphertexts, scalars, strict=True)]


def to_residue(value: int, n: mpz) -> mpz:
    """Map a signed integer with ``|value| < n / 2`` to its residue in ``[0, n)``."""
    value = mpz(value)
    if 2 * abs(value) >= n:
        raise InputValidationError(
            f"|value| must be below n/2 to be encoded as a signed residue, got {value}"
        )
    return value % n


def from_residue(residue: int, n: mpz) -> mpz:
    """Inverse of :func:`to_residue`: the representative of ``residue`` in ``(-n/2, n/2]``."""
    residue = mpz(residue) % n
    return residue - n if 2 * residue > n else residue
