"""Products of additively shared matrices among ``M`` providers, without a dealer.

Every provider ``i`` holds ``A_i`` and ``B_i``; with ``A = sum_i A_i`` and
``B = sum_i B_i`` (mod ``2^64``), :func:`shared_product` leaves provider ``i``
with ``C_i`` such that ``sum_i C_i = A @ B`` (or ``A * B``). Since

    ``A @ B = sum_i A_i @ B_i + sum_(i != j) A_i @ B_j``,

provider ``i`` computes its diagonal term locally and every cross term
``A_i @ B_j`` is one two-party OLE (:mod:`protocols.tensor.ole`) in which
``j`` encrypts ``B_j`` under its own Paillier key and ``i`` answers. A
provider encrypts its operand once and sends the same ciphertexts to every
other provider (each answer carries its own fresh mask and fresh Paillier
randomness), so one product costs every provider one encryption of its
operand, ``M - 1`` answers and ``M - 1`` decryptions.

Privacy (semi-honest, any coalition of up to ``M - 1`` providers, with or
without the server, which takes no part): a provider receives only
ciphertexts under other providers' keys (semantically secure) and, under its
own key, slots ``x + m`` with a fresh mask ``m`` ``stat_bits`` wider than
``x`` (statistically hiding). So a coalition missing provider ``h`` learns
nothing about ``A_h`` or ``B_h``; when ``A_h``, ``B_h`` are uniform (triples,
:func:`provider_triple`), ``A``, ``B`` and ``C`` are uniform to it.

Messages: the public keys at :func:`exchange_keys` (fixed-width bytes,
size-checked), then only ciphertext byte strings (range-checked); nothing is
unpickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.ot.links import OtLinks, setup_links
from protocols.paillier.keys import PaillierKeyPair, PaillierPublicKey, check_key_bits, generate_keypair
from protocols.paillier.serialize import public_key_from_bytes, public_key_to_bytes
from protocols.party import Party
from protocols.prg import RingPRG
from protocols.tensor.ole import Kind, OleLayout, cheaper_transposed, encrypt_operand, finish, respond

_U = np.uint64


@dataclass
class ProviderGroup:
    """One provider's keys and peers for dealer-free generation.

    Attributes
    ----------
    party : Party
    providers : tuple of str
        All ``M`` providers, in the same order at every provider.
    keypair : PaillierKeyPair
        This provider's own key pair (never leaves it).
    peer_keys : dict of str to PaillierPublicKey
        Every other provider's public key.
    """

    party: Party
    providers: tuple[str, ...]
    keypair: PaillierKeyPair
    peer_keys: dict[str, PaillierPublicKey]
    _ot: OtLinks | None = field(default=None, repr=False)

    def ot_links(self) -> OtLinks:
        """The OT-extension links to every other provider, set up (base OTs, two rounds) on first use.

        Every provider reaches its first use at the same step of the offline
        phase (the first truncation pair), so the set-up rounds line up.
        """
        if self._ot is None:
            self._ot = setup_links(self.party, self.others)
        return self._ot

    @property
    def me(self) -> str:
        return self.party.name

    @property
    def index(self) -> int:
        return self.providers.index(self.me)

    @property
    def others(self) -> list[str]:
        return [p for p in self.providers if p != self.me]

    @property
    def key_bits(self) -> int:
        return self.keypair.public_key.bits


def exchange_keys(
    party: Party,
    providers: Sequence[str],
    *,
    key_bits: int = 2048,
    keypair: PaillierKeyPair | None = None,
    allow_insecure_key_size: bool = False,
) -> ProviderGroup:
    """Generate (or take) this provider's key pair and swap public keys with the others (one round).

    Parameters
    ----------
    party : Party
    providers : sequence of str
        The ``M >= 2`` providers; ``party`` must be one of them.
    key_bits : int, default=2048
        Modulus size every provider uses (checked on every received key).
    keypair : PaillierKeyPair, optional
        A key pair made beforehand (e.g. stored); generated when omitted.
    allow_insecure_key_size : bool, default=False
        Test-only: accept moduli below 2048 bits.
    """
    providers = tuple(providers)
    if len(providers) < 2 or len(set(providers)) != len(providers) or party.name not in providers:
        raise InputValidationError(f"need >= 2 distinct providers including {party.name!r}, got {providers}")
    key_bits = check_key_bits(key_bits, allow_insecure_key_size)
    if keypair is None:
        keypair = generate_keypair(key_bits, allow_insecure_key_size=allow_insecure_key_size)
    if keypair.public_key.bits != key_bits:
        raise InputValidationError(f"the key pair has {keypair.public_key.bits} bits, expected {key_bits}")
    others = [p for p in providers if p != party.name]
    for peer in others:
        party.send(peer, public_key_to_bytes(keypair.public_key))
    peer_keys = {peer: public_key_from_bytes(party.recv(peer), key_bits) for peer in others}
    return ProviderGroup(party, providers, keypair, peer_keys)


def _local(kind: Kind, a: NDArray[np.uint64], b: NDArray[np.uint64]) -> NDArray[np.uint64]:
    return a * b if kind == "mul" else a @ b


def _check(kind: Kind, a: NDArray[np.uint64], b: NDArray[np.uint64]) -> None:
    if a.dtype != _U or b.dtype != _U:
        raise InputValidationError(f"operands must be uint64 ring arrays, got {a.dtype} and {b.dtype}")
    if kind == "mul" and a.shape != b.shape:
        raise InputValidationError(f"elementwise product of shapes {a.shape} and {b.shape}")
    if kind == "matmul" and (a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]):
        raise InputValidationError(f"cannot multiply {a.shape} by {b.shape}")


def shared_product(
    group: ProviderGroup, kind: Kind, a: NDArray[np.uint64], b: NDArray[np.uint64]
) -> NDArray[np.uint64]:
    """This provider's share of ``(sum_i A_i) @ (sum_i B_i)`` (or ``*``); three message rounds.

    Every provider calls it with its own shares ``a``, ``b`` of the agreed shapes.
    For ``matmul`` with few output columns the OLEs run transposed
    (``C^T = B^T A^T``; :func:`protocols.tensor.ole.cheaper_transposed`), a
    public choice that depends on the shapes only.
    """
    a, b = np.asarray(a), np.asarray(b)
    _check(kind, a, b)
    transposed = False
    if kind == "matmul":
        slots = OleLayout(group.key_bits, a.shape[1]).slots
        transposed = cheaper_transposed(a.shape, b.shape, slots, len(group.others))
    left, right = (b.T.copy(), a.T.copy()) if transposed else (a, b)
    inner = left.shape[1] if kind == "matmul" else 1
    out = _local(kind, left, right)
    payload = encrypt_operand(group.keypair, kind, right, inner)
    for peer in group.others:
        group.party.send(peer, payload)
    for peer in group.others:
        reply, share = respond(group.peer_keys[peer], kind, left, group.party.recv(peer), right.shape)
        group.party.send(peer, reply)
        out += share
    for peer in group.others:
        out += finish(group.keypair, kind, group.party.recv(peer), left.shape, right.shape)
    return out.T.copy() if transposed else out


def fresh_ring(shape: tuple[int, ...]) -> NDArray[np.uint64]:
    """Uniform ring words from a ChaCha20 stream under a fresh :mod:`secrets` key."""
    return RingPRG().ring_elements(shape)


def provider_triple(
    group: ProviderGroup, kind: Kind, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """This provider's shares ``(A_i, B_i, C_i)`` of a fresh Beaver triple ``C = A @ B`` (or ``A * B``)."""
    a, b = fresh_ring(tuple(a_shape)), fresh_ring(tuple(b_shape))
    return a, b, shared_product(group, kind, a, b)


def provider_fixed_triple(
    group: ProviderGroup, a: NDArray[np.uint64], b_shape: tuple[int, ...]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Shares ``(B_i, C_i)`` with ``C = A @ B`` for a fresh ``B`` and an existing shared mask ``A``."""
    b = fresh_ring(tuple(b_shape))
    return b, shared_product(group, "matmul", a, b)
