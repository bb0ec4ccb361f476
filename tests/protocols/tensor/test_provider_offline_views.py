"""View test of dealer-free generation: what a provider receives does not depend on another's inputs.

Providers ``p1`` and ``p2`` receive ciphertexts under ``p0``'s key and, under
their own keys, ``p0``'s OLE replies. The kit records messages as sent, so the
replies would only show as ciphertext bytes; to test what ``p1`` and ``p2``
*learn*, each decrypts the reply from ``p0`` (:func:`protocols.tensor.ole.reply_slots`)
and forwards the slot values to an ``observer`` party, whose view the kit then
tests as well: low 64 bits as ring words (homogeneity and uniformity), the
bits above as bytes (homogeneity).
"""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from protocols.paillier.keys import generate_keypair
from protocols.tensor import ole
from protocols.tensor.provider_products import exchange_keys, shared_product
from protocols.testing.views import check_view_independence

KEY_BITS = 512
PROVIDERS = ("p0", "p1", "p2")
OBSERVER = "observer"
A_SHAPE, B_SHAPE = (16, 4), (4, 32)
_U = np.uint64


@pytest.fixture(scope="module")
def keys():
    return {p: generate_keypair(KEY_BITS, allow_insecure_key_size=True) for p in PROVIDERS}


def _fixed(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=shape, dtype=_U)


def _roles(keys, a0: np.ndarray, b0: np.ndarray):
    """``p0``'s shares ``a0``, ``b0`` are the input that varies; everything else is fixed.

    Both vary because the product may run transposed (``p0`` then answers with ``B_0^T``).
    """

    def provider(party):
        group = exchange_keys(
            party, PROVIDERS, key_bits=KEY_BITS, keypair=keys[party.name], allow_insecure_key_size=True
        )
        index = PROVIDERS.index(party.name)
        a = a0 if party.name == "p0" else _fixed(index, A_SHAPE)
        b = b0 if party.name == "p0" else _fixed(10 + index, B_SHAPE)
        captured: list[bytes] = []
        original = party.recv

        def capturing_recv(frm, timeout=None):
            message = original(frm, timeout)
            if frm == "p0":
                captured.append(message)
            return message

        party.recv = capturing_recv  # type: ignore[method-assign]
        shared_product(group, "matmul", a, b)
        if party.name != "p0":
            # messages from p0: its public key, Enc_p0(B_0), then its reply under our key
            slots = ole.reply_slots(keys[party.name], "matmul", captured[-1], A_SHAPE, B_SHAPE)
            low = np.array([s & (2**64 - 1) for s in slots], dtype=_U)
            high = b"".join((s >> 64).to_bytes(16, "big") for s in slots)
            party.send(OBSERVER, [low, high])
        return None

    def observer(party):
        party.recv("p1")
        party.recv("p2")
        return None

    return {**dict.fromkeys(PROVIDERS, provider), OBSERVER: observer}


def _check(keys):
    zero_a, zero_b = np.zeros(A_SHAPE, dtype=_U), np.zeros(B_SHAPE, dtype=_U)
    big_a, big_b = _fixed(99, A_SHAPE), _fixed(98, B_SHAPE)
    return check_view_independence(
        lambda: _roles(keys, zero_a, zero_b),
        lambda: _roles(keys, big_a, big_b),
        parties=["p1", "p2", OBSERVER],
        repeats=3,
    )


def test_what_providers_learn_does_not_depend_on_another_providers_share(keys):
    report = _check(keys)
    tested = {t.party for t in report.tests}
    assert {"p1", "p2", OBSERVER} <= tested


def test_the_view_test_catches_a_mask_without_statistical_headroom(keys, monkeypatch):
    """A 64-bit mask hides the low word of a slot but not the bits of the product above it."""

    def narrow(layout, count, used):
        words = [[secrets.randbits(64) for _ in range(u)] for u in used]
        packed = [sum(w << (layout.slot_bits * s) for s, w in enumerate(ws)) for ws in words]
        return packed, np.array([(-w) % 2**64 for ws in words for w in ws], dtype=_U)

    monkeypatch.setattr(ole, "_masks", narrow)
    with pytest.raises(AssertionError, match=r"view independence failed(.|\n)*party .observer.(.|\n)*\[1\]"):
        _check(keys)


def test_the_view_test_catches_an_ole_without_its_mask(keys, monkeypatch):
    real = ole._masks

    def unmasked(layout, count, used):
        packed, shares = real(layout, count, used)
        return [0] * len(packed), np.zeros_like(shares)

    monkeypatch.setattr(ole, "_masks", unmasked)
    with pytest.raises(AssertionError, match=r"view independence failed(.|\n)*party .observer."):
        _check(keys)
