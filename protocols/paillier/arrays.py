"""Encrypted arrays of Z_{2^64} ring elements: packed or one value per ciphertext.

:class:`EncryptedArray` bundles ciphertexts with the plaintext shape, the
:class:`~protocols.paillier.packing.PackingLayout` (``None`` for the unpacked
representation) and a *weight*, an upper bound on how many summands (times
scalar multipliers) each slot carries. Every operation checks the weight
against the representation's capacity, so a sum that could carry between
packed slots, or wrap modulo ``n``, raises
:class:`~protocols.paillier.packing.PackingOverflowError` before it happens.

Representations
---------------
packed (default in the secure-sum backend)
    ``layout.slots`` ring elements per ciphertext, offset-encoded (see
    :mod:`protocols.paillier.packing`). Supports addition and multiplication by
    one non-negative integer for all slots.
unpacked
    One ring element per ciphertext, as its signed value modulo ``n``.
    Supports addition and multiplication by one integer per element (also
    negative). The capacity is ``2^(key_bits - 65)``: with ``|x| <= 2^63``,
    ``|sum k_i x_i| <= weight 2^63 < n / 2``.

Randomness
----------
:func:`encrypt_ring` makes *randomized* arrays (each ciphertext carries a
fresh obfuscator). :func:`plain_ring` makes *unrandomized* ones,
``1 + m n mod n^2`` with no obfuscator: anyone can read them, so they exist
only to be added to a randomized array (the sum of a randomized and any other
array is randomized again, because one fresh obfuscator in the product makes
it a uniform ``n``-th residue). :attr:`EncryptedArray.randomized` tracks this,
and :meth:`EncryptedArray.to_bytes` refuses to serialise an unrandomized array.

Ring semantics: decryption returns the result modulo ``2^64``, i.e. exactly
what the same integer operations give on the uint64 ring elements. Note that
multiplying a fixed-point encoding by an integer keeps its fractional bits.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from gmpy2 import mpz
from numpy.typing import ArrayLike, NDArray

from protocols.errors import InputValidationError
from protocols.paillier import cipher
from protocols.paillier.keys import PaillierPrivateKey, PaillierPublicKey
from protocols.paillier.packing import RING_BITS, PackingLayout, PackingOverflowError
from protocols.paillier.parallel import decrypt_parallel, encrypt_parallel, worth_parallel
from protocols.paillier.precompute import FixedBaseRandomness
from protocols.paillier.serialize import ciphertexts_from_bytes, ciphertexts_to_bytes

_RING_MASK = (1 << RING_BITS) - 1


def unpacked_capacity(key_bits: int) -> int:
    """Largest weight of an unpacked ciphertext: ``2^(key_bits - 65)``."""
    return 1 << (int(key_bits) - RING_BITS - 1)


def ciphertext_count(size: int, layout: PackingLayout | None) -> int:
    """Ciphertexts needed for ``size`` ring elements in this representation."""
    return int(size) if layout is None else layout.plaintext_count(size)


def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    try:
        out = tuple(int(d) for d in shape)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(f"shape must be a sequence of integers, got {shape!r}") from exc
    if any(d < 0 for d in out):
        raise InputValidationError(f"shape must not have negative dimensions, got {out}")
    return out


@dataclass(frozen=True, eq=False)
class EncryptedArray:
    """Paillier ciphertexts of an array of ring elements.

    Parameters
    ----------
    public_key : PaillierPublicKey
        Key of every ciphertext.
    ciphertexts : tuple of gmpy2.mpz
        :func:`ciphertext_count` values.
    shape : tuple of int
        Shape of the plaintext array.
    layout : PackingLayout or None
        Packing layout, ``None`` for one element per ciphertext.
    weight : int
        Bound on the summands per slot (see the module notes).
    randomized : bool, default=True
        Whether every ciphertext carries a fresh obfuscator (see the module
        notes); ``False`` only for :func:`plain_ring` output and what is
        derived from it alone.
    """

    public_key: PaillierPublicKey
    ciphertexts: tuple[mpz, ...]
    shape: tuple[int, ...]
    layout: PackingLayout | None
    weight: int
    randomized: bool = True

    def __post_init__(self) -> None:
        expected = ciphertext_count(self.size, self.layout)
        if len(self.ciphertexts) != expected:
            raise InputValidationError(
                f"an encrypted array of shape {self.shape} needs {expected} ciphertexts, "
                f"got {len(self.ciphertexts)}"
            )
        if self.layout is not None and self.layout.key_bits != self.public_key.bits:
            raise InputValidationError(
                f"layout is for {self.layout.key_bits}-bit keys, the key has {self.public_key.bits} bits"
            )
        self.check_weight(self.weight)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def packed(self) -> bool:
        return self.layout is not None

    @property
    def capacity(self) -> int:
        """Largest weight this representation can carry."""
        return unpacked_capacity(self.public_key.bits) if self.layout is None else self.layout.capacity

    def check_weight(self, weight: int) -> None:
        """Raise :class:`PackingOverflowError` if ``weight`` is above :attr:`capacity`."""
        if weight < 0:
            raise InputValidationError(f"weight must be non-negative, got {weight}")
        if self.layout is not None:
            self.layout.check_weight(weight)
        elif weight > self.capacity:
            raise PackingOverflowError(
                f"an unpacked ciphertext would carry weight {weight}, above the capacity "
                f"{self.capacity} of a {self.public_key.bits}-bit key"
            )

    def _replace(self, ciphertexts: list[mpz], weight: int, randomized: bool | None = None) -> EncryptedArray:
        randomized = self.randomized if randomized is None else randomized
        return EncryptedArray(
            self.public_key, tuple(ciphertexts), self.shape, self.layout, weight, randomized
        )

    def __add__(self, other: EncryptedArray) -> EncryptedArray:
        """Homomorphic element-wise sum (Algorithm 1, steps 3 and 7)."""
        if not isinstance(other, EncryptedArray):
            return NotImplemented
        if other.public_key != self.public_key:
            raise InputValidationError("cannot add arrays encrypted under different keys")
        if other.shape != self.shape or other.layout != self.layout:
            raise InputValidationError(
                f"cannot add an encrypted array of shape {other.shape} (layout {other.layout}) "
                f"to one of shape {self.shape} (layout {self.layout})"
            )
        weight = self.weight + other.weight
        self.check_weight(weight)
        return self._replace(
            cipher.add(self.public_key, self.ciphertexts, other.ciphertexts),
            weight,
            self.randomized or other.randomized,
        )

    def multiply(self, scalar: int | ArrayLike) -> EncryptedArray:
        """Homomorphic product with integers.

        Parameters
        ----------
        scalar : int or array_like of int
            Packed arrays: one non-negative integer for all slots. Unpacked
            arrays: an integer, or an integer array of the plaintext shape
            (negative values allowed).
        """
        if isinstance(scalar, numbers.Integral):
            k = int(scalar)
            if self.layout is not None and k < 0:
                raise InputValidationError(
                    f"packed ciphertexts take only a non-negative scalar, got {k}; use unpacked arrays"
                )
            weight = self.weight * abs(k)
            self.check_weight(weight)
            return self._replace(cipher.multiply(self.public_key, self.ciphertexts, k), weight)
        if self.layout is not None:
            raise InputValidationError(
                "packed ciphertexts take one scalar for all slots; per-element scalars need "
                "packing=False (the unpacked representation)"
            )
        ks = np.asarray(scalar)
        if ks.shape != self.shape or ks.dtype.kind not in "iu":
            raise InputValidationError(
                f"per-element scalars must be an integer array of shape {self.shape}, "
                f"got dtype {ks.dtype} and shape {ks.shape}"
            )
        values = [int(k) for k in ks.ravel().tolist()]
        weight = self.weight * max((abs(k) for k in values), default=0)
        self.check_weight(weight)
        return self._replace(cipher.multiply(self.public_key, self.ciphertexts, values), weight)

    def to_bytes(self) -> bytes:
        """The ciphertexts as fixed-width big-endian bytes.

        Raises
        ------
        InputValidationError
            If the array is not randomized (:func:`plain_ring` output would
            show its plaintexts to whoever receives the bytes).
        """
        if not self.randomized:
            raise InputValidationError(
                f"refusing to serialise an unrandomized array of shape {self.shape}: its "
                f"{len(self.ciphertexts)} ciphertext(s) carry no obfuscator; add a randomized array first"
            )
        return ciphertexts_to_bytes(self.public_key, self.ciphertexts)

    @classmethod
    def from_bytes(
        cls,
        public_key: PaillierPublicKey,
        data: bytes,
        shape: Sequence[int],
        layout: PackingLayout | None,
        weight: int,
    ) -> EncryptedArray:
        """Parse ciphertext bytes whose count must match ``shape`` and ``layout``.

        Raises
        ------
        WireFormatError
            If the payload does not hold exactly the expected ciphertexts.
        """
        shape = _shape(shape)
        count = ciphertext_count(int(np.prod(shape, dtype=np.int64)), layout)
        return cls(public_key, tuple(ciphertexts_from_bytes(public_key, data, count)), shape, layout, weight)


def _ring_array(ring: ArrayLike) -> NDArray[np.uint64]:
    arr = np.asarray(ring)
    if arr.dtype != np.uint64:
        raise InputValidationError(f"ring elements must have dtype uint64, got {arr.dtype}")
    return arr


def _plaintexts(
    public_key: PaillierPublicKey, arr: NDArray[np.uint64], layout: PackingLayout | None
) -> list[int]:
    """The plaintexts of ring elements: packed with ``layout``, else signed values modulo ``n``."""
    if layout is not None:
        return layout.pack(arr)
    return [v % int(public_key.n) for v in arr.ravel().view(np.int64).tolist()]


def encrypt_ring(
    public_key: PaillierPublicKey,
    ring: ArrayLike,
    *,
    layout: PackingLayout | None = None,
    randomness: cipher.RandomnessSource | None = None,
    workers: int = 1,
) -> EncryptedArray:
    """Encrypt uint64 ring elements (Algorithm 1, steps 2 and 6).

    Parameters
    ----------
    public_key : PaillierPublicKey
    ring : array_like of uint64
        Fixed-point ring elements.
    layout : PackingLayout, optional
        Pack with this layout; ``None`` encrypts one element per ciphertext.
    randomness : RandomnessSource, optional
        :class:`~protocols.paillier.cipher.StandardRandomness` (default) or
        :class:`~protocols.paillier.precompute.FixedBaseRandomness`.
    workers : int, default=1
        Cores to encrypt on when the input is large enough
        (:func:`~protocols.paillier.parallel.worth_parallel`): threads for
        ``r^n``, processes for fixed-base randomness (each worker then builds
        its own table with the same parameters). Other custom sources always
        run in this thread.

    Returns
    -------
    EncryptedArray
        Weight 1.
    """
    arr = _ring_array(ring)
    plaintexts = _plaintexts(public_key, arr, layout)
    randomness = cipher.StandardRandomness(public_key) if randomness is None else randomness
    if randomness.public_key != public_key:
        raise InputValidationError("the randomness source belongs to a different public key")
    mode = (
        "fixed-base"
        if isinstance(randomness, FixedBaseRandomness)
        else "standard"
        if isinstance(randomness, cipher.StandardRandomness)
        else None
    )
    if mode is not None and worth_parallel(len(plaintexts), workers, mode):
        if isinstance(randomness, FixedBaseRandomness):
            ciphertexts = encrypt_parallel(
                public_key,
                plaintexts,
                workers=workers,
                mode=mode,
                exponent_bits=randomness.exponent_bits,
                window_bits=randomness.plan(-(-len(plaintexts) // workers)),
            )
        else:
            ciphertexts = encrypt_parallel(public_key, plaintexts, workers=workers, mode=mode)
    else:
        ciphertexts = cipher.encrypt(public_key, plaintexts, randomness)
    return EncryptedArray(public_key, tuple(ciphertexts), arr.shape, layout, 1)


def plain_ring(
    public_key: PaillierPublicKey, ring: ArrayLike, *, layout: PackingLayout | None = None
) -> EncryptedArray:
    """Unrandomized ciphertexts ``1 + m n mod n^2`` of ring elements (no obfuscator, no exponentiation).

    What the aggregator of Liu et al. (AAAI 2020), Algorithm 1, steps 3 and 7,
    multiplies into the others' ciphertexts for its own input: their fresh
    obfuscators randomize the product, so its own needs none. The result has
    ``randomized=False`` and cannot be serialised on its own (see the module notes).

    Parameters
    ----------
    public_key : PaillierPublicKey
    ring : array_like of uint64
        Fixed-point ring elements.
    layout : PackingLayout, optional
        Pack with this layout, exactly as :func:`encrypt_ring` does.

    Returns
    -------
    EncryptedArray
        Weight 1, ``randomized=False``.
    """
    arr = _ring_array(ring)
    plaintexts = _plaintexts(public_key, arr, layout)
    n, n2 = public_key.n, public_key.n_square
    ciphertexts = tuple((1 + mpz(m) * n) % n2 for m in plaintexts)
    return EncryptedArray(public_key, ciphertexts, arr.shape, layout, 1, randomized=False)


def decrypt_ring(
    private_key: PaillierPrivateKey, encrypted: EncryptedArray, *, workers: int = 1
) -> NDArray[np.uint64]:
    """Decrypt to uint64 ring elements of the plaintext shape (Algorithm 1, steps 4 and 8).

    Raises
    ------
    PackingOverflowError
        If a decrypted value lies outside what ``encrypted.weight`` summands can
        produce (the ciphertexts were not made as declared).
    """
    if encrypted.public_key != private_key.public_key:
        raise InputValidationError("the private key does not match the array's public key")
    if worth_parallel(len(encrypted.ciphertexts), workers, "decrypt"):
        plain = decrypt_parallel(private_key, encrypted.ciphertexts, workers=workers)
    else:
        plain = cipher.decrypt(private_key, encrypted.ciphertexts)
    if encrypted.layout is not None:
        flat = encrypted.layout.unpack(plain, encrypted.size, encrypted.weight)
    else:
        n = private_key.public_key.n
        bound = encrypted.weight << (RING_BITS - 1)
        values = []
        for index, m in enumerate(plain):
            signed = int(cipher.from_residue(m, n))
            if abs(signed) > bound:
                raise PackingOverflowError(
                    f"element {index} decrypts to a value beyond what weight {encrypted.weight} allows"
                )
            values.append(signed & _RING_MASK)
        flat = np.array(values, dtype=np.uint64)
    return flat.reshape(encrypted.shape)


def sum_encrypted(arrays: Sequence[EncryptedArray]) -> EncryptedArray:
    """Homomorphic sum of several encrypted arrays (what party ``p`` does in steps 3 and 7)."""
    if not arrays:
        raise InputValidationError("sum_encrypted needs at least one array")
    total = arrays[0]
    for other in arrays[1:]:
        total = total + other
    return total
