"""Deliberately broken secure-sum backends: each violates exactly one property of the kit.

Used by tests/protocols/testing/test_testing_kit.py to show that
:func:`protocols.testing.check_secure_sum_backend` flags each one, naming the
property. Every class is a realistic bug, not a crash: all of them still sum
correctly unless the property is about the sum.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from protocols.backends.additive import AdditiveBackend
from protocols.backends.base import SecureSumBackend
from protocols.errors import ProtocolError
from protocols.messages import expect_array
from protocols.prg import KEY_BYTES, RingPRG


class OffsetAtReceiver(AdditiveBackend):
    """Adds 1e-3 to the sum at the receiver (breaks ``correctness``)."""

    def secure_sum(self, party: Any, value: Any, **kwargs: Any) -> Any:
        total = super().secure_sum(party, value, **kwargs)
        return None if total is None else total + 1e-3


class ForwardsTheSum(AdditiveBackend):
    """The receiver forwards the sum to the first other contributor (breaks ``receiver-only output``)."""

    def secure_sum(self, party: Any, value: Any, *, contributors: Any, receiver: str, **kwargs: Any) -> Any:
        total = super().secure_sum(party, value, contributors=contributors, receiver=receiver, **kwargs)
        others = [c for c in sorted(contributors) if c != receiver]
        if total is not None and others:
            party.send(others[0], total)
        return total


class FrozenMaskCounter(AdditiveBackend):
    """Masks mode whose per-group stream counter never advances (breaks ``fresh randomness``)."""

    def __init__(self) -> None:
        super().__init__(mode="masks")

    def _run(self, party: Any, value: Any, contributors: Any, receiver: str) -> Any:
        out = super()._run(party, value, contributors, receiver)
        for key, state in party.context.items():
            if key.startswith("additive-masks|"):
                state["counter"] = 0
        return out


class AnnouncesShapeFirst(AdditiveBackend):
    """Each contributor tells the receiver its array's shape before validating (breaks
    ``validation before sending``)."""

    def secure_sum(self, party: Any, value: Any, *, contributors: Any, receiver: str, **kwargs: Any) -> Any:
        if party.name != receiver:
            party.send(receiver, list(np.shape(value)))
        else:
            for sender in sorted(contributors):
                if sender != receiver:
                    party.recv(sender)
        return super().secure_sum(party, value, contributors=contributors, receiver=receiver, **kwargs)


class ShortMasks(SecureSumBackend):
    """Pairwise masks from seeds the contributors exchange, cut to 32 bits (breaks
    ``view independence``: the top half of each masked word is the input's)."""

    name = "short-masks"

    def _run(self, party: Any, value: Any, contributors: Any, receiver: str) -> Any:
        masked = None
        if value is not None:
            masked = self.codec.encode(value, n_summands=len(contributors))
            for peer in contributors:
                if peer == party.name:
                    continue
                if party.name < peer:
                    seed = secrets.token_bytes(KEY_BYTES)
                    party.send(peer, seed)
                else:
                    seed = party.recv(peer)
                    if not isinstance(seed, bytes) or len(seed) != KEY_BYTES:
                        raise ProtocolError(f"{peer!r} sent a malformed seed")
                mask = RingPRG(seed).ring_elements(masked.shape) >> np.uint64(32)  # the bug
                if party.name < peer:
                    masked += mask
                else:
                    masked -= mask
        if party.name != receiver:
            party.send(receiver, masked)
            return None
        shape = None if masked is None else masked.shape
        total = None if masked is None else masked.copy()
        for sender in contributors:
            if sender == receiver:
                continue
            part = expect_array(party.recv(sender), sender=sender, shape=shape, dtype=np.uint64)
            shape = part.shape
            total = part.copy() if total is None else total + part
        return self.codec.decode(total)


class ZeroOnFailure(AdditiveBackend):
    """Returns zeros instead of failing when a peer is lost (breaks ``dead peer``)."""

    def secure_sum(self, party: Any, value: Any, *, receiver: str, **kwargs: Any) -> Any:
        try:
            return super().secure_sum(party, value, receiver=receiver, **kwargs)
        except ProtocolError:
            return np.zeros(np.shape(value)) if party.name == receiver else None


class TrustsItsPeers(AdditiveBackend):
    """Receiver casts whatever arrives to ring words without checking it (breaks ``malformed peer``)."""

    def __init__(self) -> None:
        super().__init__(mode="masks")

    def _run(self, party: Any, value: Any, contributors: Any, receiver: str) -> Any:
        if party.name != receiver or value is not None:
            return super()._run(party, value, contributors, receiver)
        from protocols.backends.additive import _mask_state

        _mask_state(party, contributors, receiver)
        total = sum(np.asarray(party.recv(sender), dtype=np.uint64) for sender in contributors)
        return self.codec.decode(np.asarray(total, dtype=np.uint64))
