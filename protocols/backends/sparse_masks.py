"""Pairwise masks over a sparse random graph: secure sum in O(M log M) streams.

In the full-graph ``masks`` mode every pair of the ``M`` contributors shares a
mask, so each sum costs ``M (M - 1)`` ChaCha20 streams. Following Bell,
Bonawitz, Gascon, Lepoint and Raykova, "Secure Single-Server Aggregation with
(Poly)Logarithmic Overhead" (CCS 2020, §3-4; the SecAgg+ design), masks are
only shared along the edges of a random Erdos-Renyi graph ``G(M, p)`` whose
edges every party derives from one public seed. Each contributor expands
about ``k = p (M - 1)`` streams per sum, and ``k`` only has to grow like
``log M`` for a fixed security level.

Security statement (honest-but-curious, non-adaptive corruption)
-----------------------------------------------------------------
Let ``T`` be a set of at most ``t`` contributors that collude with the
receiver, chosen independently of the graph. They know every mask touching a
member of ``T``; removing those leaves the masks among the ``h = M - t``
honest contributors, an Erdos-Renyi graph ``G(h, p)``. The coalition learns
the sum of the honest inputs over each connected component of that graph and
nothing else (Bell et al., Lemma 3.3). If it is connected it learns only the
honest total, which the sum reveals anyway; if some honest contributor is
isolated, the coalition learns its input. Over the randomness of the graph,

    P[G(h, p) disconnected] <= sum_{s=1}^{floor(h/2)} C(h, s) (1 - p)^{s (h - s)}

(union bound over the smaller side of a cut; a cut into two halves is counted
once). :func:`plan_graph` picks the
smallest expected degree ``k`` that makes this bound at most
``2^-security_bits`` for the requested ``t``, or checks a given ``k`` and
refuses it with the minimum that would do. Fewer than two honest contributors
(``t >= M - 1``) is refused outright: the sum alone would then reveal the one
honest input. Like the full-graph mode: no dropout recovery.

Keys and streams (:func:`agree_sparse_keys`, :func:`add_masks`)
---------------------------------------------------------------
The receiver sends each contributor the graph seed (it must draw it honestly:
a graph it chose could isolate a victim). The smaller-named end of each edge
draws the edge's 32-byte key from :mod:`secrets` and sends it to the other
end over their direct link, which the deployment authenticates and encrypts
(TLS 1.3 between organisations), as it carries the share seeds of the
``shares`` mode: ``M k / 2`` messages of 32 bytes and no public-key
operation (an X25519 agreement relayed by the receiver cost two key
exchanges per edge, the largest cost of a run at M = 64). Each edge key feeds
one ChaCha20 stream for the run, read on from sum to sum.
"""

from __future__ import annotations

import functools
import hashlib
import math
import secrets
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_seed
from protocols.party import Party
from protocols.prg import KEY_BYTES, RingPRG

#: Default statistical security: the graph fails with probability at most 2^-40.
DEFAULT_SECURITY_BITS = 40
_GRAPH_INFO = b"mpc-pca sparse mask graph v1"


def log2_disconnection_bound(honest: int, p: float) -> float:
    """``log2`` of the union bound on ``P[G(honest, p) is disconnected]`` (module notes).

    Examples
    --------
    >>> log2_disconnection_bound(10, 1.0)
    -inf
    >>> round(log2_disconnection_bound(2, 0.5), 6)  # one pair: no edge with probability 1/2
    -1.0
    """
    if honest < 2 or p >= 1.0:
        return -math.inf
    if p <= 0.0:
        return 0.0
    log_q = math.log2(1.0 - p)
    terms = []
    for s in range(1, honest // 2 + 1):
        log_binom = (math.lgamma(honest + 1) - math.lgamma(s + 1) - math.lgamma(honest - s + 1)) / math.log(2)
        if 2 * s == honest:  # a set and its complement are the same cut: count it once
            log_binom -= 1.0
        terms.append(log_binom + s * (honest - s) * log_q)
    top = max(terms)
    return min(0.0, top + math.log2(sum(2.0 ** (x - top) for x in terms)))


@dataclass(frozen=True)
class GraphPlan:
    """The mask graph parameters of one group of contributors.

    Attributes
    ----------
    n_contributors : int
        ``M``.
    max_colluders : int
        ``t``: contributors that may collude with the receiver.
    neighbours : int
        Expected degree ``k``; the edge probability is ``k / (M - 1)``.
    log2_failure : float
        ``log2`` of the bound on the probability that the coalition learns
        more than the honest total (``-inf`` for the complete graph).
    """

    n_contributors: int
    max_colluders: int
    neighbours: int
    log2_failure: float

    @property
    def edge_probability(self) -> float:
        return 1.0 if self.n_contributors < 2 else min(1.0, self.neighbours / (self.n_contributors - 1))


def default_max_colluders(n_contributors: int) -> int:
    """The default ``t``: a third of the contributors, rounded down."""
    return n_contributors // 3


@functools.lru_cache(maxsize=256)
def plan_graph(
    n_contributors: int,
    *,
    max_colluders: int | None = None,
    neighbours: int | None = None,
    security_bits: int = DEFAULT_SECURITY_BITS,
) -> GraphPlan:
    """Choose or check the expected degree of the mask graph (Bell et al. 2020, Thm 3.6 setting).

    Parameters
    ----------
    n_contributors : int
        ``M``.
    max_colluders : int, optional
        ``t``; defaults to :func:`default_max_colluders`.
    neighbours : int, optional
        Expected degree ``k`` to use; the smallest sufficient one when omitted.
    security_bits : int, default=40
        ``sigma``: the graph may fail with probability at most ``2^-sigma``.

    Raises
    ------
    InputValidationError
        If fewer than two contributors would be honest, or ``neighbours`` is too
        small for ``max_colluders`` at ``security_bits`` (the message names the
        minimum).

    Examples
    --------
    >>> plan_graph(100, max_colluders=33).neighbours
    38
    >>> plan_graph(100, max_colluders=33, neighbours=10)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: neighbours=10 is too few for 100 contributors of \
which up to 33 collude with the receiver: the mask graph would leak an honest input with \
probability up to 2^-4.0, above 2^-40; use neighbours >= 38 or fewer colluders
    """
    m = _positive_int(n_contributors, "n_contributors")
    check_parameters(max_colluders, neighbours, security_bits)
    t = default_max_colluders(m) if max_colluders is None else int(max_colluders)
    sigma = int(security_bits)
    honest = m - int(t)
    if m >= 2 and honest < 2:
        raise InputValidationError(
            f"max_colluders={t} leaves {honest} honest contributor(s) of {m}; a secure sum needs at "
            f"least 2 honest contributors (with one, the sum itself reveals its input): "
            f"max_colluders must be at most {m - 2}"
        )
    if m < 2:
        return GraphPlan(m, int(t), 0, -math.inf)

    def bound(k: int) -> float:
        return log2_disconnection_bound(honest, min(1.0, k / (m - 1)))

    needed = next((k for k in range(1, m - 1) if bound(k) <= -sigma), m - 1)
    if neighbours is None:
        return GraphPlan(m, int(t), needed, bound(needed))
    k = _positive_int(neighbours, "neighbours")
    k = min(k, m - 1)
    if bound(k) > -sigma:
        raise InputValidationError(
            f"neighbours={neighbours} is too few for {m} contributors of which up to {t} collude with the "
            f"receiver: the mask graph would leak an honest input with probability up to "
            f"2^{bound(k):.1f}, above 2^-{sigma}; use neighbours >= {needed} or fewer colluders"
        )
    return GraphPlan(m, int(t), k, bound(k))


def check_parameters(max_colluders: object, neighbours: object, security_bits: object) -> None:
    """Type and range checks of the graph parameters that do not depend on ``M``."""
    if max_colluders is not None and (
        isinstance(max_colluders, bool)
        or not isinstance(max_colluders, (int, np.integer))
        or max_colluders < 0
    ):
        raise InputValidationError(f"max_colluders must be a non-negative integer, got {max_colluders!r}")
    if neighbours is not None:
        _positive_int(neighbours, "neighbours")
    _positive_int(security_bits, "security_bits")


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputValidationError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def mask_graph(seed: bytes, contributors: tuple[str, ...], p: float) -> dict[str, tuple[str, ...]]:
    """Each contributor's neighbours in ``G(M, p)`` drawn from a public seed.

    Every pair ``i < j`` (in ``contributors`` order) gets one uniform 64-bit word
    of a ChaCha20 stream keyed by ``SHA-256(info | seed | names)``; the edge is
    present when the word is below ``p 2^64``. Every party computes the same
    graph from the same seed.

    Examples
    --------
    >>> g = mask_graph(bytes(32), ("a", "b", "c"), 1.0)
    >>> g["a"], g["c"]
    (('b', 'c'), ('a', 'b'))
    """
    m = len(contributors)
    rows, cols = _edges(seed, contributors, p)
    ends = np.concatenate([rows, cols])
    others = np.concatenate([cols, rows])
    order = np.lexsort((others, ends))  # group by node, neighbours in contributor order
    ends, others = ends[order], others[order]
    bounds = np.searchsorted(ends, np.arange(m + 1))
    names = np.array(contributors, dtype=object)
    return {
        contributors[i]: tuple(sorted(names[others[bounds[i] : bounds[i + 1]]].tolist())) for i in range(m)
    }


def graph_neighbours(seed: bytes, contributors: tuple[str, ...], p: float, me: str) -> tuple[str, ...]:
    """``mask_graph(seed, contributors, p)[me]`` without building every other contributor's list.

    Examples
    --------
    >>> graph_neighbours(bytes(32), ("a", "b", "c"), 1.0, "b")
    ('a', 'c')
    """
    rows, cols = _edges(seed, contributors, p)
    i = contributors.index(me)
    mine = np.concatenate([cols[rows == i], rows[cols == i]])
    return tuple(sorted(contributors[j] for j in mine.tolist()))


def _edges(seed: bytes, contributors: tuple[str, ...], p: float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The graph's edges ``(i, j)``, ``i < j``, as two index arrays (module notes of :func:`mask_graph`)."""
    if len(seed) != KEY_BYTES:
        raise InputValidationError(f"graph seed must be {KEY_BYTES} bytes, got {len(seed)}")
    digest = hashlib.sha256(_GRAPH_INFO + seed + "\x00".join(contributors).encode()).digest()
    rows, cols = _pairs(len(contributors))
    if p >= 1.0:
        return rows, cols
    words = RingPRG(digest).ring_elements(rows.shape[0])
    present = words < np.uint64(min(int(p * 2.0**64), 2**64 - 1))
    return rows[present], cols[present]


@functools.lru_cache(maxsize=16)
def _pairs(m: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """``np.triu_indices(m, k=1)``, read-only and kept: every contributor of a sum derives the graph."""
    rows, cols = np.triu_indices(m, k=1)
    rows.flags.writeable = False
    cols.flags.writeable = False
    return rows, cols


def agree_sparse_keys(
    party: Party, contributors: tuple[str, ...], receiver: str, plan: GraphPlan, graph_seed: bytes | None
) -> dict:
    """Agree the mask keys of the graph's edges: a graph seed from the receiver, a key per edge.

    The receiver draws the public graph seed (from :mod:`secrets`, unless the
    backend fixes one) and sends it to every contributor. Each contributor
    derives the graph and, for every neighbour whose name is larger than its
    own, draws a fresh 32-byte key from :mod:`secrets` and sends it to that
    neighbour over their direct link; it receives the key of every smaller
    neighbour the same way. One message per contributor from the receiver
    and one per edge: ``O(M k)`` messages of 32 bytes, no public-key
    operation. The links between contributors are authenticated and
    encrypted (TLS 1.3 between organisations, the process's own queues
    in-process), as for the share seeds of the ``shares`` mode; the receiver
    never sees a key, so it cannot substitute one.
    """
    p = plan.edge_probability
    if party.name == receiver:
        seed = secrets.token_bytes(KEY_BYTES) if graph_seed is None else graph_seed
        graph = mask_graph(seed, contributors, p)
        _check_no_isolated(graph)
        for c in contributors:
            if c != party.name:
                party.send(c, {"seed": seed})
        if party.name not in contributors:
            return {"keys": {}, "counter": 0}
        neighbours = graph[party.name]
    else:
        message = party.recv(receiver)
        if not isinstance(message, dict) or set(message) != {"seed"}:
            raise ProtocolError(f"{party.name!r} got a malformed mask-graph message from {receiver!r}")
        seed = message["seed"]
        if not isinstance(seed, bytes) or len(seed) != KEY_BYTES:
            raise ProtocolError(f"the mask-graph seed from {receiver!r} is not {KEY_BYTES} bytes")
        if graph_seed is not None and seed != graph_seed:
            raise ProtocolError(f"{receiver!r} sent a mask-graph seed other than the one fixed for this run")
        neighbours = graph_neighbours(seed, contributors, p, party.name)
        if not neighbours and len(contributors) > 1:  # a receiver's chosen seed could isolate a victim
            raise ProtocolError(
                f"the mask graph of the seed from {receiver!r} leaves {party.name!r} without neighbours "
                f"(0 of {len(contributors) - 1} contributors), so its input would go unmasked; nothing was sent"
            )
    keys: dict[str, bytes] = {}
    for peer in neighbours:
        if party.name < peer:
            keys[peer] = secrets.token_bytes(KEY_BYTES)
            party.send(peer, keys[peer])
    for peer in neighbours:
        if peer < party.name:
            keys[peer] = expect_seed(party.recv(peer), sender=peer, size=KEY_BYTES)
    return {"keys": keys, "counter": 0}


def _check_no_isolated(graph: dict[str, tuple[str, ...]]) -> None:
    lonely = [c for c, n in graph.items() if not n]
    if len(graph) > 1 and lonely:
        raise ProtocolError(
            f"the mask graph left {lonely} without neighbours (probability below the configured bound); "
            "run the sum again to draw a new graph"
        )


#: The nonce of every mask stream: each edge key is drawn afresh for one run and feeds one stream.
_STREAM_NONCE = bytes(16)


def add_masks(me: str, state: dict, encoded: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Add (smaller name) or subtract (larger name) each neighbour's mask, in place.

    Each edge has one ChaCha20 stream for the whole run, opened at its first
    sum and read on from where the previous sum stopped (both ends read the
    same lengths in the same order), so no keystream word masks two values
    and a sum costs ``k`` stream reads, not ``k`` cipher set-ups as well.
    """
    streams = state.setdefault("streams", {})
    state["counter"] += 1
    for peer, key in state["keys"].items():
        stream = streams.get(peer)
        if stream is None:
            stream = streams[peer] = RingPRG(key, _STREAM_NONCE)
        stream.accumulate(encoded, subtract=me > peer)
    return encoded
