"""Secure sum with Paillier encryption (Liu et al., AAAI 2020, Algorithm 1).

Protocol of one secure sum among contributors ``C`` (``M = |C|``) and a
receiver ``R`` (the paper's server), with ``E = C \\ {R}`` the contributors
that encrypt and ``p = E[0]`` the aggregator (the paper's "party p", a data
provider):

1. On the first sum of a run, ``R`` generates a key pair (step 1) -- or uses
   the one given to the backend -- and sends the public key ``n`` (fixed-width
   bytes) to every member of ``E`` it has not sent it to yet. Keys live in
   ``party.context`` for the run.
2. Every member of ``E`` but ``p`` encodes its array with the fixed-point
   codec (uint64 ring elements), packs it (``packing=True``, with headroom
   for ``M`` summands) or not, encrypts it and sends the ciphertext bytes to
   ``p`` (steps 2 and 6), in chunks of :data:`CHUNK_CIPHERTEXTS` ciphertexts
   (:func:`chunk_ranges`).
3. ``p`` multiplies, chunk by chunk, the others' ciphertexts and ``1 + m_p n``
   for its own plaintexts ``m_p`` (homomorphic addition) and sends each
   product to ``R`` (steps 3 and 7). ``p`` draws no obfuscator of its own: the
   others' fresh ones make the product a ciphertext with a uniform
   obfuscator, which hides ``m_p`` as well as encrypting it would (``R``, who
   can decrypt, learns the sum either way). Only when ``p`` is the sole
   encrypting party does it encrypt its input.
4. ``R`` decrypts each chunk with the CRT as it arrives (while the
   contributors encrypt the next), unpacks, adds its own encoding if it is a
   contributor, and decodes to float64 (steps 4 and 8).

When ``R`` is itself a contributor it never acts as ``p`` (it would receive
every individual ciphertext, which it can decrypt); it adds its own encoding
in the clear after decryption, which tells it nothing more than the sum.

Messages carrying ciphertexts are ``{"shape", "offset", "layout", "weight",
"ciphertexts"}`` dicts (the whole array's shape, the chunk's first
ciphertext) whose ciphertexts are fixed-width big-endian bytes
(:mod:`protocols.paillier.serialize`); every field is checked on receipt and a
mismatch raises :class:`~protocols.errors.ProtocolError`.

Trust model (as in the paper): honest-but-curious parties; ``R`` does not
collude with ``p``. ``p`` sees only ciphertexts; ``R`` learns only the sum
(the offset encoding of :mod:`protocols.paillier.packing` keeps even the count
of negative inputs hidden). Paillier is IND-CPA, not CCA: no protection
against actively malicious parties.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.backends.base import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, ProtocolError
from protocols.paillier.arrays import (
    EncryptedArray,
    ciphertext_count,
    decrypt_ring,
    encrypt_ring,
    plain_ring,
    sum_encrypted,
)
from protocols.paillier.cipher import RandomnessSource, StandardRandomness
from protocols.paillier.keys import (
    DEFAULT_KEY_BITS,
    PaillierKeyPair,
    PaillierPublicKey,
    check_key_bits,
    generate_keypair,
)
from protocols.paillier.offline import ObfuscatorPool
from protocols.paillier.packing import PackingLayout, PackingOverflowError
from protocols.paillier.parallel import check_workers
from protocols.paillier.precompute import FixedBaseRandomness, worth_table
from protocols.paillier.serialize import public_key_from_bytes
from protocols.party import Party
from protocols.runtime.threads import usable_cpus

_MESSAGE_FIELDS = frozenset({"shape", "offset", "layout", "weight", "ciphertexts"})
#: Ciphertexts per message of one secure sum (:func:`chunk_ranges`).
CHUNK_CIPHERTEXTS = 32
#: Arrays of this many ciphertexts or more go in one message (fixed-base encryption
#: may then use worker processes: :func:`protocols.paillier.parallel.worth_parallel`).
WHOLE_ARRAY_CIPHERTEXTS = 4096
_KEY_FIELD = "paillier_public_key"


class PaillierBackend(SecureSumBackend):
    """Secure sum by additively homomorphic Paillier encryption (PPPCA-HE).

    Parameters
    ----------
    key_bits : int, optional
        Modulus size: 2048 (default) or 3072. Taken from ``keypair`` if given.
    precompute : bool, default=False
        Opt-in fast randomness: fixed-base ``h_s^a`` with an exponent of half
        ``n``'s length (:mod:`protocols.paillier.precompute`). ~15x faster
        encryption, but rests on a short-exponent assumption beyond DCR. The
        default is textbook ``r^n`` (``standard``); the command line's default
        is ``fixed-base``, full-length exponents (DCR alone):
        ``make_backend("paillier", **paillier_options())`` builds that one.
    workers : int, optional
        Default: the CPUs this process may use (``os.sched_getaffinity``).
        Cores each party uses to encrypt (and the receiver to decrypt) large
        arrays: threads for ``r^n`` and CRT decryption, worker processes for
        fixed-base encryption (:mod:`protocols.paillier.parallel`).
    packing : bool, default=True
        Pack ``floor((key_bits - 1) / (64 + ceil(log2 M)))`` ring elements per
        plaintext (31 for a 2048-bit key and ``M <= 4``). ``False`` encrypts
        one element per ciphertext.
    codec : FixedPointCodec, optional
        Fixed-point codec; 20 fractional bits by default.
    keypair : PaillierKeyPair or (public, private) tuple, optional
        Use this key instead of generating one per run. Only the receiver
        touches the private key; contributors still get the public key over
        the channel.
    allow_insecure_key_size : bool, default=False
        **Tests only**: accept moduli smaller than 2048 bits (even, >= 256).
    offline : bool, default=False
        Offline/online split with textbook randomness (DCR only,
        :mod:`protocols.paillier.offline`): each encrypting party first
        precomputes one ``r^n mod n^2`` per ciphertext it will send (this
        depends on the array's shape only, not its values), then encrypts with
        one modular multiplication each. Ignored with ``precompute=True``.
    exponent_bits : int, optional
        Fixed-base exponent length (default and minimum: ``key_bits // 2``).
    window_bits : int, optional
        Fixed-base table window; by default chosen for the first sum that builds
        the table (:func:`~protocols.paillier.precompute.best_window`: 6 bits,
        ~11.7 MB per encrypting party, for a ``d = 100`` Gram matrix).

    Notes
    -----
    The receiver learns the sum of the ``M`` ring encodings, exactly as with the
    additive backend, so both backends return identical results. Summing only
    a symmetric matrix's upper triangle is the caller's choice; see
    :func:`secure_sum_symmetric`.

    Cost on the 2-core reference machine with a 2048-bit key: each encrypting
    party spends about 9 ms per 31 values with ``r^n`` (about 0.6 ms with
    ``precompute=True``), the receiver about 2.6 ms per 31 values to decrypt;
    ciphertexts take 512 bytes per 31 values. A ``d x d`` Gram matrix's upper
    triangle at ``d = 1000`` (~16,000 ciphertexts) therefore needs ~150 s of
    ``r^n`` encryption: raise the receive ``timeout`` of long runs accordingly.
    """

    name = "paillier"

    def __init__(
        self,
        key_bits: int | None = None,
        *,
        precompute: bool = False,
        workers: int | None = None,
        packing: bool = True,
        codec: FixedPointCodec | None = None,
        keypair: PaillierKeyPair | tuple[Any, Any] | None = None,
        allow_insecure_key_size: bool = False,
        exponent_bits: int | None = None,
        window_bits: int | None = None,
        offline: bool = False,
    ) -> None:
        super().__init__(codec)
        if keypair is not None:
            keypair = PaillierKeyPair(*keypair)
            if keypair.private_key.public_key != keypair.public_key:
                raise InputValidationError("keypair: the private key does not match the public key")
            if key_bits is not None and key_bits != keypair.public_key.bits:
                raise InputValidationError(
                    f"key_bits={key_bits} contradicts the supplied {keypair.public_key.bits}-bit keypair"
                )
            key_bits = keypair.public_key.bits
        self.key_bits = check_key_bits(
            DEFAULT_KEY_BITS if key_bits is None else key_bits, allow_insecure_key_size
        )
        self.allow_insecure_key_size = bool(allow_insecure_key_size)
        self.keypair = keypair
        self.precompute = bool(precompute)
        self.workers = usable_cpus() if workers is None else check_workers(workers)
        self.packing = bool(packing)
        minimum = self.key_bits // 2
        if exponent_bits is not None and not minimum <= exponent_bits <= 2 * self.key_bits:
            raise InputValidationError(
                f"exponent_bits={exponent_bits} must be between {minimum} and {2 * self.key_bits} "
                f"for {self.key_bits}-bit keys"
            )
        if window_bits is not None and (
            isinstance(window_bits, bool) or not isinstance(window_bits, int) or not 1 <= window_bits <= 16
        ):
            raise InputValidationError(
                f"window_bits must be an integer between 1 and 16, got {window_bits!r}"
            )
        self.exponent_bits = exponent_bits
        self.window_bits = window_bits
        self.offline = bool(offline)

    @classmethod
    def max_bytes_per_entry(cls, key_bits: int | None = None) -> int:
        """One ciphertext mod ``n^2`` when nothing is packed (``2 key_bits`` bits) plus its length field."""
        return 2 * int(DEFAULT_KEY_BITS if key_bits is None else key_bits) // 8 + 8

    def __repr__(self) -> str:
        return (
            f"PaillierBackend(key_bits={self.key_bits}, precompute={self.precompute}, "
            f"workers={self.workers}, packing={self.packing}, codec={self.codec!r})"
        )

    # -- layout -----------------------------------------------------------------------
    def layout(self, n_summands: int) -> PackingLayout | None:
        """The packing layout for ``n_summands`` contributors (``None`` if ``packing=False``)."""
        return PackingLayout.for_summands(self.key_bits, n_summands) if self.packing else None

    # -- protocol ---------------------------------------------------------------------
    def _run(
        self,
        party: Party,
        value: NDArray[np.float64] | None,
        contributors: tuple[str, ...],
        receiver: str,
    ) -> NDArray[np.float64] | None:
        n_summands = len(contributors)
        ring = None if value is None else self.codec.encode(value, n_summands=n_summands)
        encrypting = tuple(c for c in contributors if c != receiver)
        aggregator = encrypting[0] if encrypting else receiver
        layout = self.layout(n_summands)
        if party.name == receiver:
            if not encrypting and ring is not None:  # the receiver is the only contributor
                return self.codec.decode(ring)
            return self._receive(party, ring, encrypting, aggregator, layout)
        if ring is None:
            raise ProtocolError(f"{party.name!r} is neither the receiver nor a contributor")
        public_key = self._public_key_from(party, receiver)
        flat = ring.ravel()
        chunks = chunk_ranges(flat.size, layout)
        others = encrypting[1:] if party.name == aggregator else ()
        # The aggregator's own input needs no obfuscator when another party's fresh one
        # randomizes the product (module notes); it encrypts only when it is alone.
        randomness = None if others else self._prepare(party, public_key, ciphertext_count(flat.size, layout))
        for offset, (lo, hi) in chunks:
            if randomness is None:
                mine = plain_ring(public_key, flat[lo:hi], layout=layout)
            else:
                mine = encrypt_ring(
                    public_key, flat[lo:hi], layout=layout, randomness=randomness, workers=self.workers
                )
            if party.name != aggregator:
                party.send(aggregator, _message(mine, ring.shape, offset))
                continue
            parts = [mine]
            for sender in others:
                parts.append(_parse(party.recv(sender), sender, public_key, layout, 1, ring.shape, offset))
            party.send(receiver, _message(sum_encrypted(parts), ring.shape, offset))
        return None

    def _receive(
        self,
        party: Party,
        ring: NDArray[np.uint64] | None,
        encrypting: tuple[str, ...],
        aggregator: str,
        layout: PackingLayout | None,
    ) -> NDArray[np.float64]:
        """Receiver: distribute the key if needed, decrypt the aggregate chunk by chunk (steps 1, 4, 8).

        Each chunk is decrypted as it arrives, while the contributors encrypt the next.
        """
        keypair = self._keypair_for(party)
        sent = party.context.setdefault(self._context_key(party.name, "sent"), set())
        for name in encrypting:
            if name not in sent:
                party.send(name, {_KEY_FIELD: keypair.public_key.to_bytes()})
                sent.add(name)
        shape = None if ring is None else ring.shape
        pieces: list[NDArray[np.uint64]] = []
        offset, total = 0, None
        while total is None or offset < total:
            message = party.recv(aggregator)
            if shape is None:  # the first chunk fixes the shape; every later one is checked against it
                shape = _message_shape(message, aggregator)
            if total is None:
                total = ciphertext_count(math.prod(shape), layout)
            chunk = _parse(message, aggregator, keypair.public_key, layout, len(encrypting), shape, offset)
            try:
                pieces.append(decrypt_ring(keypair.private_key, chunk, workers=self.workers))
            except PackingOverflowError as exc:
                raise ProtocolError(
                    f"the aggregate from {aggregator!r} does not decrypt to a valid sum: {exc}"
                ) from exc
            offset += max(len(chunk.ciphertexts), 1)
        summed = np.concatenate(pieces).reshape(shape)
        if ring is not None:
            summed = summed + ring  # uint64: wraps modulo 2^64
        return self.codec.decode(summed)

    # -- per-run state in party.context -----------------------------------------------------
    def _context_key(self, receiver: str, what: str) -> str:
        return f"paillier|{receiver}|{self.key_bits}|{what}"

    def _keypair_for(self, party: Party) -> PaillierKeyPair:
        key = self._context_key(party.name, "keypair")
        keypair = party.context.get(key)
        if keypair is None:
            keypair = self.keypair or generate_keypair(
                self.key_bits, allow_insecure_key_size=self.allow_insecure_key_size
            )
            party.context[key] = keypair
        return keypair

    def _public_key_from(self, party: Party, receiver: str) -> PaillierPublicKey:
        key = self._context_key(receiver, "public")
        public_key = party.context.get(key)
        if public_key is None:
            message = party.recv(receiver)
            if not isinstance(message, dict) or set(message) != {_KEY_FIELD}:
                raise ProtocolError(f"{party.name!r} expected a Paillier public key from {receiver!r}")
            public_key = public_key_from_bytes(message[_KEY_FIELD], self.key_bits)
            party.context[key] = public_key
        return public_key

    def _pool(self, party: Party, public_key: PaillierPublicKey) -> ObfuscatorPool:
        """This party's stock of offline ``r^n`` obfuscators for ``public_key`` (kept for the run)."""
        key = f"paillier|offline|{public_key.to_bytes().hex()}"
        pool = party.context.get(key)
        if pool is None:
            pool = ObfuscatorPool(public_key, workers=self.workers)
            party.context[key] = pool
        return pool

    def _prepare(self, party: Party, public_key: PaillierPublicKey, count: int) -> RandomnessSource:
        """The randomness for ``count`` ciphertexts of this party under ``public_key``.

        ``offline``: the stock is topped up to ``count`` first (it depends on the
        shape only). Fixed-base: this party's table, kept for the run; while it
        is not built and ``count`` is too small for a table to pay off
        (:func:`~protocols.paillier.precompute.worth_table`), textbook ``r^n``
        instead (DCR only, so never weaker); the first batch that pays builds
        the table with a window chosen for it.
        """
        if not self.precompute:
            if not self.offline:
                return StandardRandomness(public_key)
            pool = self._pool(party, public_key)
            pool.precompute(max(0, count - pool.available))
            return pool
        key = f"paillier|fixed-base|{public_key.to_bytes().hex()}|{self.exponent_bits}|{self.window_bits}"
        source = party.context.get(key)
        if source is None:
            source = FixedBaseRandomness(
                public_key, exponent_bits=self.exponent_bits, window_bits=self.window_bits
            )
            party.context[key] = source
        if not source.built and not worth_table(source.exponent_bits, count, public_key.bits):
            return StandardRandomness(public_key)
        source.plan(count)
        return source


def chunk_ranges(size: int, layout: PackingLayout | None) -> list[tuple[int, tuple[int, int]]]:
    """How one secure sum's ring elements are cut into messages: ``[(offset, (lo, hi)), ...]``.

    ``offset`` is the chunk's first ciphertext and ``lo:hi`` its elements in C
    order. Chunks hold :data:`CHUNK_CIPHERTEXTS` ciphertexts (the last one
    fewer) so that the receiver decrypts one while the contributors encrypt
    the next; an array of :data:`WHOLE_ARRAY_CIPHERTEXTS` ciphertexts or more
    goes whole (its encryption may spread over worker processes, whose
    start-up a chunk would not repay). An empty array is one empty chunk. A
    function of the size and layout only, so every party cuts alike.
    """
    count = ciphertext_count(size, layout)
    return [
        (offset, chunk_bounds(size, layout, offset)) for offset in range(0, max(count, 1), _per_chunk(count))
    ]


def _per_chunk(count: int) -> int:
    """Ciphertexts per chunk of an array of ``count`` ciphertexts (always at least 1)."""
    return count if count >= WHOLE_ARRAY_CIPHERTEXTS else CHUNK_CIPHERTEXTS


def chunk_bounds(size: int, layout: PackingLayout | None, offset: int) -> tuple[int, int]:
    """The elements ``lo:hi`` of the chunk of :func:`chunk_ranges` that starts at ciphertext ``offset``.

    Constant time whatever ``size`` a peer claims.

    Raises
    ------
    ProtocolError
        If no chunk starts at ``offset``.
    """
    slots = 1 if layout is None else layout.slots
    count = ciphertext_count(size, layout)
    per_chunk = _per_chunk(count)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or offset % per_chunk:
        raise ProtocolError(f"no chunk of an array of {size} elements starts at ciphertext {offset!r}")
    if offset >= max(count, 1):
        raise ProtocolError(
            f"no chunk of an array of {size} elements ({count} ciphertexts) starts at ciphertext {offset}"
        )
    return offset * slots, min((offset + per_chunk) * slots, size)


def _message(encrypted: EncryptedArray, shape: tuple[int, ...], offset: int) -> dict[str, Any]:
    layout = None if encrypted.layout is None else encrypted.layout.describe()
    return {
        "shape": list(shape),
        "offset": offset,
        "layout": layout,
        "weight": encrypted.weight,
        "ciphertexts": encrypted.to_bytes(),
    }


def _message_shape(message: Any, sender: str) -> tuple[int, ...]:
    """The whole array's shape in a chunk message, checked (the receiver's first chunk)."""
    if not isinstance(message, dict) or set(message) != _MESSAGE_FIELDS:
        raise ProtocolError(
            f"expected an encrypted-array message with fields {sorted(_MESSAGE_FIELDS)} from {sender!r}"
        )
    got = message["shape"]
    if not isinstance(got, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in got
    ):
        raise ProtocolError(f"{sender!r} sent a malformed shape {got!r}")
    if math.prod(got) >= 1 << 62:
        raise ProtocolError(f"{sender!r} sent a shape {got!r} of {math.prod(got)} elements, at least 2^62")
    return tuple(got)


def _parse(
    message: Any,
    sender: str,
    public_key: PaillierPublicKey,
    layout: PackingLayout | None,
    weight: int,
    shape: tuple[int, ...],
    offset: int,
) -> EncryptedArray:
    """Check one chunk message field by field; raise :class:`ProtocolError` on any mismatch.

    The chunk must be the one starting at ciphertext ``offset`` of an array of
    ``shape`` (:func:`chunk_ranges`); its ciphertexts are returned as a flat array.
    """
    got_shape = _message_shape(message, sender)
    if got_shape != tuple(shape):
        raise ProtocolError(f"{sender!r} sent ciphertexts of an array of shape {got_shape}, expected {shape}")
    if message["offset"] != offset:
        raise ProtocolError(
            f"{sender!r} sent the chunk at ciphertext {message['offset']!r}, expected {offset}"
        )
    expected_layout = None if layout is None else layout.describe()
    if message["layout"] != expected_layout:
        raise ProtocolError(
            f"{sender!r} used packing layout {message['layout']!r}, expected {expected_layout!r} "
            "(do all parties use the same backend options?)"
        )
    if message["weight"] != weight:
        raise ProtocolError(f"{sender!r} sent a sum of {message['weight']!r} arrays, expected {weight}")
    lo, hi = chunk_bounds(math.prod(shape), layout, offset)
    try:
        return EncryptedArray.from_bytes(public_key, message["ciphertexts"], (hi - lo,), layout, weight)
    except ProtocolError as exc:
        raise ProtocolError(f"{sender!r} sent a malformed ciphertext array: {exc}") from exc
    except InputValidationError as exc:
        raise ProtocolError(f"{sender!r} sent an inconsistent ciphertext array: {exc}") from exc
