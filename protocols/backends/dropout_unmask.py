"""Key material and unmasking of the dropout-tolerant secure sum (:mod:`protocols.backends.dropout`).

Pair keys ``k_uv = HKDF(X25519(s_u, S_v))`` (step 2), and step 5: a
provider's answer (:func:`unmasking_response`, which never reveals both
secrets of one provider), and at the receiver the rebuilding of each
survivor's self-mask seed and each needed dropped provider's mask key from
Shamir shares and the removal of every ``PRG(b_u)`` and one-sided pairwise
mask from the sum (:func:`unmask`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import NDArray

from protocols.backends.dropout_agreement import one_sided
from protocols.errors import DropoutError, ProtocolError
from protocols.prg import KEY_BYTES, RingPRG
from protocols.shamir import Share, reconstruct_bytes

_HKDF_INFO = b"mpc-pca dropout-tolerant pairwise mask v1"


def raw_private(key: X25519PrivateKey) -> bytes:
    """The 32 raw bytes of an X25519 private key (what is Shamir-shared)."""
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def raw_public(key: X25519PrivateKey) -> bytes:
    """The 32 raw bytes of the public key of an X25519 private key."""
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def pair_key(private: X25519PrivateKey, me: str, peer: str, peer_public: bytes) -> bytes:
    """``k_uv = HKDF(X25519(s_u, S_v))``, bound to the two names in order (the same at both ends)."""
    shared = private.exchange(X25519PublicKey.from_public_bytes(peer_public))
    low, high = sorted((me, peer))
    info = _HKDF_INFO + b"|" + low.encode() + b"|" + high.encode()
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(shared)


def unmasking_response(
    revealed: dict[str, str],
    held: dict[str, dict[str, bytes]],
    survivors: list[str],
    contributors: tuple[str, ...],
    keys: dict[str, bytes] | None = None,
) -> dict[str, dict[str, bytes]]:
    """This provider's answer: ``b`` shares of survivors, ``s`` shares of the dropped, one-sided pair keys.

    ``keys`` maps each provider ``w`` of :func:`one_sided` to the pair key
    ``k_vw``: its mask is in this survivor's input only, so revealing it opens
    nothing but that mask (a survivor ``w`` confirmed it did not use it).

    ``revealed`` records, for this sum, which secret of each provider this
    party already revealed; revealing the other one too is refused. Both
    would open that provider's input: ``y_u`` minus ``PRG(b_u)`` and its pairwise masks.

    Raises
    ------
    ProtocolError
        If the answer would reveal, for some provider, the secret other than the
        one already revealed for it in this sum.
    """
    answer: dict[str, dict[str, bytes]] = {"b": {}, "s": {}, "k": dict(keys or {})}
    chosen = {u: ("b" if u in survivors else "s") for u in contributors if u in held}
    for u, kind in chosen.items():
        if revealed.get(u, kind) != kind:
            raise ProtocolError(
                f"refusing to reveal the share of the {'self-mask seed' if kind == 'b' else 'mask key'} of {u!r}: "
                f"the share of its {'mask key' if kind == 'b' else 'self-mask seed'} was revealed in this sum, "
                "and both together would open its input"
            )
    for u, kind in chosen.items():
        revealed[u] = kind
        answer[kind][u] = held[u][kind]
    return answer


def unmask(
    total: NDArray[np.uint64],
    answers: dict[str, dict[str, dict[str, bytes]]],
    survivors: list[str],
    peers: dict[str, list[str]],
    publics: dict[str, bytes],
    contributors: tuple[str, ...],
    threshold: int | Mapping[str, int],
) -> None:
    """Step 5 at the receiver: remove every ``PRG(b_u)`` and every one-sided pairwise mask from ``total``.

    A one-sided mask of survivor ``v`` and ``w`` is removed with the pair key
    ``v`` revealed, or, if ``v`` did not answer and ``w`` is not a survivor,
    with ``w``'s mask key rebuilt from ``threshold`` shares. ``threshold`` is
    one number for every secret, or one per owner (a sparse mask graph, where
    each node shares its secrets among its own neighbourhood).
    """
    index = {c: i + 1 for i, c in enumerate(contributors)}

    def needed(owner: str) -> int:
        return threshold if isinstance(threshold, int) else threshold[owner]

    for u in survivors:
        RingPRG(rebuild(answers, "b", u, index, needed(u))).accumulate(total, subtract=True)
    rebuilt: dict[str, X25519PrivateKey] = {}
    for v in survivors:
        for w in one_sided(v, peers, survivors):
            key = answers.get(v, {}).get("k", {}).get(w)
            if key is None:
                if w in survivors:
                    raise DropoutError(
                        f"{v!r} masked with {w!r} but {w!r} not with {v!r}, and {v!r} did not answer with "
                        "their pair key: the sum cannot be unmasked",
                        (v,),
                    )
                if w not in rebuilt:
                    rebuilt[w] = X25519PrivateKey.from_private_bytes(
                        rebuild(answers, "s", w, index, needed(w))
                    )
                    if w in publics and raw_public(rebuilt[w]) != publics[w]:
                        raise ProtocolError(
                            f"the rebuilt mask key of the dropped {w!r} does not match the public key it sent"
                        )
                key = pair_key(rebuilt[w], w, v, publics[v])
            # v added the pair's mask if v < w, subtracted it if v > w: undo that.
            RingPRG(key).accumulate(total, subtract=v < w)


def rebuild(
    answers: dict[str, dict[str, dict[str, bytes]]],
    kind: str,
    owner: str,
    index: dict[str, int],
    threshold: int,
) -> bytes:
    """The secret ``kind`` (``"b"`` or ``"s"``) of ``owner`` from the answers' Shamir shares.

    Raises
    ------
    DropoutError
        If fewer than ``threshold`` shares of it arrived.
    """
    shares = [
        Share.from_bytes(index[v], a[kind][owner], sender=v) for v, a in answers.items() if owner in a[kind]
    ]
    if len(shares) < threshold:
        what = "self-mask seed" if kind == "b" else "mask key"
        raise DropoutError(
            f"only {len(shares)} shares of {owner!r}'s {what} arrived, below the threshold {threshold}; "
            "the sum cannot be unmasked",
            (),
        )
    holders = {index[v]: v for v in answers}
    return reconstruct_bytes(shares, threshold, holders=holders)
