"""Two-party oblivious linear evaluation (OLE) over Z_2^64 from Paillier, slot-packed.

Party ``j`` (the *receiver*, key holder) has ``B``; party ``i`` (the *sender*)
has ``A``. Afterwards ``i`` holds ``S_i`` and ``j`` holds ``S_j`` with
``S_i + S_j = A @ B (mod 2^64)`` (``kind="matmul"``) or ``A * B``
(``kind="mul"``, elementwise), and neither learns anything else about the
other's operand (semi-honest).

Protocol (three pure steps; the caller moves the bytes)
    1. :func:`encrypt_operand` (``j``): ``Enc_j(B)`` packed in slots, under
       ``j``'s own Paillier key (``r^n`` by the CRT, :func:`encrypt_own`);
    2. :func:`respond` (``i``): per packed output, the homomorphic sum of the
       ciphertexts raised to the entries of ``A`` (every exponent below
       ``2^64``; a fixed-base comb table per ciphertext when it serves several
       rows), times ``Enc_j(M)`` for a fresh packed mask ``M`` whose slots
       are uniform ``stat_bits`` (default 40) bits above the slot content,
       drawn with :mod:`secrets`. The encryption of ``M`` uses fresh Paillier
       randomness, so the reply is a fresh encryption of ``A @ B + M``
       (circuit privacy). ``i`` keeps ``S_i = -M mod 2^64`` per slot;
    3. :func:`finish` (``j``): decrypt, cut the slots, reduce mod ``2^64``:
       ``S_j = (A @ B + M) mod 2^64``.

Slot layout (:class:`OleLayout`)
    Operands are unsigned ring words in ``[0, 2^64)`` (no offset encoding: the
    sum never changes sign). A slot holds ``sum_k A[r,k] B[k,c]``: at most
    ``inner`` products below ``2^128``, so below ``2^content_bits`` with
    ``content_bits = 128 + headroom_for(inner)`` (the headroom of
    :func:`protocols.paillier.packing.headroom_for`). The mask is uniform in
    ``[0, 2^(content_bits + stat_bits))``, so content plus mask is below
    ``2^(content_bits + stat_bits + 1) = 2^slot_bits``: no slot ever carries
    into its neighbour, and ``slots = floor((key_bits - 1) / slot_bits)``
    slots keep the plaintext below ``2^(key_bits - 1) < n``, so nothing wraps
    modulo ``n`` either. What ``j`` decrypts in one slot is ``x + m`` with
    ``x < 2^content_bits`` and ``m`` uniform over ``2^stat_bits`` times that
    range: its distribution is within statistical distance ``2^-stat_bits`` of
    one that does not depend on ``x`` (hence on ``A``).

Packing orientation
    ``matmul``: the receiver packs each row of ``B`` (``ceil(p / slots)``
    plaintexts per row); the sender does ``m * n * ceil(p / slots)``
    exponentiations with 64-bit exponents and ``m * ceil(p / slots)`` mask
    encryptions (fewer multiplications with the comb, :func:`matmul_ole_ops`).
    Computing ``(B^T A^T)^T`` instead swaps ``m`` and ``p``;
    :func:`cheaper_transposed` picks the cheaper orientation from the shapes
    (public), each operation weighted by its measured time (the caller swaps
    the roles).
    ``mul``: element ``e`` goes to slot ``e mod slots``; the receiver encrypts
    every element on its own, already shifted to its slot (``B[e] 2^(s b)``),
    so the sender's exponents stay below ``2^64`` and it returns one
    ciphertext per ``slots`` elements.

Measured cost (this machine, 2 shared cores; ``python -m benchmarks.bench_offline``,
:func:`protocols.tensor.offline_cost.measure_timings`): at 2048 bits one
encryption 12.5 ms (7.0 ms under one's own key, :func:`encrypt_own`), one
64-bit exponentiation modulo ``n^2`` 0.43 ms, one multiplication 5.8 us, one
decryption 3.6 ms. A 2048-bit key has 11 slots for ``inner <= 128``
(``slot_bits = 176``). See :mod:`protocols.tensor.offline_cost` for what that
means for a whole run.

Nothing here unpickles: ciphertexts travel as fixed-width bytes
(:mod:`protocols.paillier.serialize`) and are range-checked when parsed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, NamedTuple

import gmpy2
import numpy as np
from gmpy2 import mpz
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.paillier.cipher import check_plaintexts, decrypt, encrypt, random_units
from protocols.paillier.keys import PaillierKeyPair, PaillierPublicKey
from protocols.paillier.packing import headroom_for
from protocols.paillier.serialize import ciphertexts_from_bytes, ciphertexts_to_bytes

Kind = Literal["mul", "matmul"]
#: Statistical security of the OLE masks, in bits.
STAT_BITS = 40
_RING = 1 << 64
_U = np.uint64


@dataclass(frozen=True)
class OleLayout:
    """Slot layout of one OLE (see the module docstring).

    Parameters
    ----------
    key_bits : int
        Bit length of the receiver's Paillier modulus.
    inner : int
        Products summed in one slot (``n`` of an ``m x n`` by ``n x p`` product; 1 for ``mul``).
    stat_bits : int, default=40
        Statistical security of the mask (at least 40).
    """

    key_bits: int
    inner: int
    stat_bits: int = STAT_BITS

    def __post_init__(self) -> None:
        if self.stat_bits < STAT_BITS:
            raise InputValidationError(f"stat_bits must be at least {STAT_BITS}, got {self.stat_bits}")
        if self.slots < 1:
            raise InputValidationError(
                f"a {self.key_bits}-bit key has no room for one {self.slot_bits}-bit OLE slot"
            )

    @property
    def content_bits(self) -> int:
        """Bits of a slot's content: ``inner`` products of two 64-bit words."""
        return 128 + headroom_for(self.inner)

    @property
    def mask_bits(self) -> int:
        """Bits of the uniform mask: ``stat_bits`` above the content."""
        return self.content_bits + self.stat_bits

    @property
    def slot_bits(self) -> int:
        """Content plus mask is below ``2^slot_bits``."""
        return self.mask_bits + 1

    @property
    def slots(self) -> int:
        """Slots per plaintext: the packed plaintext stays below ``2^(key_bits - 1)``."""
        return (self.key_bits - 1) // self.slot_bits


def _ring(x: NDArray[np.uint64], name: str, ndim: int) -> NDArray[np.uint64]:
    arr = np.asarray(x)
    if arr.dtype != _U or arr.ndim != ndim:
        raise InputValidationError(
            f"{name} must be a {ndim}-d uint64 ring array, got {arr.dtype} {arr.shape}"
        )
    return arr


def layout_for(kind: Kind, key_bits: int, a_shape: tuple[int, ...]) -> OleLayout:
    """The layout of an OLE of ``kind`` whose sender operand has ``a_shape``."""
    return OleLayout(key_bits, a_shape[1] if kind == "matmul" else 1)


#: Cost of one encryption (under a peer's key, and under one's own by the CRT), one
#: decryption and one 64-bit exponentiation in multiplications modulo ``n^2`` (measured at
#: 2048 bits: 12.5 ms, 7.0 ms, 3.6 ms, 0.43 ms and 5.8 us), for choosing the orientation.
ENCRYPT_WEIGHT = 2100
OWN_ENCRYPT_WEIGHT = 1200
DECRYPT_WEIGHT = 600
EXPONENTIATE_WEIGHT = 75
#: Bits of the exponent per row of the fixed-base comb table (:func:`_comb_table`).
COMB_WINDOW = 4
#: Smallest number of exponents per base for which the comb beats ``powmod``
#: (table: 256 multiplications; one exponent: 16 instead of about 88).
COMB_MIN_USES = 4
_COMB_TABLE_MULTIPLICATIONS = 256
_COMB_USE_MULTIPLICATIONS = 16


class OleOps(NamedTuple):
    """Paillier operations of one provider (see :func:`matmul_ole_ops`)."""

    own_encryptions: int
    encryptions: int
    exponentiations: int
    multiplications: int
    decryptions: int

    def weighted(self) -> int:
        """The cost in multiplications modulo ``n^2`` (the weights above)."""
        return (
            OWN_ENCRYPT_WEIGHT * self.own_encryptions
            + ENCRYPT_WEIGHT * self.encryptions
            + EXPONENTIATE_WEIGHT * self.exponentiations
            + self.multiplications
            + DECRYPT_WEIGHT * self.decryptions
        )


def matmul_ole_ops(m: int, n: int, p: int, slots: int, peers: int) -> OleOps:
    """Operations of one provider for ``(m x n) @ (n x p)`` among ``peers + 1`` providers.

    The provider encrypts its ``n x p`` operand once under its own key
    (``n ceil(p / slots)`` ciphertexts), answers ``peers`` others (``m``
    exponents per each of the ``n ceil(p / slots)`` ciphertexts, by ``powmod``
    below :data:`COMB_MIN_USES` rows, else by a comb table of 256
    multiplications and at most 16 per exponent; plus ``m ceil(p / slots)``
    mask encryptions under the peer's key) and decrypts ``peers`` replies of
    ``m ceil(p / slots)`` ciphertexts.
    """
    blocks = -(-p // slots)
    replies = peers * m * blocks
    bases = peers * n * blocks
    if m < COMB_MIN_USES:
        return OleOps(n * blocks, replies, bases * m, 0, replies)
    mults = bases * (_COMB_TABLE_MULTIPLICATIONS + _COMB_USE_MULTIPLICATIONS * m)
    return OleOps(n * blocks, replies, 0, mults, replies)


def cheaper_transposed(
    a_shape: tuple[int, int], b_shape: tuple[int, int], slots: int, peers: int = 1
) -> bool:
    """Whether ``(B^T A^T)^T`` costs less than ``A @ B`` (:meth:`OleOps.weighted`)."""
    (m, n), p = a_shape, b_shape[1]
    return matmul_ole_ops(p, n, m, slots, peers).weighted() < matmul_ole_ops(m, n, p, slots, peers).weighted()


def encrypt_own(keypair: PaillierKeyPair, plaintexts: list[int]) -> list[mpz]:
    """Encrypt under one's own key, ``(1 + m n) r^n mod n^2``, computing ``r^n`` by the CRT.

    The same ciphertexts as :func:`protocols.paillier.cipher.encrypt` (``r``
    uniform in ``Z_n^*`` from :mod:`secrets`), but the key holder knows
    ``p`` and ``q``: ``r^n mod p^2`` with the exponent reduced modulo
    ``p (p - 1)`` (the order of ``Z_(p^2)^*``), the same modulo ``q^2``, then
    the CRT; about 1.5 to 1.8 times faster than working modulo ``n^2``.
    """
    public, private = keypair
    n, n2 = public.n, public.n_square
    values = check_plaintexts(public, plaintexts)
    units = random_units(n, len(values))
    p2, q2 = private.p_square, private.q_square
    at_p = gmpy2.powmod_base_list([r % p2 for r in units], n % (private.p * (private.p - 1)), p2)
    at_q = gmpy2.powmod_base_list([r % q2 for r in units], n % (private.q * (private.q - 1)), q2)
    q2_inverse = gmpy2.invert(q2, p2)
    out = []
    for m, x_p, x_q in zip(values, at_p, at_q, strict=True):
        rho = x_q + q2 * ((x_p - x_q) * q2_inverse % p2)
        out.append((1 + m * n) * rho % n2)
    return out


def encrypt_operand(keypair: PaillierKeyPair, kind: Kind, b: NDArray[np.uint64], inner: int) -> bytes:
    """Step 1 (receiver): ``Enc(B)``, packed for ``kind``, as bytes.

    Parameters
    ----------
    keypair : PaillierKeyPair
        The receiver's own key pair.
    kind : {"mul", "matmul"}
    b : ndarray of uint64
        ``n x p`` for ``matmul``; any 1-d or 2-d shape for ``mul``.
    inner : int
        ``n`` for ``matmul``, 1 for ``mul``.
    """
    layout = OleLayout(keypair.public_key.bits, inner)
    shift, slots = layout.slot_bits, layout.slots
    plain: list[int] = []
    if kind == "matmul":
        b = _ring(b, "B", 2)
        for row in b.tolist():
            for start in range(0, len(row), slots):
                packed = 0
                for word in reversed(row[start : start + slots]):
                    packed = (packed << shift) | word
                plain.append(packed)
    else:
        words = _ring(b, "B", np.ndim(b)).ravel().tolist()
        plain = [word << (shift * (e % slots)) for e, word in enumerate(words)]
    return ciphertexts_to_bytes(keypair.public_key, encrypt_own(keypair, plain))


def _masks(layout: OleLayout, count: int, used: list[int]) -> tuple[list[int], NDArray[np.uint64]]:
    """Packed masks for ``count`` plaintexts with ``used[t]`` slots each, and ``-M mod 2^64`` per slot."""
    shift = layout.slot_bits
    packed: list[int] = []
    shares: list[int] = []
    for t in range(count):
        value = 0
        words = [secrets.randbits(layout.mask_bits) for _ in range(used[t])]
        for word in reversed(words):
            value = (value << shift) | word
        packed.append(value)
        shares.extend((-w) % _RING for w in words)
    return packed, np.array(shares, dtype=_U)


def _comb_table(base: mpz, n2: mpz) -> list[list[mpz]]:
    """``table[j][v] = base^(v 2^(4 j)) mod n^2`` for the 16 nibbles of a 64-bit exponent."""
    table = []
    power = base
    for _ in range(64 // COMB_WINDOW):
        row = [mpz(1), power]
        for _ in range((1 << COMB_WINDOW) - 2):
            row.append(row[-1] * power % n2)
        table.append(row)
        power = row[-1] * power % n2
    return table


def _raise_into(rows: list[list[mpz]], g: int, base: mpz, exponents: list[int], n2: mpz) -> None:
    """``rows[r][g] *= base^exponents[r] mod n^2`` for every row ``r`` (exponents below ``2^64``).

    With :data:`COMB_MIN_USES` or more exponents, a fixed-base comb: one table
    per base, then at most 16 multiplications per exponent, folded straight
    into the accumulator (about 4 times faster than one ``powmod`` each).
    """
    if len(exponents) < COMB_MIN_USES:
        for row, power in zip(rows, gmpy2.powmod_exp_list(base, exponents, n2), strict=True):
            row[g] = row[g] * power % n2
        return
    table = _comb_table(base, n2)
    mask = (1 << COMB_WINDOW) - 1
    for row, exponent in zip(rows, exponents, strict=True):
        acc, j = row[g], 0
        while exponent:
            nibble = exponent & mask
            if nibble:
                acc = acc * table[j][nibble] % n2
            exponent >>= COMB_WINDOW
            j += 1
        row[g] = acc


def respond(
    public_key: PaillierPublicKey,
    kind: Kind,
    a: NDArray[np.uint64],
    payload: bytes,
    b_shape: tuple[int, ...],
) -> tuple[bytes, NDArray[np.uint64]]:
    """Step 2 (sender): ``Enc(A @ B + M)`` as bytes, and the sender's share ``-M mod 2^64``.

    Parameters
    ----------
    public_key : PaillierPublicKey
        The receiver's public key (already checked for its size by the caller).
    kind : {"mul", "matmul"}
    a : ndarray of uint64
        ``m x n`` for ``matmul``; the shape of ``B`` for ``mul``.
    payload : bytes
        The receiver's :func:`encrypt_operand` output (parsed and range-checked here).
    b_shape : tuple of int
        The agreed shape of ``B``.

    Returns
    -------
    reply : bytes
    share : ndarray of uint64
        The sender's share of the product, shaped like it.
    """
    n2 = public_key.n_square
    if kind == "matmul":
        a = _ring(a, "A", 2)
        if len(b_shape) != 2 or a.shape[1] != b_shape[0]:
            raise InputValidationError(f"cannot multiply {a.shape} by {b_shape}")
        layout = OleLayout(public_key.bits, a.shape[1])
        blocks = -(-b_shape[1] // layout.slots)
        cts = ciphertexts_from_bytes(public_key, payload, b_shape[0] * blocks)
        rows = [[mpz(1)] * blocks for _ in range(a.shape[0])]
        for k, column in enumerate(a.T.tolist()):
            for g in range(blocks):
                _raise_into(rows, g, cts[k * blocks + g], column, n2)
        out = [c for row in rows for c in row]
        shape: tuple[int, ...] = (a.shape[0], b_shape[1])
    else:
        a = np.asarray(a)
        if a.dtype != _U or a.shape != tuple(b_shape):
            raise InputValidationError(
                f"elementwise OLE needs uint64 A of shape {b_shape}, got {a.dtype} {a.shape}"
            )
        layout = OleLayout(public_key.bits, 1)
        size = int(np.prod(b_shape))
        cts = ciphertexts_from_bytes(public_key, payload, size)
        out = []
        words = a.ravel().tolist()
        for start in range(0, size, layout.slots):
            acc = mpz(1)
            for e in range(start, min(start + layout.slots, size)):
                if words[e]:
                    acc = acc * gmpy2.powmod(cts[e], words[e], n2) % n2
            out.append(acc)
        shape = tuple(b_shape)
    used = _used_slots(kind, layout, a.shape, b_shape)
    masks, share = _masks(layout, len(out), used)
    masked = [c * m % n2 for c, m in zip(out, encrypt(public_key, masks), strict=True)]
    return ciphertexts_to_bytes(public_key, masked), share.reshape(shape)


def _used_slots(
    kind: Kind, layout: OleLayout, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> list[int]:
    """Slots in use in each reply ciphertext, in order."""
    if kind == "matmul":
        per_row = -(-b_shape[1] // layout.slots)
        return [min(layout.slots, b_shape[1] - g * layout.slots) for g in range(per_row)] * a_shape[0]
    size = int(np.prod(b_shape))
    return [min(layout.slots, size - start) for start in range(0, size, layout.slots)]


def reply_slots(
    keypair: PaillierKeyPair, kind: Kind, payload: bytes, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> list[int]:
    """Decrypt a reply and cut it into its slot values (whole integers ``x + m``, before any reduction).

    This is everything the receiver learns from the sender; :func:`finish`
    reduces it modulo ``2^64``. View tests look at these values.
    """
    layout = layout_for(kind, keypair.public_key.bits, a_shape)
    used = _used_slots(kind, layout, a_shape, b_shape)
    cts = ciphertexts_from_bytes(keypair.public_key, payload, len(used))
    mask, shift = (1 << layout.slot_bits) - 1, layout.slot_bits
    words: list[int] = []
    for value, count in zip(decrypt(keypair.private_key, cts), used, strict=True):
        value = int(value)
        for _ in range(count):
            words.append(value & mask)
            value >>= shift
    return words


def finish(
    keypair: PaillierKeyPair, kind: Kind, payload: bytes, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> NDArray[np.uint64]:
    """Step 3 (receiver): decrypt the reply and return its share ``(A @ B + M) mod 2^64``."""
    shape = (a_shape[0], b_shape[1]) if kind == "matmul" else tuple(b_shape)
    words = reply_slots(keypair, kind, payload, a_shape, b_shape)
    return np.array([w % _RING for w in words], dtype=_U).reshape(shape)
