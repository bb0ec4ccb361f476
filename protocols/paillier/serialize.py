"""Fixed-width big-endian bytes for public keys and ciphertext arrays.

A ciphertext is an integer in ``[1, n^2)``; it is written as exactly
``ciphertext_bytes = ceil(log2(n^2) / 8)`` big-endian bytes, and an array of
them is the concatenation. Parsing checks the total length against the
expected count and every value against ``n^2``, so a malformed or truncated
payload raises :class:`~protocols.errors.WireFormatError` (a
:class:`~protocols.errors.ProtocolError`) and never builds anything but
integers. Nothing here pickles.
"""

from __future__ import annotations

from collections.abc import Sequence

from gmpy2 import mpz

from protocols.errors import WireFormatError
from protocols.paillier.keys import PaillierPublicKey


def ciphertexts_to_bytes(public_key: PaillierPublicKey, ciphertexts: Sequence[int]) -> bytes:
    """Concatenate ciphertexts as fixed-width big-endian integers."""
    width = public_key.ciphertext_bytes
    return b"".join(mpz(c).to_bytes(width, "big") for c in ciphertexts)


def ciphertexts_from_bytes(public_key: PaillierPublicKey, data: bytes, count: int | None = None) -> list[mpz]:
    """Parse :func:`ciphertexts_to_bytes` output.

    Parameters
    ----------
    public_key : PaillierPublicKey
        Key the ciphertexts belong to (fixes the width and the bound ``n^2``).
    data : bytes
        The payload.
    count : int, optional
        Expected number of ciphertexts; checked against the payload length.

    Raises
    ------
    WireFormatError
        If ``data`` is not bytes, its length is not ``count`` times the width,
        or a value is 0 or not below ``n^2``.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise WireFormatError(f"ciphertexts must arrive as bytes, got {type(data).__name__}")
    width = public_key.ciphertext_bytes
    if len(data) % width:
        raise WireFormatError(
            f"ciphertext payload of {len(data)} bytes is not a multiple of the {width}-byte width "
            f"of a {public_key.bits}-bit key"
        )
    found = len(data) // width
    if count is not None and found != count:
        raise WireFormatError(f"expected {count} ciphertexts ({count * width} bytes), got {found}")
    n2 = public_key.n_square
    out = []
    view = memoryview(data)
    for index in range(found):
        c = mpz.from_bytes(view[index * width : (index + 1) * width], "big")
        if c == 0 or c >= n2:
            raise WireFormatError(f"ciphertext #{index} is not in [1, n^2)")
        out.append(c)
    return out


def public_key_to_bytes(public_key: PaillierPublicKey) -> bytes:
    """The modulus ``n`` as ``ceil(bits / 8)`` big-endian bytes."""
    return public_key.to_bytes()


def public_key_from_bytes(data: bytes, key_bits: int) -> PaillierPublicKey:
    """Parse a public key and check it has exactly ``key_bits`` bits.

    Raises
    ------
    WireFormatError
        If ``data`` is not bytes of the right length or does not hold an odd
        modulus of exactly ``key_bits`` bits.
    """
    expected = (key_bits + 7) // 8
    if not isinstance(data, (bytes, bytearray)) or len(data) != expected:
        size = len(data) if isinstance(data, (bytes, bytearray)) else type(data).__name__
        raise WireFormatError(f"a {key_bits}-bit public key must be {expected} bytes, got {size}")
    n = mpz.from_bytes(bytes(data), "big")
    if n.bit_length() != key_bits or n % 2 == 0:
        raise WireFormatError(
            f"received modulus has {n.bit_length()} bits (or is even); expected an odd {key_bits}-bit n"
        )
    return PaillierPublicKey(n)
