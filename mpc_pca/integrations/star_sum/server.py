"""The server's side of the Flower secure sum: relay, add, unmask (no Flower import).

:class:`ServerSum` holds one round: the public keys and encrypted shares it
relays (it reads no share), the running total of the masked inputs, and at the
end the survivors' answers, from which it removes the masks
(:func:`~protocols.backends.dropout_unmask.unmask`) and decodes the sum.
Every stage's answers pass :func:`~mpc_pca.integrations.star_sum.protocol.require_answers`
first: fewer than the threshold is a :class:`~protocols.errors.DropoutError`
naming who did not answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
from numpy.typing import NDArray

from mpc_pca.integrations.star_sum.graph import Neighbourhoods
from mpc_pca.integrations.star_sum.protocol import KEY_BYTES, SumPlan, require_answers
from protocols.backends.dropout_agreement import one_sided
from protocols.backends.dropout_unmask import unmask
from protocols.errors import DropoutError, ProtocolError


class ServerSum:
    """One round of the secure sum at the server.

    Parameters
    ----------
    plan : SumPlan
        The round's plan (sent to every sampled node in stage ``keys``).
    """

    def __init__(self, plan: SumPlan) -> None:
        self.plan = plan
        self.mask_pks: dict[str, bytes] = {}
        self.enc_pks: dict[str, bytes] = {}
        self.certs: dict[str, bytes] = {}
        self.signatures: dict[str, bytes] = {}
        self.routes: dict[str, dict[str, bytes]] = {}
        self.sharers: list[str] = []
        self.peers: dict[str, list[str]] = {}
        self.total = np.zeros(plan.size, dtype=np.uint64)
        self.hood = plan.neighbourhoods()

    def keys_for(self, node: str) -> tuple[dict[str, bytes], ...]:
        """``(mask_pks, enc_pks, certs, signatures)`` to relay to ``node``: those of its neighbourhood."""
        group = set(self.hood.group(node))
        return tuple(
            {n: v for n, v in found.items() if n in group}
            for found in (self.mask_pks, self.enc_pks, self.certs, self.signatures)
        )

    def take_keys(
        self,
        keys: Mapping[str, tuple[object, object]],
        credentials: Mapping[str, tuple[object, object]] | None = None,
    ) -> None:
        """Stage ``keys`` answers: ``{node: (mask_pk, enc_pk)}`` and, for a signed plan, ``{node: (cert, signature)}``.

        The server relays the certificates and signatures as they came; the
        clients check them (:func:`~mpc_pca.integrations.star_sum.client.check_signatures`).

        Raises
        ------
        ProtocolError
            Naming a node outside the plan, with a malformed key, or (signed
            plan) without a certificate and signature.
        DropoutError
            If fewer than the threshold answered (naming who did not).
        """
        for node, (mask_pk, enc_pk) in keys.items():
            self._known(node, "keys")
            if not all(isinstance(k, bytes) and len(k) == KEY_BYTES for k in (mask_pk, enc_pk)):
                raise ProtocolError(f"node {node} sent malformed public keys")
            if self.plan.signed:
                cert, signature = (credentials or {}).get(node, (None, None))
                if not (isinstance(cert, bytes) and isinstance(signature, bytes)):
                    raise ProtocolError(f"node {node} sent no certificate and signature with its keys")
                self.certs[node], self.signatures[node] = cert, signature
            self.mask_pks[node], self.enc_pks[node] = mask_pk, enc_pk  # type: ignore[assignment]
        require_answers("keys", self.plan.contributors, list(self.mask_pks), self.plan.threshold)

    def take_shares(self, shares: Mapping[str, Mapping[str, object]]) -> None:
        """Stage ``shares`` answers: ``{sender: {recipient: ciphertext}}``, kept for relaying.

        Raises
        ------
        ProtocolError
            Naming a sender that addressed a node without keys, or sent no keys.
        DropoutError
            If fewer than the threshold answered.
        """
        for sender, by_dest in shares.items():
            self._known(sender, "shares")
            if sender not in self.mask_pks or not set(by_dest) <= set(self.mask_pks) - {sender}:
                raise ProtocolError(f"node {sender} addressed shares to nodes that sent no keys")
            if not set(by_dest) <= set(self.hood.neighbours[sender]):
                raise ProtocolError(
                    f"node {sender} addressed shares to {sorted(set(by_dest) - set(self.hood.neighbours[sender]))}, "
                    "which are not its neighbours in the mask graph"
                )
            for dest, data in by_dest.items():
                if not isinstance(data, bytes):
                    raise ProtocolError(f"node {sender} sent a malformed ciphertext for node {dest}")
                self.routes.setdefault(dest, {})[sender] = data
        self.sharers = sorted(shares)
        require_answers("shares", sorted(self.mask_pks), self.sharers, self.plan.threshold)

    def shares_for(self, node: str) -> dict[str, bytes]:
        """The ciphertexts addressed to ``node`` by the nodes that completed stage ``shares``."""
        return {s: c for s, c in self.routes.get(node, {}).items() if s in self.sharers}

    def take_masked(self, masked: Mapping[str, tuple[object, Sequence[str]]]) -> list[str]:
        """Stage ``masked`` answers: ``{node: (y_u bytes, peers)}``; add them up; return the survivors.

        Raises
        ------
        ProtocolError
            Naming a node whose vector has the wrong length or whose peer list
            is not the nodes that sent it shares.
        DropoutError
            If fewer than the threshold answered.
        """
        for node, (data, peers) in masked.items():
            self._known(node, "masked")
            if not isinstance(data, bytes) or len(data) != 8 * self.plan.size:
                raise ProtocolError(f"node {node} sent a masked vector of the wrong length")
            listed = sorted(str(p) for p in peers)
            if node not in self.sharers or listed != sorted(self.shares_for(node)):
                raise ProtocolError(
                    f"node {node} masked with {listed}, not with the nodes whose shares it got"
                )
            self.peers[node] = listed
        require_answers("masked", self.sharers, list(masked), self.plan.threshold)
        for node in sorted(masked):
            self.total += np.frombuffer(cast(bytes, masked[node][0]), dtype="<u8").astype(np.uint64)
        return sorted(masked)

    def finish(
        self, survivors: Sequence[str], answers: Mapping[str, Mapping[str, Mapping[str, bytes]]]
    ) -> NDArray[np.float64]:
        """Stage ``unmask``: rebuild seeds and dropped nodes' mask keys from ``t`` answers; the decoded sum.

        Raises
        ------
        DropoutError
            If fewer than the threshold answered, or too few shares of a secret arrived.
        ProtocolError
            For inconsistent shares (naming the liar when it can be singled out).
        """
        require_answers("unmask", list(survivors), list(answers), self.plan.threshold)
        full = {
            v: {"b": dict(a.get("b", {})), "s": dict(a.get("s", {})), "k": {}} for v, a in answers.items()
        }
        peers = {v: self.peers.get(v, []) for v in self.plan.contributors if v in self.peers}
        total = self.total.copy()
        unmask_by_neighbourhood(
            total, full, list(survivors), peers, self.mask_pks, self.plan.contributors, self.hood
        )
        return self.plan.codec.decode(total)

    def _known(self, node: str, stage: str) -> None:
        if node not in self.plan.contributors:
            raise ProtocolError(
                f"stage {stage!r}: an answer came from node {node}, which is not in the round"
            )


def unmask_by_neighbourhood(
    total: NDArray[np.uint64],
    answers: dict[str, dict[str, dict[str, bytes]]],
    survivors: Sequence[str],
    peers: dict[str, list[str]],
    publics: dict[str, bytes],
    contributors: tuple[str, ...],
    hood: Neighbourhoods,
) -> None:
    """:func:`protocols.backends.dropout_unmask.unmask` with each secret rebuilt from its own neighbourhood.

    ``answers`` as :meth:`ServerSum.finish` normalises them (``b``, ``s`` and an empty ``k`` per node).
    ``b_u`` of every survivor ``u`` and ``s_w`` of every dropped ``w`` that a
    survivor masked with are rebuilt from the shares of ``u``'s (``w``'s)
    neighbourhood with its threshold ``t_u`` (``t_w``); for the complete graph
    that is every node with the plan's threshold, as ``unmask`` does.

    Raises
    ------
    DropoutError
        Naming the owner of a secret and the nodes of its neighbourhood that did
        not answer, when fewer than its threshold did.
    ProtocolError
        For a rebuilt mask key that does not match the public key its owner sent.
    """
    group = list(survivors)
    needed = [(u, "b") for u in group]
    needed += sorted({(w, "s") for v in group for w in one_sided(v, peers, group) if w not in group})
    for owner, kind in needed:
        holders = [v for v in hood.group(owner) if owner in answers.get(v, {}).get(kind, {})]
        if len(holders) < hood.thresholds[owner]:
            missing = sorted(set(hood.group(owner)) - set(holders))
            what = "self-mask seed" if kind == "b" else "mask key"
            raise DropoutError(
                f"stage 'unmask': only {len(holders)} of node {owner}'s neighbourhood returned shares of its "
                f"{what}, below its threshold {hood.thresholds[owner]}; nodes {missing} did not",
                tuple(missing),
            )
    unmask(total, answers, group, peers, publics, contributors, hood.thresholds)
