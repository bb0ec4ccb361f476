"""Secure sum with Paillier encryption (Liu et al., AAAI 2020, Algorithm 1).

Protocol of one secure sum among contributors ``C`` (``M = |C|``) and a
receiver ``R`` (the paper's server), with ``E = C \\ {R}`` the contributors
that encrypt and ``p = E[0]`` the aggregator (the paper's "party p", a data
provider):

1. On the first sum of a run, ``R`` generates a key pair (step 1) -- or uses
   the one given to the backend -- and sends the public key ``n`` (fixed-width
   bytes) to every member of ``E`` it has not sent it to yet. Keys live in
   ``party.context`` for the run.
2. Every member of ``E`` encodes its array with the fixed-point codec
   (uint64 ring elements), packs it (``packing=True``, with headroom for ``M``
   summands) or not, encrypts it and sends the ciphertext bytes to ``p``
   (steps 2 and 6). ``p`` keeps its own.
3. ``p`` multiplies the ``|E|`` ciphertext arrays (homomorphic addition) and
   sends the result to ``R`` (steps 3 and 7).
4. ``R`` decrypts with the CRT, unpacks, adds its own encoding if it is a
   contributor, and decodes to float64 (steps 4 and 8).

When ``R`` is itself a contributor it never acts as ``p`` (it would receive
every individual ciphertext, which it can decrypt); it adds its own encoding
in the clear after decryption, which tells it nothing more than the sum.

Messages carrying ciphertexts are ``{"shape", "layout", "weight",
"ciphertexts"}`` dicts whose ciphertexts are fixed-width big-endian bytes
(:mod:`protocols.paillier.serialize`); every field is checked on receipt and a
mismatch raises :class:`~protocols.errors.ProtocolError`.

Trust model (as in the paper): honest-but-curious parties; ``R`` does not
collude with ``p``. ``p`` sees only ciphertexts; ``R`` learns only the sum
(the offset encoding of :mod:`protocols.paillier.packing` keeps even the count
of negative inputs hidden). Paillier is IND-CPA, not CCA: no protection
against actively malicious parties.
"""

from __future__ import annotations

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
from protocols.paillier.precompute import DEFAULT_WINDOW_BITS, FixedBaseRandomness
from protocols.paillier.serialize import public_key_from_bytes
from protocols.party import Party
from protocols.runtime.threads import usable_cpus

_MESSAGE_FIELDS = frozenset({"shape", "layout", "weight", "ciphertexts"})
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
        default is textbook ``r^n``.
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
    window_bits : int, default=8
        Fixed-base table window (2048-bit key: ~16.7 MB per encrypting party).

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
        window_bits: int = DEFAULT_WINDOW_BITS,
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
        if not 1 <= window_bits <= 16:
            raise InputValidationError(f"window_bits must be between 1 and 16, got {window_bits}")
        self.exponent_bits = exponent_bits
        self.window_bits = int(window_bits)
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
        if self.offline and not self.precompute:  # offline phase: depends on the shape only
            pool = self._pool(party, public_key)
            pool.precompute(max(0, ciphertext_count(ring.size, layout) - pool.available))
        mine = encrypt_ring(
            public_key,
            ring,
            layout=layout,
            randomness=self._randomness(party, public_key),
            workers=self.workers,
        )
        if party.name != aggregator:
            party.send(aggregator, _message(mine))
            return None
        parts = [mine]
        for sender in encrypting[1:]:
            parts.append(_parse(party.recv(sender), sender, public_key, layout, 1, ring.shape))
        party.send(receiver, _message(sum_encrypted(parts)))
        return None

    def _receive(
        self,
        party: Party,
        ring: NDArray[np.uint64] | None,
        encrypting: tuple[str, ...],
        aggregator: str,
        layout: PackingLayout | None,
    ) -> NDArray[np.float64]:
        """Receiver: distribute the key if needed, decrypt the aggregate (steps 1, 4, 8)."""
        keypair = self._keypair_for(party)
        sent = party.context.setdefault(self._context_key(party.name, "sent"), set())
        for name in encrypting:
            if name not in sent:
                party.send(name, {_KEY_FIELD: keypair.public_key.to_bytes()})
                sent.add(name)
        expected_shape = None if ring is None else ring.shape
        total = _parse(
            party.recv(aggregator), aggregator, keypair.public_key, layout, len(encrypting), expected_shape
        )
        try:
            summed = decrypt_ring(keypair.private_key, total, workers=self.workers)
        except PackingOverflowError as exc:
            raise ProtocolError(
                f"the aggregate from {aggregator!r} does not decrypt to a valid sum: {exc}"
            ) from exc
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

    def _randomness(self, party: Party, public_key: PaillierPublicKey) -> RandomnessSource:
        if not self.precompute:
            return self._pool(party, public_key) if self.offline else StandardRandomness(public_key)
        key = f"paillier|fixed-base|{public_key.to_bytes().hex()}|{self.exponent_bits}|{self.window_bits}"
        source = party.context.get(key)
        if source is None:
            source = FixedBaseRandomness(
                public_key, exponent_bits=self.exponent_bits, window_bits=self.window_bits
            )
            party.context[key] = source
        return source


def _message(encrypted: EncryptedArray) -> dict[str, Any]:
    layout = None if encrypted.layout is None else encrypted.layout.describe()
    return {
        "shape": list(encrypted.shape),
        "layout": layout,
        "weight": encrypted.weight,
        "ciphertexts": encrypted.to_bytes(),
    }


def _parse(
    message: Any,
    sender: str,
    public_key: PaillierPublicKey,
    layout: PackingLayout | None,
    weight: int,
    shape: tuple[int, ...] | None,
) -> EncryptedArray:
    """Check a ciphertext message field by field; raise :class:`ProtocolError` on any mismatch."""
    if not isinstance(message, dict) or set(message) != _MESSAGE_FIELDS:
        raise ProtocolError(
            f"expected an encrypted-array message with fields {sorted(_MESSAGE_FIELDS)} from {sender!r}"
        )
    got_shape = message["shape"]
    if not isinstance(got_shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in got_shape
    ):
        raise ProtocolError(f"{sender!r} sent a malformed shape {got_shape!r}")
    if shape is not None and tuple(got_shape) != tuple(shape):
        raise ProtocolError(
            f"{sender!r} sent ciphertexts of an array of shape {tuple(got_shape)}, expected {shape}"
        )
    expected_layout = None if layout is None else layout.describe()
    if message["layout"] != expected_layout:
        raise ProtocolError(
            f"{sender!r} used packing layout {message['layout']!r}, expected {expected_layout!r} "
            "(do all parties use the same backend options?)"
        )
    if message["weight"] != weight:
        raise ProtocolError(f"{sender!r} sent a sum of {message['weight']!r} arrays, expected {weight}")
    try:
        return EncryptedArray.from_bytes(public_key, message["ciphertexts"], got_shape, layout, weight)
    except ProtocolError as exc:
        raise ProtocolError(f"{sender!r} sent a malformed ciphertext array: {exc}") from exc
    except InputValidationError as exc:
        raise ProtocolError(f"{sender!r} sent an inconsistent ciphertext array: {exc}") from exc
