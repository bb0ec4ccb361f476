"""The client mod: a Flower ``ClientApp`` swaps ``secaggplus_mod`` for :func:`secure_sum_mod`.

``ClientApp(client_fn=client_fn, mods=[secure_sum_mod])``: training messages
that carry the workflow's record run one stage of the secure sum
(:mod:`mpc_pca.integrations.star_sum.client`); in stage ``keys`` the mod calls the
app's own ``fit`` once, checks and encodes its parameters and never sends them
in clear (``num_examples`` and the metrics travel in clear, as with SecAgg+).
Other messages (evaluation, queries) pass through untouched. State between
stages lives in the node's ``Context`` as a ``ConfigRecord``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import flwr.compat.common.recorddict_compat as compat
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.app.message_type import MessageType
from flwr.clientapp.typing import ClientAppCallable
from flwr.common import parameters_to_ndarrays

from mpc_pca.integrations.star_sum import client
from mpc_pca.integrations.star_sum.identity import NodeIdentity
from mpc_pca.integrations.star_sum.protocol import SumPlan
from protocols.errors import InputValidationError, ProtocolError

#: The ``ConfigRecord`` of a workflow message (and of the reply) that carries the secure sum's stage.
RECORD = "mpc-pca.secure-sum"
#: The node's ``Context.state`` record of the round in progress.
STATE_RECORD = "mpc-pca.secure-sum.state"
#: The node-config keys of the node's identity (PEM paths): certificate, its private key, the consortium CA.
IDENTITY_KEYS = ("mpc-pca-cert", "mpc-pca-key", "mpc-pca-ca")
#: The node-config key of the party names this node expects as peers (comma-separated, or ``@`` and a file path).
PEERS_KEY = "mpc-pca-peers"
#: Every node-config key the mod reads.
NODE_CONFIG_KEYS = (*IDENTITY_KEYS, PEERS_KEY)


def expected_peers(node_config: Mapping[str, Any]) -> frozenset[str] | None:
    """The party names of :data:`PEERS_KEY`, or ``None`` if it is not set (any certificate of the CA may take part).

    The value is a comma-separated list of certificate names (``CN``), or
    ``@`` followed by the path of a file that holds them (commas or lines;
    ``#`` starts a comment).

    Raises
    ------
    InputValidationError
        If the list is empty or the file does not load.

    Examples
    --------
    >>> sorted(expected_peers({"mpc-pca-peers": "alpha, beta"}))
    ['alpha', 'beta']
    >>> expected_peers({}) is None
    True
    """
    value = node_config.get(PEERS_KEY)
    if value in (None, ""):
        return None
    text = str(value)
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                text = "\n".join(line.split("#", 1)[0] for line in fh)
        except OSError as exc:
            raise InputValidationError(f"node config {PEERS_KEY}: cannot read {text[1:]!r}: {exc}") from exc
    names = frozenset(n.strip() for n in text.replace("\n", ",").split(",") if n.strip())
    if not names:
        raise InputValidationError(f"node config {PEERS_KEY} is set but names no party")
    return names


def node_identity(node_config: Mapping[str, Any]) -> NodeIdentity | None:
    """The node's identity from its node config (all three of :data:`IDENTITY_KEYS`), or ``None`` if none is set.

    Raises
    ------
    InputValidationError
        If only some of the three are set, or the files do not load.
    """
    given = [k for k in IDENTITY_KEYS if node_config.get(k) not in (None, "")]
    if not given:
        return None
    if len(given) != len(IDENTITY_KEYS):
        raise InputValidationError(
            f"the node config sets {given} but a node identity needs all of {list(IDENTITY_KEYS)}"
        )
    cert, key, ca = (str(node_config[k]) for k in IDENTITY_KEYS)
    return NodeIdentity.load(cert, key, ca)


def secure_sum_mod(msg: Message, ctxt: Context, call_next: ClientAppCallable) -> Message:
    """Run this node's stage of the secure sum, or pass a message that is not one through.

    Parameters
    ----------
    msg : Message
        The message from the ServerApp.
    ctxt : Context
        The node's context (holds the state between stages).
    call_next : callable
        The rest of the ClientApp (called once per round, in stage ``keys``).

    Returns
    -------
    Message
        The reply: this stage's record (plus, in stage ``keys``, the ``fit``
        result without its parameters).

    Raises
    ------
    InputValidationError
        In stage ``keys``, if the app's update does not fit the plan (named; nothing is sent).
    ProtocolError
        For an unknown or out-of-order stage or a malformed message.
    """
    if msg.metadata.message_type != MessageType.TRAIN or RECORD not in msg.content.config_records:
        return call_next(msg, ctxt)
    config = msg.content.config_records[RECORD]
    stage = config.get("stage")
    node = str(msg.metadata.dst_node_id)
    state: dict[str, Any] = dict(ctxt.state.config_records.get(STATE_RECORD, ConfigRecord({})))
    content = RecordDict()
    if stage == "keys":
        out = call_next(msg, ctxt)
        if out.has_error():
            return out
        fitres = compat.recorddict_to_fitres(out.content, keep_input=True)
        _peers_with_identity(ctxt.node_config)  # a bad peer list fails before any key is sent
        state, keys = client.start(
            node,
            SumPlan.from_config(config),
            parameters_to_ndarrays(fitres.parameters),
            fitres.num_examples,
            node_identity(ctxt.node_config),
        )
        content = out.content
        for arrays in content.array_records.values():
            arrays.clear()  # the parameters never leave in clear
        reply: dict[str, Any] = dict(keys)
    elif stage == "shares":
        ciphertexts = client.share(
            state,
            unpack(config, "mask_pks"),
            unpack(config, "enc_pks"),
            unpack(config, "certs"),
            unpack(config, "signatures"),
            node_identity(ctxt.node_config),
            _peers_with_identity(ctxt.node_config),
        )
        reply = pack("shares", ciphertexts)
    elif stage == "masked":
        masked, peers = client.mask(state, unpack(config, "shares"))
        reply = {"masked": masked, "peers": peers}
    elif stage == "unmask":
        answer = client.answer(state, [str(s) for s in _list(config, "survivors")])
        reply = {**pack("b", answer["b"]), **pack("s", answer["s"])}
    else:
        raise ProtocolError(f"node {node}: unknown secure-sum stage {stage!r}")
    ctxt.state.config_records[STATE_RECORD] = ConfigRecord(state)
    content.config_records[RECORD] = ConfigRecord(reply)
    return Message(content, reply_to=msg)


def _peers_with_identity(node_config: Mapping[str, Any]) -> frozenset[str] | None:
    peers = expected_peers(node_config)
    if peers is not None and node_identity(node_config) is None:
        raise InputValidationError(
            f"node config {PEERS_KEY} lists expected peers, but the node has no identity ({list(IDENTITY_KEYS)}) "
            "to check them with"
        )
    return peers


def pack(key: str, mapping: Mapping[str, bytes]) -> dict[str, list[Any]]:
    names = sorted(mapping)
    return {f"{key}.names": names, f"{key}.values": [mapping[n] for n in names]}


def _list(config: Mapping[str, Any], key: str) -> list[Any]:
    value = config.get(key, [])
    if not isinstance(value, list):
        raise ProtocolError(f"the secure-sum field {key!r} is not a list")
    return value


def unpack(config: Mapping[str, Any], key: str) -> dict[str, bytes]:
    """``{name: bytes}`` from the ``key.names`` / ``key.values`` lists of a record."""
    names, values = _list(config, f"{key}.names"), _list(config, f"{key}.values")
    if len(names) != len(values) or not all(isinstance(v, bytes) for v in values):
        raise ProtocolError(f"the secure-sum field {key!r} is malformed")
    return {str(n): v for n, v in zip(names, values, strict=True)}
