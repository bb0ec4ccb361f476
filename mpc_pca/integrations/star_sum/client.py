"""A client's side of the Flower secure sum (stages of :mod:`mpc_pca.integrations.star_sum.protocol`), no Flower.

Flower starts the client app afresh for every message, so everything a client
keeps between stages is in a flat ``dict`` of bytes, ints, strings and lists of
them, which the client mod stores in the node's ``Context`` as a
``ConfigRecord`` (never pickled). Each function takes that dict, checks that
the stage follows the previous one, and updates it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from mpc_pca.integrations.star_sum.identity import NodeIdentity, signed_bytes
from mpc_pca.integrations.star_sum.protocol import (
    KEY_BYTES,
    SumPlan,
    decrypt_shares,
    encrypt_shares,
    new_secrets,
    share_key,
)
from protocols.backends.dropout_unmask import pair_key, raw_private, raw_public, unmasking_response
from protocols.errors import DropoutError, ProtocolError
from protocols.prg import RingPRG
from protocols.shamir import split_bytes

#: The stage each stage must follow (``keys`` starts a round whatever came before).
_AFTER = {"shares": "keys", "masked": "shares", "unmask": "masked"}


def _expect(state: Mapping[str, Any], stage: str) -> SumPlan:
    previous = state.get("stage")
    if previous != _AFTER[stage]:
        raise ProtocolError(
            f"secure-sum stage {stage!r} arrived after {previous!r}, expected after {_AFTER[stage]!r}"
        )
    return SumPlan.from_config(_plan_fields(state))


def _plan_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    return {key[5:]: value for key, value in state.items() if key.startswith("plan.")}


def _pairs(mapping: Mapping[str, bytes]) -> tuple[list[str], list[bytes]]:
    names = sorted(mapping)
    return names, [mapping[n] for n in names]


def _mapping(state: Mapping[str, Any], key: str) -> dict[str, bytes]:
    return dict(zip(state[f"{key}.names"], state[f"{key}.values"], strict=True))


def _check_mode(node: str, plan: SumPlan, identity: NodeIdentity | None) -> None:
    if plan.signed and identity is None:
        raise ProtocolError(
            f"node {node}: the plan asks for signed keys, but this node has no identity configured"
        )
    if identity is not None and not plan.signed:
        raise ProtocolError(
            f"node {node}: this node is configured with an identity and refuses an unsigned plan "
            "(the server would relay unsigned keys)"
        )


def start(
    node: str, plan: SumPlan, arrays: Sequence[Any], weight: float, identity: NodeIdentity | None = None
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Stage ``keys``: check and encode the update, draw fresh secrets; return the new state and the public keys.

    With a signed plan the answer also holds ``cert`` (this node's certificate,
    DER) and ``signature`` (over :func:`~mpc_pca.integrations.star_sum.identity.signed_bytes`).

    Raises
    ------
    InputValidationError
        From :meth:`SumPlan.encode_update`, before anything is sent.
    ProtocolError
        If this node is not among the plan's contributors, or the plan's
        ``signed`` disagrees with whether this node has an identity.
    """
    if node not in plan.contributors:
        raise ProtocolError(f"node {node} got a secure-sum plan that does not list it")
    _check_mode(node, plan, identity)
    encoded = plan.encode_update(node, arrays, weight)
    mask_key, enc_key, seed = new_secrets()
    state: dict[str, Any] = {f"plan.{k}": v for k, v in plan.to_config().items()}
    state.update(
        stage="keys",
        node=node,
        mask_sk=raw_private(mask_key),
        enc_sk=raw_private(enc_key),
        seed=seed,
        encoded=encoded.astype("<u8").tobytes(),
    )
    keys = {"mask_pk": raw_public(mask_key), "enc_pk": raw_public(enc_key)}
    if identity is not None:
        data = signed_bytes(plan.round, node, keys["mask_pk"], keys["enc_pk"], plan.digest())
        keys.update(cert=identity.certificate_der, signature=identity.sign(data))
    return state, keys


def check_signatures(
    me: str,
    plan: SumPlan,
    identity: NodeIdentity | None,
    relayed: Mapping[str, tuple[bytes, bytes, object, object]],
    expected: Collection[str] | None = None,
) -> dict[str, str]:
    """Check every relayed ``(mask_pk, enc_pk, cert, signature)`` of a signed plan; return node -> party name.

    ``expected``, if given, is this node's list of the party names it takes a
    round with (node config ``mpc-pca-peers``): a peer whose certificate names
    another party is refused, even if the consortium CA issued it. ``None``:
    any certificate of the CA may take part.

    Raises
    ------
    ProtocolError
        Naming the peer: no certificate or signature, a certificate not issued
        by the consortium CA, a signature that does not verify (a substituted
        key, another node id, another round or plan), a party name that
        signs for two node ids, or one not on ``expected``.
    """
    _check_mode(me, plan, identity)
    if identity is None:
        return {}
    names: dict[str, str] = {}
    seen: dict[str, str] = {}
    for node in sorted(relayed):
        mask_pk, enc_pk, cert, signature = relayed[node]
        data = signed_bytes(plan.round, node, mask_pk, enc_pk, plan.digest())
        try:
            name = identity.check_peer(node, cert, signature, data)
        except ProtocolError as exc:
            raise ProtocolError(f"node {me} refuses the round: {exc}; nothing was encrypted") from exc
        if expected is not None and name not in expected and name != identity.name:
            raise ProtocolError(
                f"node {me} refuses the round: node {node}'s certificate names party {name!r}, which is not "
                f"on this node's list of expected peers {sorted(expected)}; nothing was encrypted"
            )
        if name in seen:
            raise ProtocolError(
                f"node {me} refuses the round: party {name!r} signs for node {seen[name]} and node {node}; "
                "nothing was encrypted"
            )
        if node == me and name != identity.name:
            raise ProtocolError(f"node {me}: the server relayed another certificate for this node")
        seen[name], names[node] = node, name
    return names


def share(
    state: dict[str, Any],
    mask_pks: Mapping[str, bytes],
    enc_pks: Mapping[str, bytes],
    certs: Mapping[str, bytes] | None = None,
    signatures: Mapping[str, bytes] | None = None,
    identity: NodeIdentity | None = None,
    expected: Collection[str] | None = None,
) -> dict[str, bytes]:
    """Stage ``shares``: Shamir-share the seed and mask key, encrypt each peer's pair; return ciphertexts by recipient.

    With a signed plan every peer's certificate and signature are checked
    (:func:`check_signatures`, with ``expected`` its list of party names) before any share is encrypted.

    Raises
    ------
    ProtocolError
        If the relayed keys are malformed, miss or change this node's own keys,
        or name a node outside the plan; for a signed plan, naming a peer whose
        certificate, signature or name fails.
    DropoutError
        If fewer than the threshold hold keys.
    """
    plan = _expect(state, "shares")
    me = state["node"]
    mask_sk, enc_sk = _private(state["mask_sk"]), _private(state["enc_sk"])
    hood = plan.neighbourhoods()
    group, threshold = hood.group(me), hood.thresholds[me]
    holders = sorted(mask_pks)
    if set(holders) != set(enc_pks) or not set(holders) <= set(group):
        raise ProtocolError(
            f"node {me}: the server relayed keys of {holders}, not a subset of this node's "
            f"{'neighbourhood' if plan.graph == 'sparse' else 'plan nodes'} {list(group)}"
        )
    if any(not isinstance(mask_pks[n], bytes) or len(mask_pks[n]) != KEY_BYTES for n in holders) or any(
        not isinstance(enc_pks[n], bytes) or len(enc_pks[n]) != KEY_BYTES for n in holders
    ):
        raise ProtocolError(f"node {me}: the server relayed a malformed public key")
    if mask_pks.get(me) != raw_public(mask_sk) or enc_pks.get(me) != raw_public(enc_sk):
        raise ProtocolError(f"node {me}: the server relayed other public keys for this node than it sent")
    if len(holders) < threshold:
        raise DropoutError(
            f"node {me}: only {len(holders)} nodes sent keys, below the threshold {threshold}",
            tuple(sorted(set(group) - set(holders))),
        )
    certs, signatures = certs or {}, signatures or {}
    relayed = {n: (mask_pks[n], enc_pks[n], certs.get(n), signatures.get(n)) for n in holders}
    check_signatures(me, plan, identity, relayed, expected)
    n = len(plan.contributors)
    # Share i is the i-th contributor's; only this node's neighbourhood gets its shares (graph module notes).
    b_shares = split_bytes(state["seed"], n, threshold)
    s_shares = split_bytes(raw_private(mask_sk), n, threshold)
    out: dict[str, bytes] = {}
    held_b: dict[str, bytes] = {}
    held_s: dict[str, bytes] = {}
    for i, peer in enumerate(plan.contributors):
        if peer == me:
            held_b[me], held_s[me] = b_shares[i].to_bytes(), s_shares[i].to_bytes()
        elif peer in mask_pks and peer in hood.neighbours[me]:
            key = share_key(enc_sk, me, peer, enc_pks[peer], plan.round)
            out[peer] = encrypt_shares(
                key, plan.round, me, peer, b_shares[i].to_bytes(), s_shares[i].to_bytes()
            )
    _store(state, "mask_pks", mask_pks)
    _store(state, "enc_pks", enc_pks)
    _store(state, "held_b", held_b)
    _store(state, "held_s", held_s)
    state["stage"] = "shares"
    return out


def mask(state: dict[str, Any], incoming: Mapping[str, bytes]) -> tuple[bytes, list[str]]:
    """Stage ``masked``: keep the shares relayed to this node; return ``y_u`` (little-endian uint64) and its peers.

    Raises
    ------
    ProtocolError
        Naming the sender of a share that fails authentication or a sender without keys.
    DropoutError
        If fewer than the threshold (with this node) sent it shares.
    """
    plan = _expect(state, "masked")
    me = state["node"]
    mask_pks, enc_pks = _mapping(state, "mask_pks"), _mapping(state, "enc_pks")
    held_b, held_s = _mapping(state, "held_b"), _mapping(state, "held_s")
    enc_sk = _private(state["enc_sk"])
    for sender in sorted(incoming):
        if sender == me or sender not in enc_pks:
            raise ProtocolError(
                f"node {me}: the server relayed shares from node {sender}, which sent no keys"
            )
        key = share_key(enc_sk, me, sender, enc_pks[sender], plan.round)
        held_b[sender], held_s[sender] = decrypt_shares(key, plan.round, sender, me, incoming[sender])
    peers = sorted(incoming)
    threshold = plan.neighbourhoods().thresholds[me]
    if len(peers) + 1 < threshold:
        raise DropoutError(
            f"node {me}: shares arrived from {len(peers)} nodes, so {len(peers) + 1} remain, below the "
            f"threshold {threshold}",
            tuple(sorted(set(mask_pks) - {me, *peers})),
        )
    masked = np.frombuffer(state["encoded"], dtype="<u8").astype(np.uint64)
    RingPRG(state["seed"]).accumulate(masked)
    mask_sk = _private(state["mask_sk"])
    for peer in peers:
        # The pair's smaller name adds the mask, the larger subtracts it (as protocols.backends.dropout).
        RingPRG(pair_key(mask_sk, me, peer, mask_pks[peer])).accumulate(masked, subtract=me > peer)
    _store(state, "held_b", held_b)
    _store(state, "held_s", held_s)
    state["masked_with"] = peers
    state["encoded"] = b""
    state["stage"] = "masked"
    return masked.astype("<u8").tobytes(), peers


def answer(state: dict[str, Any], survivors: Sequence[str]) -> dict[str, dict[str, bytes]]:
    """Stage ``unmask``: shares of ``b_u`` for survivors, of ``s_u`` for the others; never both for one ``u``.

    Raises
    ------
    ProtocolError
        If the survivor set is below the threshold, omits this node, names
        unknown nodes, or would reveal both secrets of a node (a second
        ``unmask`` with another survivor set).
    """
    plan = _expect(state, "unmask") if state.get("stage") == "masked" else _again(state)
    me = state["node"]
    group = sorted({str(s) for s in survivors})
    if me not in group or len(group) < plan.threshold or not set(group) <= set(plan.contributors):
        raise ProtocolError(
            f"node {me}: the server's survivor set {group} is not at least {plan.threshold} of the plan's nodes "
            "including this one; no share revealed"
        )
    held_b, held_s = _mapping(state, "held_b"), _mapping(state, "held_s")
    held = {u: {"b": held_b[u], "s": held_s[u]} for u in held_b}
    revealed = dict(zip(state.get("revealed.names", []), state.get("revealed.values", []), strict=True))
    response = unmasking_response(revealed, held, group, plan.contributors)
    state["revealed.names"], state["revealed.values"] = list(revealed), list(revealed.values())
    state["stage"] = "unmask"
    return {"b": response["b"], "s": response["s"]}


def _again(state: Mapping[str, Any]) -> SumPlan:
    """A repeated ``unmask`` of the same round: allowed, and checked by the revealed-secret record."""
    if state.get("stage") != "unmask":
        raise ProtocolError(
            f"secure-sum stage 'unmask' arrived after {state.get('stage')!r}, expected after 'masked'"
        )
    return SumPlan.from_config(_plan_fields(state))


def _private(raw: bytes) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(raw)


def _store(state: dict[str, Any], key: str, mapping: Mapping[str, bytes]) -> None:
    state[f"{key}.names"], state[f"{key}.values"] = _pairs(mapping)
