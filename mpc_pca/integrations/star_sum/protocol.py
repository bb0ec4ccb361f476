"""The secure sum of the Flower integration as plain functions over bytes and arrays (no Flower import).

Flower's star topology: the clients (SuperNodes) talk only to the server
(the ServerApp), which relays everything. One sum, over the sampled nodes
``U0`` (named by their node ids as decimal strings, sorted) with a threshold
``t`` (``2 t > |U0|``, :func:`~protocols.backends.dropout_agreement.check_dropout_threshold`):

1. ``keys``: the server sends the :class:`SumPlan` (who, ``t``, the agreed
   shapes, value range and weight limit, the fixed-point scale). Each client
   computes its update, checks it against the plan
   (:meth:`SumPlan.encode_update`: count, shape, dtype, range, weight, named
   errors, before the client sends anything), encodes it and answers with two
   fresh X25519 public keys: ``S_u`` for masks, ``C_u`` for encrypting shares.
2. ``shares``: the server relays every key; each client Shamir-shares
   (:mod:`protocols.shamir`) a fresh self-mask seed ``b_u`` and its mask
   private key ``s_u`` with threshold ``t`` (share ``i`` for the ``i``-th
   node in name order) and encrypts each peer's two shares with AES-256-GCM
   under ``HKDF(X25519(c_u, C_v))``, bound to the round and both names, so
   the relaying server reads none of them.
3. ``masked``: the server forwards to each client the ciphertexts addressed to
   it; the client decrypts them and sends
   ``y_u = x_u + PRG(b_u) + sum_v ±PRG(k_uv)`` over the peers whose shares it
   got, ``k_uv = HKDF(X25519(s_u, S_v))``
   (:func:`~protocols.backends.dropout_unmask.pair_key`), the smaller name
   adding, with the list of those peers.
4. ``unmask``: the server names the survivors ``U`` (the masked inputs that
   arrived, at least ``t``); each survivor answers with its share of ``b_u``
   for ``u`` in ``U`` and of ``s_u`` for ``u`` not in ``U``, never both for one
   ``u`` (:func:`~protocols.backends.dropout_unmask.unmasking_response`). With
   ``t`` answers the server rebuilds the seeds and the dropped nodes' mask keys
   and removes every ``PRG(b_u)`` and every mask shared with a dropped node
   (:func:`~protocols.backends.dropout_unmask.unmask`): the sum of ``U``'s
   inputs, decoded by :class:`~protocols.encoding.FixedPointCodec`.

Fewer than ``t`` answers at any stage: :class:`~protocols.errors.DropoutError`
naming the nodes that did not answer; nothing about any input is revealed.
Keys and seeds are fresh every round. Threat model: the server follows the
protocol but is curious (as for Flower's SecAgg+). With ``signed=False`` (the
user's explicit choice) the server relays the public keys unsigned, so a server
that substitutes keys could read shares. With ``signed=True`` every node signs
its two public keys, its node id, the round and the plan's :meth:`SumPlan.digest`
with its consortium certificate's key
(:mod:`mpc_pca.integrations.star_sum.identity`), and every client checks each
peer's certificate chain, signature and name before it encrypts a share to
that peer: a server that substitutes, moves or replays key material, or
presents a certificate of another CA or one party under two node ids, is
refused by the clients (:class:`~protocols.errors.ProtocolError` naming the
peer). Every node must be configured the same way: a node with an identity
refuses an unsigned plan, one without refuses a signed plan. What signing does
not stop: the server may still drop nodes (up to the threshold) and learns
the sum, ``num_examples`` and the metrics, as before.

What is summed, per client: ``[w, w * x_1, ..., w * x_d]`` with ``w`` the
client's ``num_examples`` (at most ``max_weight``) and ``x`` its update
flattened, each ``|x_i| <= bound``; the fixed-point scale is the largest
that keeps ``|U0|`` such vectors inside the ring (:func:`choose_frac_bits`).

Above, every node masks with and shares to every other (``graph="complete"``,
the default). With ``graph="sparse"`` each node does so only with its
neighbours in a random graph every node derives from the plan
(:mod:`mpc_pca.integrations.star_sum.graph`: ``O(log n)`` neighbours, share
thresholds per neighbourhood, the colluder bound ``max_colluders``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import NDArray

from mpc_pca.integrations.star_sum.graph import (
    SEED_BYTES,
    Neighbourhoods,
    check_graph_settings,
    derive,
    sparse_plan,
)
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.encoding import FixedPointCodec
from protocols.errors import DropoutError, InputValidationError, ProtocolError
from protocols.shamir import SHARE_BYTES

#: Largest fractional-bit count used (float64 carries 53 significant bits).
MAX_FRAC_BITS = 52
KEY_BYTES = 32
_NONCE_BYTES = 12
_ENCRYPTION_INFO = b"mpc-pca flower share encryption v1"


def choose_frac_bits(peak: float, n_summands: int) -> int:
    """The largest fractional-bit count ``f <= 52`` with ``n_summands`` values of magnitude ``peak`` in the ring.

    One bit of headroom is kept: ``peak * 2^f * n_summands < 2^62``.

    Raises
    ------
    InputValidationError
        If even ``f = 0`` cannot hold the sum.

    Examples
    --------
    >>> choose_frac_bits(8.0, 5)
    52
    >>> choose_frac_bits(1e6 * 8.0, 100)
    32
    """
    if not (math.isfinite(peak) and peak > 0):
        raise InputValidationError(f"the value range must be a positive finite number, got {peak!r}")
    if isinstance(n_summands, bool) or not isinstance(n_summands, int) or n_summands < 1:
        raise InputValidationError(f"the number of summands must be a positive integer, got {n_summands!r}")
    frac_bits = math.floor(62 - math.log2(peak * n_summands))
    while frac_bits >= 0 and peak * n_summands * 2.0**frac_bits >= 2.0**62:  # log2 rounding at the edge
        frac_bits -= 1
    if frac_bits < 0:
        raise InputValidationError(
            f"{n_summands} values of magnitude up to {peak:.6g} do not fit the ring Z_2^64 even without "
            "fractional bits; lower the bound or the weight limit"
        )
    return min(frac_bits, MAX_FRAC_BITS)


@dataclass(frozen=True)
class SumPlan:
    """What every node of one round's secure sum agrees on (sent by the server in stage ``keys``).

    Attributes
    ----------
    round : int
        The Flower round (binds the encrypted shares to it).
    contributors : tuple of str
        The sampled nodes' ids as decimal strings, sorted; share ``i`` goes to the ``i``-th.
    threshold : int
        ``t``: fewest nodes the sum completes with (``2 t > len(contributors)``).
    shapes : tuple of tuple of int
        The shape of every array of an update, in order (those of the global model).
    bound : float
        Every update value must lie in ``[-bound, bound]``.
    max_weight : float
        Every client's weight (``num_examples``) must lie in ``(0, max_weight]``.
    frac_bits : int
        The fixed-point scale, :func:`choose_frac_bits` of ``max_weight * max(bound, 1)``.
    signed : bool
        Whether every node must sign its key material with its consortium certificate.
    graph : str
        ``"complete"`` or ``"sparse"`` (:mod:`mpc_pca.integrations.star_sum.graph`).
    neighbours : int
        Expected degree ``k`` of the mask graph (``n - 1`` for the complete graph).
    max_colluders : int
        Clients that may collude with the server, that the sparse graph is planned for (0 when complete).
    graph_seed : str
        The sparse graph's public seed, hexadecimal (empty when complete).
    """

    round: int
    contributors: tuple[str, ...]
    threshold: int
    shapes: tuple[tuple[int, ...], ...]
    bound: float
    max_weight: float
    frac_bits: int
    signed: bool = False
    graph: str = "complete"
    neighbours: int = 0
    max_colluders: int = 0
    graph_seed: str = ""

    @classmethod
    def make(
        cls,
        round: int,
        nodes: Sequence[int | str],
        threshold: int,
        shapes: Sequence[Sequence[int]],
        bound: float,
        max_weight: float,
        signed: bool = False,
        *,
        graph: str = "complete",
        max_colluders: int | None = None,
        neighbours: int | None = None,
        graph_seed: str | None = None,
    ) -> SumPlan:
        """Build and check a plan (the scale is chosen here, and for a sparse graph its degree and seed).

        ``max_colluders`` defaults to a third of the nodes
        (:func:`~protocols.backends.sparse_masks.default_max_colluders`),
        ``neighbours`` to the smallest sufficient degree, ``graph_seed`` to 32
        fresh bytes from :mod:`secrets` (drawn again, up to 16 times, while
        the graph breaks a neighbourhood rule).

        Raises
        ------
        InputValidationError
            For a threshold that breaks ``2 <= t <= n``, ``2 t > n``, a bad range,
            an unknown graph, graph settings given for the complete graph, or a
            sparse setting that cannot hold (naming the value and its limit).
        """
        contributors = tuple(sorted({str(n) for n in nodes}))
        check_dropout_threshold(threshold, len(contributors))
        if not (math.isfinite(bound) and bound > 0) or not (math.isfinite(max_weight) and max_weight >= 1):
            raise InputValidationError(
                f"bound must be positive and max_weight at least 1, got {bound!r} and {max_weight!r}"
            )
        frac_bits = choose_frac_bits(max_weight * max(bound, 1.0), len(contributors))
        plan = cls(
            int(round),
            contributors,
            int(threshold),
            tuple(tuple(int(d) for d in s) for s in shapes),
            float(bound),
            float(max_weight),
            frac_bits,
            bool(signed),
            neighbours=len(contributors) - 1,
        )
        return plan._with_graph(graph, max_colluders, neighbours, graph_seed)

    def _with_graph(
        self, graph: str, max_colluders: int | None, neighbours: int | None, graph_seed: str | None
    ) -> SumPlan:
        check_graph_settings(graph, max_colluders=max_colluders, neighbours=neighbours, graph_seed=graph_seed)
        if graph == "complete":
            return self
        n = len(self.contributors)
        colluders = n // 3 if max_colluders is None else max_colluders
        degree = sparse_plan(n, self.threshold, colluders, neighbours).neighbours
        tries = 16 if graph_seed is None else 1
        for attempt in range(tries):
            seed = secrets.token_hex(SEED_BYTES) if graph_seed is None else graph_seed
            plan = dataclasses.replace(
                self, graph=graph, neighbours=degree, max_colluders=colluders, graph_seed=seed
            )
            try:
                plan.neighbourhoods()
            except InputValidationError:
                if attempt + 1 == tries:
                    raise
                continue
            return plan
        raise AssertionError("unreachable")  # pragma: no cover

    def neighbourhoods(self) -> Neighbourhoods:
        """Every node's neighbours and share threshold (:func:`~mpc_pca.integrations.star_sum.graph.derive`)."""
        return derive(
            self.contributors,
            self.threshold,
            self.graph,
            self.neighbours,
            self.max_colluders,
            self.graph_seed,
        )

    @property
    def size(self) -> int:
        """Entries of the summed vector: the weight, then every update value."""
        return 1 + sum(math.prod(s) for s in self.shapes)

    @property
    def codec(self) -> FixedPointCodec:
        """The fixed-point codec of this sum."""
        return FixedPointCodec(self.frac_bits)

    def sum_error_bound(self, n_summands: int) -> float:
        """Largest error of any entry of a sum of ``n_summands`` decoded vectors against the exact sum.

        Rounding to ``2^-f`` (half a step per summand), the float64 product ``w * x``
        and the decoding to float64 (each ``2^-53`` relative, at most
        ``max_weight * bound`` per summand).
        """
        peak = self.max_weight * max(self.bound, 1.0)
        return n_summands * (2.0 ** -(self.frac_bits + 1) + 2.0 * peak * 2.0**-53)

    def to_config(self) -> dict[str, Any]:
        """The plan as Flower ``ConfigRecord`` values (lists of ints and strings)."""
        return {
            "round": self.round,
            "contributors": list(self.contributors),
            "threshold": self.threshold,
            "ndims": [len(s) for s in self.shapes],
            "dims": [d for s in self.shapes for d in s],
            "bound": self.bound,
            "max_weight": self.max_weight,
            "frac_bits": self.frac_bits,
            "signed": self.signed,
            "graph": self.graph,
            "neighbours": self.neighbours,
            "max_colluders": self.max_colluders,
            "graph_seed": self.graph_seed,
        }

    def digest(self) -> bytes:
        """SHA-256 of the plan's canonical JSON (what every node signs along with its keys)."""
        text = json.dumps(self.to_config(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).digest()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SumPlan:
        """The plan from :meth:`to_config`'s values, checked (the scale must be the one :meth:`make` picks).

        Raises
        ------
        ProtocolError
            For a missing or malformed field or a scale that does not match the range.
        """
        try:
            ndims, dims = [int(n) for n in config["ndims"]], [int(d) for d in config["dims"]]
            if sum(ndims) != len(dims) or min(ndims, default=0) < 0 or min(dims, default=0) < 0:
                raise ValueError("ndims and dims disagree")
            starts = np.cumsum([0, *ndims])
            shapes = [dims[starts[i] : starts[i + 1]] for i in range(len(ndims))]
            plan = cls.make(
                int(config["round"]),
                [str(c) for c in config["contributors"]],
                int(config["threshold"]),
                shapes,
                float(config["bound"]),
                float(config["max_weight"]),
                _flag(config.get("signed", False)),
                **_graph_fields(config),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"the server sent a malformed secure-sum plan: {exc}") from exc
        if plan.graph == "sparse" and plan.neighbours != config["neighbours"]:
            raise ProtocolError(
                f"the server's plan uses neighbours={config['neighbours']!r}, the checked graph gives {plan.neighbours}"
            )
        if plan.frac_bits != config["frac_bits"]:
            raise ProtocolError(
                f"the server's plan uses frac_bits={config['frac_bits']!r}, but the agreed range "
                f"gives {plan.frac_bits}"
            )
        return plan

    def encode_update(self, node: str, arrays: Sequence[Any], weight: float) -> NDArray[np.uint64]:
        """Check one client's update against the plan and encode ``[w, w * x]`` (before anything is sent).

        Raises
        ------
        InputValidationError
            Naming the node and the array: a wrong count, shape or dtype (floating
            point only), a non-finite value, a value outside ``[-bound, bound]``,
            or a weight outside ``(0, max_weight]``.
        """
        who = f"node {node}"
        if len(arrays) != len(self.shapes):
            raise InputValidationError(
                f"{who}: the update has {len(arrays)} arrays, the agreed model has {len(self.shapes)}"
            )
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not 0 < weight <= self.max_weight
        ):
            raise InputValidationError(
                f"{who}: the update's weight (num_examples) is {weight!r}, outside (0, {self.max_weight:g}]"
            )
        parts = [np.array([float(weight)])]
        for i, (array, shape) in enumerate(zip(arrays, self.shapes, strict=True)):
            arr = np.asarray(array)
            if arr.dtype.kind != "f":
                raise InputValidationError(
                    f"{who}: array {i} of the update has dtype {arr.dtype}; floating point is expected"
                )
            if arr.shape != shape:
                raise InputValidationError(
                    f"{who}: array {i} of the update has shape {arr.shape}, the agreed shape is {shape}"
                )
            values = arr.astype(np.float64).ravel()
            bad = np.flatnonzero(~(np.abs(values) <= self.bound))  # NaN fails too
            if bad.size:
                raise InputValidationError(
                    f"{who}: array {i} of the update has the value {float(values[bad[0]])!r} at flat index "
                    f"{int(bad[0])}, outside the agreed range [-{self.bound:g}, {self.bound:g}]"
                )
            parts.append(values * float(weight))
        return self.codec.encode(np.concatenate(parts), n_summands=len(self.contributors), name=who)


def _graph_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    graph = str(config.get("graph", "complete"))
    if graph != "sparse":
        return {"graph": graph}
    return {
        "graph": graph,
        "max_colluders": int(config["max_colluders"]),
        "neighbours": int(config["neighbours"]),
        "graph_seed": str(config["graph_seed"]),
    }


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"'signed' must be a boolean, got {value!r}")
    return value


def share_key(private: X25519PrivateKey, me: str, peer: str, peer_public: bytes, round: int) -> AESGCM:
    """The AES-256-GCM key of the pair for this round: ``HKDF(X25519(c_u, C_v))`` bound to both names."""
    shared = private.exchange(X25519PublicKey.from_public_bytes(peer_public))
    low, high = sorted((me, peer))
    info = b"|".join([_ENCRYPTION_INFO, low.encode(), high.encode(), str(round).encode()])
    return AESGCM(HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(shared))


def encrypt_shares(key: AESGCM, round: int, sender: str, dest: str, b_share: bytes, s_share: bytes) -> bytes:
    """One peer's two shares, encrypted; the associated data binds the round, sender and recipient."""
    nonce = secrets.token_bytes(_NONCE_BYTES)
    return nonce + key.encrypt(nonce, b_share + s_share, _associated(round, sender, dest))


def decrypt_shares(key: AESGCM, round: int, sender: str, dest: str, data: object) -> tuple[bytes, bytes]:
    """The two shares ``sender`` encrypted for ``dest``.

    Raises
    ------
    ProtocolError
        Naming ``sender``, if the ciphertext is malformed or fails authentication.
    """
    if not isinstance(data, bytes) or len(data) <= _NONCE_BYTES:
        raise ProtocolError(f"the shares relayed from node {sender} are malformed")
    try:
        plain = key.decrypt(data[:_NONCE_BYTES], data[_NONCE_BYTES:], _associated(round, sender, dest))
    except InvalidTag as exc:
        raise ProtocolError(
            f"the shares relayed from node {sender} fail authentication (altered, replayed or misrouted)"
        ) from exc
    if len(plain) != 2 * SHARE_BYTES:
        raise ProtocolError(f"node {sender} sent {len(plain)} bytes of shares, expected {2 * SHARE_BYTES}")
    return plain[:SHARE_BYTES], plain[SHARE_BYTES:]


def _associated(round: int, sender: str, dest: str) -> bytes:
    return f"{round}|{sender}|{dest}".encode()


def require_answers(stage: str, asked: Sequence[str], answered: Sequence[str], threshold: int) -> None:
    """Raise if fewer than ``threshold`` of the nodes asked at ``stage`` answered.

    Raises
    ------
    DropoutError
        Naming the nodes that did not answer (``dropped``), the stage and the counts.

    Examples
    --------
    >>> require_answers("masked", ["1", "2", "3"], ["1", "3"], 2)
    >>> require_answers("masked", ["1", "2", "3"], ["3"], 2)
    Traceback (most recent call last):
    ...
    protocols.errors.DropoutError: stage 'masked': only 1 of 3 nodes answered, below the threshold 2; nodes ['1', '2'] did not answer (nothing about any input was revealed)
    """
    missing = sorted(set(asked) - set(answered))
    if len(set(answered) & set(asked)) < threshold:
        raise DropoutError(
            f"stage {stage!r}: only {len(set(answered) & set(asked))} of {len(asked)} nodes answered, below "
            f"the threshold {threshold}; nodes {missing} did not answer (nothing about any input was revealed)",
            tuple(missing),
        )


def new_secrets() -> tuple[X25519PrivateKey, X25519PrivateKey, bytes]:
    """A client's fresh mask key pair, share-encryption key pair and self-mask seed (CSPRNG)."""
    return X25519PrivateKey.generate(), X25519PrivateKey.generate(), secrets.token_bytes(KEY_BYTES)
