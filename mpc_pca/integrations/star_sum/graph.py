"""The mask graph of the star sum: complete (the default), or sparse for many clients.

``graph="complete"``: every sampled node masks with, and Shamir-shares its
secrets to, every other one, with the plan's threshold ``t`` (``O(n)`` keys,
ciphertexts and mask streams per node, ``O(n^2)`` in all).

``graph="sparse"``: the edges of an Erdos-Renyi graph ``G(n, p)`` drawn by
:func:`protocols.backends.sparse_masks.mask_graph` from the plan's public
``graph_seed`` (32 bytes the server draws with :mod:`secrets` every round,
in the plan that every node signs in signed mode), its expected degree
``neighbours`` = ``k`` chosen or checked by
:func:`protocols.backends.sparse_masks.plan_graph`. Every node derives the
same graph from the plan alone. Node ``u`` masks only with its neighbours
``N(u)``, and shares ``b_u`` and ``s_u`` only to its neighbourhood
``G_u = N(u) + {u}`` (share ``i`` still goes to the ``i``-th contributor,
so the server rebuilds with the same share indices; the shares of the
other contributors are never made public), with the threshold
``t_u = floor(|G_u| / 2) + 1``: the rule ``2 t > n`` of the complete graph,
applied within the neighbourhood (two disjoint groups of ``G_u`` cannot both
reach ``t_u``). About ``k = O(log n)`` keys, ciphertexts and streams per node
(Bell, Bonawitz, Gascon, Lepoint and Raykova, CCS 2020, the SecAgg+ design).

Security argument (honest-but-curious server, at most ``max_colluders = c``
clients colluding with it, chosen independently of the seed):

* Masks. :mod:`protocols.backends.sparse_masks` shows that a coalition that
  knows every mask touching ``T`` nodes learns only the sums of the honest
  inputs over the connected components of the remaining ``G(n - |T|, p)``,
  which is connected except with probability at most ``2^-40`` when ``k`` is
  the degree :func:`~protocols.backends.sparse_masks.plan_graph` gives for
  ``|T|`` colluders. Here the server also rebuilds the mask key of every
  dropped node (up to ``n - t`` of them), which exposes that node's masks as a
  colluder's would, so ``k`` is planned for ``c + (n - t)`` colluders: the
  surviving honest nodes (at least ``t - c >= 2``) stay connected, and the
  server learns only their sum.
* Shares. Every node's ``t_u`` must exceed ``c`` (checked on the derived graph,
  :func:`derive`; a plan that breaks it is refused naming the node): the
  colluders never hold enough shares of any node's secret. An honest node
  reveals only one of ``b_u``, ``s_u`` for each ``u``
  (:func:`~protocols.backends.dropout_unmask.unmasking_response`), as in the
  complete graph.
* Dropout. The round completes if at least ``t`` nodes send masked inputs
  and, for every secret the server must rebuild (``b_u`` of each survivor,
  ``s_w`` of each dropped ``w`` a survivor masked with), at least ``t_u`` of
  ``G_u`` answer the unmasking; otherwise a
  :class:`~protocols.errors.DropoutError` names the neighbourhood's nodes that
  did not answer. Random dropouts of a fixed fraction are recovered with high
  probability when that fraction is well below one half, not with certainty.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from protocols.backends.sparse_masks import GraphPlan, mask_graph, plan_graph
from protocols.errors import InputValidationError

#: The mask graphs a plan may name.
GRAPHS = ("complete", "sparse")
SEED_BYTES = 32


@dataclass(frozen=True)
class Neighbourhoods:
    """Every node's neighbours and share threshold in one round's mask graph.

    Attributes
    ----------
    neighbours : dict of str to tuple of str
        ``N(u)``: the nodes ``u`` masks with and shares to (never ``u`` itself).
    thresholds : dict of str to int
        ``t_u``: shares of ``u``'s secrets needed to rebuild them.
    """

    neighbours: dict[str, tuple[str, ...]]
    thresholds: dict[str, int]

    def group(self, node: str) -> tuple[str, ...]:
        """``G_u``: ``node`` and its neighbours, sorted."""
        return tuple(sorted((node, *self.neighbours[node])))


def check_graph_settings(graph: str, **sparse_only: object) -> None:
    """Refuse an unknown ``graph``, or settings of the sparse graph (given, not ``None``) with the complete one.

    Raises
    ------
    InputValidationError
        Naming the graph and the allowed ones, or every sparse-only setting by name.
    """
    if graph not in GRAPHS:
        raise InputValidationError(f"graph must be one of {list(GRAPHS)}, got {graph!r}")
    if graph == "complete" and any(value is not None for value in sparse_only.values()):
        *first, last = sparse_only
        names = f"{', '.join(first)} and {last}" if first else last
        raise InputValidationError(f"{names} apply only to graph='sparse'")


def sparse_plan(n: int, threshold: int, max_colluders: int, neighbours: int | None) -> GraphPlan:
    """The graph's degree for ``n`` nodes, ``max_colluders`` colluders and up to ``n - threshold`` dropped.

    Raises
    ------
    InputValidationError
        Naming the value and the limit: a negative ``max_colluders``, fewer than
        two honest survivors, or ``neighbours`` too few (from
        :func:`~protocols.backends.sparse_masks.plan_graph`).

    Examples
    --------
    >>> sparse_plan(100, 70, 5, None).neighbours
    39
    """
    if isinstance(max_colluders, bool) or not isinstance(max_colluders, int) or max_colluders < 0:
        raise InputValidationError(f"max_colluders must be a non-negative integer, got {max_colluders!r}")
    if threshold - max_colluders < 2:
        raise InputValidationError(
            f"max_colluders={max_colluders} with threshold {threshold} of {n} nodes leaves "
            f"{threshold - max_colluders} honest survivor(s); the sparse graph needs at least 2: "
            f"max_colluders must be at most {threshold - 2}"
        )
    try:
        return plan_graph(n, max_colluders=max_colluders + n - threshold, neighbours=neighbours)
    except InputValidationError as exc:
        raise InputValidationError(
            f"sparse mask graph for {n} nodes, max_colluders={max_colluders} and up to {n - threshold} "
            f"dropped (planned as {max_colluders + n - threshold} colluders): {exc}"
        ) from exc


@functools.lru_cache(maxsize=32)
def derive(
    contributors: tuple[str, ...],
    threshold: int,
    graph: str,
    neighbours: int,
    max_colluders: int,
    seed_hex: str,
) -> Neighbourhoods:
    """The round's neighbourhoods, from public plan data only (the same at every node and the server).

    Raises
    ------
    InputValidationError
        If the seed is malformed, a node has no neighbour, or a node's
        ``t_u`` is not above ``max_colluders`` (naming the node, ``t_u`` and the limit).
    """
    if graph == "complete":
        return Neighbourhoods(
            {u: tuple(v for v in contributors if v != u) for u in contributors},
            dict.fromkeys(contributors, threshold),
        )
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError as exc:
        raise InputValidationError(f"the graph seed is not hexadecimal: {seed_hex!r}") from exc
    if len(seed) != SEED_BYTES:
        raise InputValidationError(f"the graph seed must be {SEED_BYTES} bytes, got {len(seed)}")
    n = len(contributors)
    p = min(1.0, neighbours / (n - 1))
    edges = mask_graph(seed, contributors, p)
    thresholds = {u: (len(edges[u]) + 1) // 2 + 1 for u in contributors}
    for u in contributors:
        if not edges[u] or thresholds[u] <= max_colluders:
            raise InputValidationError(
                f"the sparse mask graph of this seed gives node {u} {len(edges[u])} neighbours, so its share "
                f"threshold is {thresholds[u]}, not above max_colluders={max_colluders}: draw another seed, "
                "or raise neighbours or lower max_colluders"
            )
    return Neighbourhoods(edges, thresholds)
