"""Additive secret sharing over Z_{2^64}: the ``shares`` and ``masks`` modes.

``shares`` (Liu et al., AAAI 2020, Algorithm 2, steps 1-3 and 5-7)
    Every contributor encodes its array, splits it into ``M`` additive shares
    and sends share ``j`` to contributor ``j`` (keeping its own). Each
    contributor adds the ``M`` shares it holds and sends that partial sum to
    the receiver, who adds the ``M`` partial sums. The shares given away are
    PRG outputs, as in the paper, so each is sent as its 32-byte ChaCha20
    seed and expanded by its holder (seed-compressed sharing): a contributor
    sends ``M - 1`` seeds to peers and one array to the receiver, in two rounds. A seed that a
    peer already sent in an earlier sum of the run (a replay: the share it expands to is not the
    one its sender subtracted, so the sum would be silently wrong) is refused with a
    :class:`~protocols.errors.ProtocolError` naming that peer; each party keeps SHA-256 digests of
    the seeds it received in ``party.context`` for this. Secure against an
    honest-but-curious receiver that does not collude with any contributor,
    and against any coalition of up to ``M - 1`` curious contributors.

``masks`` (pairwise masking, in the style of Bonawitz et al.'s secure aggregation)
    Once per run, every contributor sends an X25519 public key, signed with its
    per-run identity key (:mod:`protocols.identity`), to the receiver, who
    relays the list to all contributors; each contributor checks every
    signature against the signer's verification key, which it got over its
    direct link to the signer, never through the relay, and each pair derives
    a shared key (HKDF-SHA256). For every sum, contributor ``i`` adds
    ``sum_{j>i} PRG(k_ij) - sum_{j<i} PRG(k_ij)`` (ordered by name) to its encoded array and sends
    that single masked array to the receiver; the masks cancel in the total.
    One array per contributor per sum. The signatures bind each key to its
    owner, the receiver and the contributor set, so a relay that substitutes
    or swaps keys is caught (:class:`~protocols.errors.ProtocolError` naming
    it). No dropout recovery by default: every contributor must deliver, as
    in ``shares`` mode; with ``dropout_threshold=t`` the sum survives
    providers that drop (:mod:`protocols.backends.dropout`).

``sparse-masks`` (pairwise masks over a sparse random graph, Bell et al. 2020 / SecAgg+)
    As ``masks``, but pairs share a mask only along the edges of a public
    random graph of expected degree ``k = O(log M)``, so a sum costs ``M k``
    instead of ``M (M - 1)`` ChaCha20 streams. Tolerates up to
    ``max_colluders`` contributors colluding with the receiver except with
    probability ``2^-security_bits`` over the graph; configurations that cannot
    meet this are refused before anything is sent. See
    :mod:`protocols.backends.sparse_masks`.

All modes reveal exactly the sum to the receiver and nothing to the
contributors; both use the same fixed-point encoding and give identical sums.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import NDArray

from protocols.backends import dropout, sparse_masks
from protocols.backends.base import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_array
from protocols.party import Party
from protocols.prg import KEY_BYTES, RingPRG, nonce_for_counter
from protocols.sharing import split_seeded

Mode = Literal["shares", "masks", "sparse-masks"]
_NAMES = {"shares": "additive", "masks": "additive-masks", "sparse-masks": "additive-sparse-masks"}
_RING = np.uint64


class AdditiveBackend(SecureSumBackend):
    """Secure sum by additive secret sharing in Z_{2^64}.

    Parameters
    ----------
    mode : {"shares", "masks", "sparse-masks"}, default="shares"
        ``shares`` is the paper's share distribution; ``masks`` sends one
        pairwise-masked array per contributor; ``sparse-masks`` masks only
        along a sparse public random graph. See the module docstring for
        the communication and trust differences.
    codec : FixedPointCodec, optional
        Fixed-point codec; 20 fractional bits by default.
    max_colluders : int, optional
        ``sparse-masks`` only: how many contributors may collude with the
        receiver (default: a third of them, rounded down).
    neighbours : int, optional
        ``sparse-masks`` only: expected degree of the mask graph; by default
        the smallest that meets ``security_bits`` for ``max_colluders``.
    security_bits : int, default=40
        ``sparse-masks`` only: the graph may leak with probability at most
        ``2^-security_bits``.
    graph_seed : bytes, optional
        ``sparse-masks`` only: a 32-byte public seed fixing the graph for the
        run (reproducible runs); by default the receiver draws one per group.
    dropout_threshold : int, optional
        ``masks`` only: survive providers that drop (opt-in). Each provider
        Shamir-shares its mask seeds among the others with this threshold
        ``t`` (2 <= t <= M) and the sum completes over the providers whose
        masked inputs arrived, if at least ``t`` did and ``t`` of them answer
        the unmasking step (:mod:`protocols.backends.dropout`). The receiver
        must not be a provider. Who counted: :func:`protocols.backends.dropout.last_outcome`.
    dropout_timeout : float, optional
        ``masks`` with ``dropout_threshold`` only: seconds the receiver waits
        for masked inputs before it drops the missing providers (default:
        half the channel's phase deadline).
    keys_from : str, optional
        ``masks`` and ``sparse-masks`` only: mask with the pairwise keys the
        same contributors already agreed earlier in the run through the relay
        ``keys_from`` (a sum of this mode with that receiver), instead of
        agreeing new ones through this sum's receiver. Their stream counter
        carries on, so no mask stream is used twice; the receiver (who may be
        a contributor) relays nothing. A contributor without such keys raises
        :class:`~protocols.errors.ProtocolError`.

    Notes
    -----
    The sum of ``M`` encoded values is exact in the ring, so the decoded sum
    differs from the float sum by at most ``M * 2^-(f+1)`` per entry (rounding
    at encoding only).
    """

    def __init__(
        self,
        mode: Mode = "shares",
        codec: FixedPointCodec | None = None,
        *,
        max_colluders: int | None = None,
        neighbours: int | None = None,
        security_bits: int = sparse_masks.DEFAULT_SECURITY_BITS,
        graph_seed: bytes | None = None,
        dropout_threshold: int | None = None,
        dropout_timeout: float | None = None,
        keys_from: str | None = None,
    ) -> None:
        super().__init__(codec)
        if mode not in _NAMES:
            raise InputValidationError(f"unknown additive mode {mode!r}; choose one of {list(_NAMES)}")
        sparse = (max_colluders, neighbours, graph_seed) != (None, None, None)
        if mode != "sparse-masks" and (sparse or security_bits != sparse_masks.DEFAULT_SECURITY_BITS):
            raise InputValidationError(
                f"max_colluders, neighbours, security_bits and graph_seed apply to mode='sparse-masks' only, "
                f"not {mode!r}"
            )
        if graph_seed is not None and (not isinstance(graph_seed, bytes) or len(graph_seed) != KEY_BYTES):
            raise InputValidationError(f"graph_seed must be {KEY_BYTES} bytes, got {graph_seed!r}")
        # The M-independent checks now; plan() checks the rest for each group.
        sparse_masks.check_parameters(max_colluders, neighbours, security_bits)
        if dropout_threshold is not None or dropout_timeout is not None:
            if mode != "masks":
                raise InputValidationError(
                    f"dropout_threshold and dropout_timeout apply to mode='masks' only, not {mode!r}"
                )
            dropout.check_dropout_settings(dropout_threshold, dropout_timeout)
        if keys_from is not None and (mode == "shares" or dropout_threshold is not None):
            raise InputValidationError(
                f"keys_from applies to mode='masks' (without dropout_threshold) and 'sparse-masks' only, "
                f"not mode={mode!r} with dropout_threshold={dropout_threshold!r}"
            )
        if keys_from is not None and (not isinstance(keys_from, str) or not keys_from):
            raise InputValidationError(f"keys_from must be a party name, got {keys_from!r}")
        self.keys_from = keys_from
        self.dropout_threshold = dropout_threshold
        self.dropout_timeout = dropout_timeout
        self.mode = mode
        self.name = _NAMES[mode]
        self.max_colluders = max_colluders
        self.neighbours = neighbours
        self.security_bits = security_bits
        self.graph_seed = graph_seed

    def settings(self) -> dict[str, object]:
        """The base settings plus the mode's: graph parameters, dropout threshold, key source."""
        return {
            **super().settings(),
            "max_colluders": self.max_colluders,
            "neighbours": self.neighbours,
            "security_bits": self.security_bits,
            "graph_seed": None if self.graph_seed is None else self.graph_seed.hex(),
            "dropout_threshold": self.dropout_threshold,
            "keys_from": self.keys_from,
        }

    def check_group(self, party: Party, contributors: tuple[str, ...], receiver: str) -> None:
        """The base checks plus what :meth:`_run` refuses before its first send (graph, names, identities)."""
        super().check_group(party, contributors, receiver)
        if self.mode == "sparse-masks":
            self.plan(len(contributors))
        if self.mode != "shares":
            _check_separator_free((*contributors, receiver))
        if self.dropout_threshold is not None:
            dropout.check_dropout_threshold(self.dropout_threshold, len(contributors))
        cached = f"{_NAMES[self.mode]}|{receiver}|{'|'.join(contributors)}" in party.context
        if (
            self.mode == "masks"
            and self.keys_from is None
            and self.dropout_threshold is None
            and not cached
            and party.name in contributors
            and party.channel.identity is None
        ):
            raise ProtocolError(
                f"{party.name!r}: masks mode needs party identities to sign its keys, but this channel has none"
            )

    def plan(self, n_contributors: int) -> sparse_masks.GraphPlan:
        """The mask graph a ``sparse-masks`` sum of ``n_contributors`` uses (raises if unsafe)."""
        return sparse_masks.plan_graph(
            n_contributors,
            max_colluders=self.max_colluders,
            neighbours=self.neighbours,
            security_bits=self.security_bits,
        )

    def __repr__(self) -> str:
        extra = ""
        if self.mode == "sparse-masks":
            extra = (
                f", max_colluders={self.max_colluders!r}, neighbours={self.neighbours!r}, "
                f"security_bits={self.security_bits!r}"
            )
        if self.dropout_threshold is not None:
            extra = (
                f", dropout_threshold={self.dropout_threshold!r}, dropout_timeout={self.dropout_timeout!r}"
            )
        if self.keys_from is not None:
            extra += f", keys_from={self.keys_from!r}"
        return f"{type(self).__name__}(mode={self.mode!r}, codec={self.codec!r}{extra})"

    def _run(
        self,
        party: Party,
        value: NDArray[np.float64] | None,
        contributors: tuple[str, ...],
        receiver: str,
    ) -> NDArray[np.float64] | None:
        plan = self.plan(len(contributors)) if self.mode == "sparse-masks" else None  # refuse before sending
        if self.mode != "shares":
            _check_separator_free((*contributors, receiver))
        encoded = None if value is None else self.codec.encode(value, n_summands=len(contributors))
        if self.dropout_threshold is not None:
            total = dropout.dropout_sum(
                party, encoded, contributors, receiver, self.dropout_threshold, self.dropout_timeout
            )
            return None if total is None else self.codec.decode(total)
        if self.mode == "shares":
            message = None if encoded is None else _share_round(party, encoded, contributors)
        elif self.keys_from is not None:
            message = (
                None if encoded is None else self._masked_with_earlier_keys(party, encoded, contributors)
            )
        elif plan is not None:
            key = f"additive-sparse-masks|{receiver}|{'|'.join(contributors)}"
            state = party.context.get(key)
            if state is None:
                state = sparse_masks.agree_sparse_keys(party, contributors, receiver, plan, self.graph_seed)
                party.context[key] = state
            message = None if encoded is None else sparse_masks.add_masks(party.name, state, encoded)
        else:
            state = _mask_state(party, contributors, receiver)  # the relay takes part too
            message = None if encoded is None else _masked(party, state, encoded, contributors)
        if party.name != receiver:
            party.send(receiver, message)
            return None
        shape = None if encoded is None else encoded.shape
        total = np.zeros(0, dtype=_RING) if message is None else message.copy()
        for sender in contributors:
            if sender == receiver:
                continue
            part = expect_array(party.recv(sender), sender=sender, shape=shape, dtype=_RING)
            if shape is None:
                shape = part.shape
                total = part.copy()
            else:
                total += part
        return self.codec.decode(total)

    def _masked_with_earlier_keys(
        self, party: Party, encoded: NDArray[np.uint64], contributors: tuple[str, ...]
    ) -> NDArray[np.uint64]:
        """Mask ``encoded`` with the keys agreed through :attr:`keys_from` (no key agreement here)."""
        group = "|".join(contributors)
        if self.mode == "sparse-masks":
            state = party.context.get(f"additive-sparse-masks|{self.keys_from}|{group}")
            if state is not None:
                return sparse_masks.add_masks(party.name, state, encoded)
        else:
            state = party.context.get(f"additive-masks|{self.keys_from}|{group}")
            if state is not None:
                return _masked(party, state, encoded, contributors)
        raise ProtocolError(
            f"{party.name!r} has no {self.name} keys agreed through {self.keys_from!r} for the "
            f"contributors {list(contributors)}; run a sum of this mode with receiver {self.keys_from!r} first"
        )


def _share_round(
    party: Party, encoded: NDArray[np.uint64], contributors: tuple[str, ...]
) -> NDArray[np.uint64]:
    """Split, distribute, and sum the shares this contributor holds (Alg. 2 steps 1-2).

    The ``M - 1`` shares handed to peers are PRG outputs (as in the paper), so
    the 32-byte ChaCha20 seed of each is sent instead of the expanded array;
    the peer expands it. This contributor keeps ``x - sum(shares)``.
    """
    peers = [peer for peer in contributors if peer != party.name]
    mine, seeds = split_seeded(encoded, len(contributors), overwrite=True)  # encoded is ours
    for peer, seed in zip(peers, seeds, strict=True):
        party.send(peer, seed)
    seen: dict[str, set[bytes]] = party.context.setdefault(_SEEN_SEEDS, {})
    for peer in peers:
        seed = party.recv(peer)
        if not isinstance(seed, bytes) or len(seed) != KEY_BYTES:
            raise ProtocolError(f"{peer!r} sent a malformed share seed; expected {KEY_BYTES} bytes")
        _check_fresh_seed(party.name, peer, seed, seen.setdefault(peer, set()))
        RingPRG(seed).accumulate(mine)  # mine += expand_share(seed), chunk by chunk
    return mine


#: ``party.context`` key of the digests of the share seeds each peer has sent this party in this run.
_SEEN_SEEDS = "additive-shares|seen-seeds"


def _check_fresh_seed(me: str, peer: str, seed: bytes, seen: set[bytes]) -> None:
    """Refuse a share seed ``peer`` already sent ``me`` in this run, then remember it.

    An honest contributor draws every seed afresh (32 random bytes), so a
    repeat is a replay: the share it stands for is not the one its sender
    subtracted, and the sum would be silently wrong. Only SHA-256 digests of
    the seeds are kept, not the seeds.

    Raises
    ------
    ProtocolError
        Naming ``peer``, if ``seed`` was seen before.
    """
    digest = hashlib.sha256(seed).digest()
    if digest in seen:
        raise ProtocolError(
            f"{me!r}: {peer!r} sent a share seed it already sent in an earlier sum of this run; "
            "expected a fresh seed per sum (a replayed seed would make the sum silently wrong)"
        )
    seen.add(digest)


# -- masks mode ------------------------------------------------------------------

_HKDF_INFO = b"mpc-pca additive pairwise mask v1"


def _check_separator_free(names: tuple[str, ...]) -> None:
    """Refuse names containing ``|``: it separates the names in the signed key statement and the
    key cache, so ``("a|b", "c")`` and ``("a", "b|c")`` would be the same group there."""
    for name in names:
        if "|" in name:
            raise InputValidationError(
                f"party name {name!r} contains '|', the separator of the masks-mode key statement; "
                "use letters, digits and hyphens"
            )


def _mask_state(party: Party, contributors: tuple[str, ...], receiver: str) -> dict:
    """Pairwise mask keys for this group, agreed once per run via the receiver."""
    key = f"additive-masks|{receiver}|{'|'.join(contributors)}"
    state = party.context.get(key)
    if state is None:
        state = _agree_pairwise_keys(party, contributors, receiver)
        party.context[key] = state
    return state


def _raw_public(key: X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _key_statement(owner: str, public: bytes, contributors: tuple[str, ...], receiver: str) -> bytes:
    """What a contributor signs: its X25519 key, bound to itself, the relay and the group."""
    group = "|".join(contributors).encode()
    return b"|".join([_HKDF_INFO, b"key", owner.encode(), receiver.encode(), group, public])


def _agree_pairwise_keys(party: Party, contributors: tuple[str, ...], receiver: str) -> dict:
    """Signed X25519 key agreement relayed by the receiver; returns per-peer PRG keys."""
    if party.name not in contributors:
        # Pure relay: collect every contributor's signed public key, send the list back.
        publics = {c: party.recv(c) for c in contributors}
        for c in contributors:
            party.send(c, publics)
        return {"keys": {}, "counter": 0}
    identity = party.channel.identity
    if identity is None:
        raise ProtocolError(
            f"{party.name!r}: masks mode needs party identities to sign its keys, but this channel has none"
        )
    private = X25519PrivateKey.generate()
    own_public = _raw_public(private)
    signed = {
        "key": own_public,
        "sig": identity.sign(_key_statement(party.name, own_public, contributors, receiver)),
    }
    if party.name == receiver:
        publics = {party.name: signed}
        publics.update({c: party.recv(c) for c in contributors if c != party.name})
        for c in contributors:
            if c != party.name:
                party.send(c, publics)
    else:
        party.send(receiver, signed)
        publics = party.recv(receiver)
    if not isinstance(publics, dict) or set(publics) != set(contributors):
        raise ProtocolError(f"{party.name!r} got a malformed public-key list from {receiver!r}")
    keys = {}
    for peer in contributors:
        entry = publics[peer]
        peer_public = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(peer_public, bytes) or len(peer_public) != 32:
            raise ProtocolError(f"public key of {peer!r} relayed by {receiver!r} is malformed")
        statement = _key_statement(peer, peer_public, contributors, receiver)
        if not identity.verify(peer, statement, entry.get("sig")):
            raise ProtocolError(
                f"{party.name!r}: the public key of {peer!r} relayed by {receiver!r} does not carry "
                f"{peer!r}'s signature; the relay altered or substituted it"
            )
        if peer == party.name:
            if peer_public != own_public:
                raise ProtocolError(
                    f"the relay {receiver!r} returned a different public key for {party.name!r}"
                )
            continue
        shared = private.exchange(X25519PublicKey.from_public_bytes(peer_public))
        low, high = sorted((party.name, peer))
        info = _HKDF_INFO + b"|" + low.encode() + b"|" + high.encode()
        keys[peer] = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(shared)
    return {"keys": keys, "counter": 0}


def _masked(
    party: Party, state: dict, encoded: NDArray[np.uint64], contributors: tuple[str, ...]
) -> NDArray[np.uint64]:
    """Add this contributor's pairwise masks (in place); they cancel over all contributors."""
    nonce = nonce_for_counter(state["counter"])
    state["counter"] += 1
    masked = encoded
    for peer in contributors:
        if peer == party.name:
            continue
        # The pair's lexicographically smaller name adds the mask, the larger one
        # subtracts it: both ends agree without relying on any list order.
        RingPRG(state["keys"][peer], nonce).accumulate(masked, subtract=party.name > peer)
    return masked
