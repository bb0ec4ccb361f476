"""Per-run signing keys of the parties, for messages that a third party relays.

Each party of a run holds an Ed25519 key made for that run alone, and the
verification key of every other party, learnt over a path that does *not*
go through any relay: the in-process runtime hands them out itself, and the
networked transports exchange them once over the direct link between each
pair of parties (authenticated by TLS and bound to the certified party name,
unless ``insecure=True``). A party signs what a relay passes on (e.g. its X25519
public key in the ``masks`` mode of :mod:`protocols.backends.additive`), so
the relay cannot substitute it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from protocols.errors import ProtocolError

PUBLIC_BYTES = 32
SIGNATURE_BYTES = 64


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class Identity:
    """This party's signing key and the other parties' verification keys.

    Parameters
    ----------
    me : str
        The owner's party name.
    key : Ed25519PrivateKey
        The owner's signing key for this run.
    peers : mapping of str to bytes
        Raw 32-byte Ed25519 public key of every other party.
    """

    def __init__(self, me: str, key: Ed25519PrivateKey, peers: Mapping[str, bytes]) -> None:
        self.me = me
        self._key = key
        self._peers: dict[str, bytes] = {}
        for name, raw in peers.items():
            if not isinstance(raw, bytes) or len(raw) != PUBLIC_BYTES:
                raise ProtocolError(f"the signing key of {name!r} is not {PUBLIC_BYTES} bytes")
            self._peers[name] = raw
        # Parsed on first use: a run of M parties holds M (M - 1) verification keys, and most are
        # never used (only the masks modes verify, each contributor its group's keys).
        self._parsed: dict[str, Ed25519PublicKey] = {}

    @property
    def public(self) -> bytes:
        """The owner's raw verification key."""
        return _raw(self._key.public_key())

    def peer_public(self, name: str) -> bytes:
        """``name``'s raw verification key for this run (``b""`` if this identity holds none for it)."""
        return self._peers.get(name, b"")

    def sign(self, data: bytes) -> bytes:
        """Ed25519 signature of ``data`` by the owner."""
        return self._key.sign(data)

    def verify(self, signer: str, data: bytes, signature: Any) -> bool:
        """Whether ``signature`` is ``signer``'s signature of ``data`` (never raises on bad input)."""
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_BYTES:
            return False
        if signer == self.me:
            public = self._key.public_key()
        elif signer in self._parsed:
            public = self._parsed[signer]
        elif signer in self._peers:
            try:
                public = self._parsed[signer] = Ed25519PublicKey.from_public_bytes(self._peers[signer])
            except ValueError:  # not a valid key encoding: nothing it could have signed
                return False
        else:
            return False
        try:
            public.verify(signature, data)
        except InvalidSignature:
            return False
        return True


def group_identities(names: Iterable[str]) -> dict[str, Identity]:
    """Fresh identities for parties that share one process (the in-process runtime)."""
    keys = {name: Ed25519PrivateKey.generate() for name in names}
    publics = {name: _raw(key.public_key()) for name, key in keys.items()}
    return {
        name: Identity(name, key, {p: raw for p, raw in publics.items() if p != name})
        for name, key in keys.items()
    }


def exchange_identity(
    me: str,
    peers: Iterable[str],
    send: Callable[[str, bytes], None],
    recv: Callable[[str], Any],
    after_send: Callable[[], None] | None = None,
) -> Identity:
    """Make this party's key and swap verification keys with every peer over the direct links.

    ``after_send`` (if given) runs once this party's key is on its way to
    every peer and before any peer's key is awaited: what it sends travels in
    the same round (e.g. the run's announcements, :func:`protocols.runtime.network.open_links`).
    """
    key = Ed25519PrivateKey.generate()
    mine = _raw(key.public_key())
    names = list(peers)
    for peer in names:
        send(peer, mine)
    if after_send is not None:
        after_send()
    received = {}
    for peer in names:
        raw = recv(peer)
        if not isinstance(raw, (bytes, bytearray, memoryview)) or len(raw) != PUBLIC_BYTES:
            raise ProtocolError(f"{peer!r} sent a malformed signing key")
        received[peer] = bytes(raw)
    return Identity(me, key, received)


__all__ = ["Identity", "exchange_identity", "group_identities"]
