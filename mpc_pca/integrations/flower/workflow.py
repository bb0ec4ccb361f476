"""The server workflow: a Flower ``ServerApp`` swaps ``SecAggPlusWorkflow`` for :class:`SecureSumWorkflow`.

``DefaultWorkflow(fit_workflow=SecureSumWorkflow(num_shares, reconstruction_threshold))``
with a strategy's ``configure_fit`` / ``aggregate_fit``, as for SecAgg+: the
sampled nodes' parameters are summed by this project's secure sum
(:mod:`mpc_pca.integrations.star_sum.protocol`), weighted by ``num_examples``,
and every result handed to ``aggregate_fit`` carries the weighted mean, so
FedAvg returns it unchanged. Each round's :class:`RoundOutcome` (who was
sampled, who counted, who dropped and why, the error bound) is appended to
:attr:`SecureSumWorkflow.outcomes`.

A round that ends with fewer than the threshold of nodes is logged and
recorded with the :class:`~protocols.errors.DropoutError` naming who dropped;
the global parameters stay as they were and the next round starts afresh
(fresh keys, the nodes sampled again).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import flwr.compat.common.recorddict_compat as compat
import numpy as np
from flwr.app import ConfigRecord, Message, RecordDict
from flwr.app.message_type import MessageType
from flwr.common import FitRes, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.serverapp.grid import Grid
from numpy.typing import NDArray

from mpc_pca.integrations.flower.mod import RECORD, pack, unpack
from mpc_pca.integrations.star_sum.graph import check_graph_settings
from mpc_pca.integrations.star_sum.protocol import SumPlan
from mpc_pca.integrations.star_sum.server import ServerSum
from protocols.backends.sparse_masks import DEFAULT_SECURITY_BITS, check_parameters
from protocols.errors import InputValidationError, ProtocolError

log = logging.getLogger("mpc_pca.integrations.flower")


@dataclass
class RoundOutcome:
    """What one round of :class:`SecureSumWorkflow` did.

    Attributes
    ----------
    round : int
        The Flower round.
    sampled : list of str
        The node ids the strategy sampled.
    listed : list of str
        The node ids the grid listed at the round's start (``grid.get_node_ids()``): the
        SuperLink keeps listing a node that died until its heartbeat expires, so a dead
        node can be listed, sampled and then dropped for not answering.
    survivors : list of str
        The nodes whose updates are in the sum (empty when the round failed).
    dropped : dict of str to str
        Every sampled node that did not count, with the reason (its error or "no answer at stage ...").
    error : str or None
        Why the round failed (the named :class:`~protocols.errors.DropoutError`), else ``None``.
    frac_bits : int
        The fixed-point scale the round used.
    total_weight : float
        The survivors' summed ``num_examples`` (0 when the round failed).
    mean_error_bound : float
        Largest error of the aggregated mean against the exact weighted mean, in float64, before the
        cast to the model's dtype (0 when the round failed).
    signed : bool
        Whether the round ran with signed key material (every node's consortium certificate).
    graph : str
        The round's mask graph, ``"complete"`` or ``"sparse"``.
    neighbours : int
        The mask graph's expected degree (``n - 1`` when complete).
    """

    round: int
    sampled: list[str]
    listed: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    frac_bits: int = 0
    total_weight: float = 0.0
    mean_error_bound: float = 0.0
    signed: bool = False
    graph: str = "complete"
    neighbours: int = 0


class SecureSumWorkflow:
    """The fit workflow of this project's secure sum, in place of Flower's ``SecAggPlusWorkflow``.

    Parameters
    ----------
    num_shares : int or float
        As for SecAgg+ (accepted so that only the name changes); with the
        default complete graph every sampled node holds a share of every other
        node's secrets, so more nodes than ``num_shares`` hold shares (``graph``
        below sets the neighbourhoods).
    reconstruction_threshold : int or float
        ``t``: as an int, the fewest nodes a round completes with; as a float in
        (0, 1], that fraction of the sampled nodes (rounded up). It is raised to
        the smallest value with ``2 t > n`` (``n`` sampled nodes), which stops
        a server from telling two disjoint groups different survivor sets.
    max_weight : float, default=1000.0
        Largest ``num_examples`` a client may report (its update is weighted by it).
    clipping_range : float, default=8.0
        The agreed range: every parameter value must lie in
        ``[-clipping_range, clipping_range]``; a client outside it is refused
        (named), never clipped. The fixed-point scale follows from it
        (:func:`~mpc_pca.integrations.star_sum.protocol.choose_frac_bits`).
    timeout : float, optional
        Seconds to wait for the replies of each stage; ``None`` waits for all.
        A node that does not answer in time is dropped for the round.
    require_signed_keys : bool, default=False
        Every node signs its key material with its consortium certificate and
        every client checks its peers' before encrypting a share
        (:mod:`mpc_pca.integrations.star_sum.identity`; each SuperNode needs
        the node-config keys :data:`~mpc_pca.integrations.flower.mod.IDENTITY_KEYS`).
        ``False`` relays unsigned keys: a node configured with an identity then
        refuses the round.
    graph : {"complete", "sparse"}, default="complete"
        The mask graph (:mod:`mpc_pca.integrations.star_sum.graph`): every node
        masks with and shares to every other, or, for many clients, only to its
        ``O(log n)`` neighbours in a random graph whose public seed is in the
        round's plan, with share thresholds per neighbourhood.
    max_colluders : int, optional
        Sparse graph only: clients that may collude with the server (default a
        third of the sampled nodes); the graph's degree is planned for them plus
        the up to ``n - t`` nodes that may drop, and every neighbourhood's share
        threshold must exceed it. An impossible value is refused naming its limit.
    neighbours : int, optional
        Sparse graph only: the expected degree; the smallest sufficient one when
        omitted, and refused (naming the minimum) when too few.
    """

    def __init__(
        self,
        num_shares: int | float,
        reconstruction_threshold: int | float,
        *,
        max_weight: float = 1000.0,
        clipping_range: float = 8.0,
        timeout: float | None = None,
        require_signed_keys: bool = False,
        graph: str = "complete",
        max_colluders: int | None = None,
        neighbours: int | None = None,
    ) -> None:
        if isinstance(num_shares, bool) or not isinstance(num_shares, (int, float)) or num_shares <= 0:
            raise InputValidationError(f"num_shares must be a positive number, got {num_shares!r}")
        threshold = reconstruction_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise InputValidationError(f"reconstruction_threshold must be a number, got {threshold!r}")
        if isinstance(threshold, float) and not 0 < threshold <= 1:
            raise InputValidationError(
                f"a fractional reconstruction_threshold must be in (0, 1], got {threshold}"
            )
        if isinstance(threshold, int) and threshold < 2:
            raise InputValidationError(f"reconstruction_threshold must be at least 2, got {threshold}")
        if not (math.isfinite(clipping_range) and clipping_range > 0) or not max_weight >= 1:
            raise InputValidationError(
                f"clipping_range must be positive and max_weight at least 1, got {clipping_range!r}, {max_weight!r}"
            )
        self.num_shares = num_shares
        self.reconstruction_threshold = threshold
        self.max_weight = float(max_weight)
        self.clipping_range = float(clipping_range)
        self.timeout = timeout
        if not isinstance(require_signed_keys, bool):
            raise InputValidationError(f"require_signed_keys must be a boolean, got {require_signed_keys!r}")
        self.require_signed_keys = require_signed_keys
        check_graph_settings(graph, max_colluders=max_colluders, neighbours=neighbours)
        check_parameters(max_colluders, neighbours, DEFAULT_SECURITY_BITS)
        self.graph, self.max_colluders, self.neighbours = graph, max_colluders, neighbours
        self.outcomes: list[RoundOutcome] = []

    def threshold_for(self, n_sampled: int) -> int:
        """``t`` for ``n_sampled`` nodes (class notes).

        Examples
        --------
        >>> SecureSumWorkflow(3, 0.5).threshold_for(5)
        3
        >>> SecureSumWorkflow(3, 4).threshold_for(5)
        4
        """
        wanted = self.reconstruction_threshold
        t = math.ceil(wanted * n_sampled) if isinstance(wanted, float) else wanted
        return max(t, n_sampled // 2 + 1, 2)

    def __call__(self, grid: Grid, context: LegacyContext) -> None:
        """Run one round's fit with the secure sum (Flower calls this once per round)."""
        if not isinstance(context, LegacyContext):
            raise TypeError(f"SecureSumWorkflow needs a LegacyContext, got {type(context).__name__}")
        current = int(cast(int, context.state.config_records[MAIN_CONFIGS_RECORD][WorkflowKey.CURRENT_ROUND]))
        parameters = compat.arrayrecord_to_parameters(
            context.state.array_records[MAIN_PARAMS_RECORD], keep_input=True
        )
        listed = sorted(str(n) for n in grid.get_node_ids())
        chosen = context.strategy.configure_fit(current, parameters, context.client_manager)
        if not chosen:
            log.info("round %d: the strategy sampled no clients; no fit", current)
            return
        model = parameters_to_ndarrays(parameters)
        fitins = {str(proxy.node_id): (proxy, ins) for proxy, ins in chosen}
        outcome = RoundOutcome(current, sorted(fitins), listed)
        self.outcomes.append(outcome)
        try:
            plan = SumPlan.make(
                current,
                sorted(fitins),
                self.threshold_for(len(fitins)),
                [a.shape for a in model],
                self.clipping_range,
                self.max_weight,
                signed=self.require_signed_keys,
                graph=self.graph,
                max_colluders=self.max_colluders,
                neighbours=self.neighbours,
            )
            outcome.signed = plan.signed
            outcome.graph, outcome.neighbours = plan.graph, plan.neighbours
            outcome.frac_bits = plan.frac_bits
            results, mean = self._run(grid, plan, fitins, outcome)
        except (ProtocolError, InputValidationError) as exc:
            outcome.error = str(exc)
            log.error("round %d: the secure sum failed: %s", current, exc)
            return
        arrays = _split(mean, model)
        aggregated = ndarrays_to_parameters(arrays)
        for _, res in results:
            res.parameters = aggregated
        new, metrics = context.strategy.aggregate_fit(current, results, [])
        if new is not None:
            context.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(new, True)
            context.history.add_metrics_distributed_fit(server_round=current, metrics=metrics)

    def _run(
        self, grid: Grid, plan: SumPlan, fitins: dict[str, Any], outcome: RoundOutcome
    ) -> tuple[list[tuple[Any, FitRes]], NDArray[np.float64]]:
        """The four stages; returns the ``(proxy, FitRes)`` pairs of the survivors and the weighted mean."""
        srv = ServerSum(plan)
        keys_cfg = {"stage": "keys", **plan.to_config()}
        replies = self._ask(
            grid,
            plan,
            "keys",
            {n: _with(compat.fitins_to_recorddict(fi, True), keys_cfg) for n, (_, fi) in fitins.items()},
            outcome,
        )
        srv.take_keys(
            {n: (r.get("mask_pk"), r.get("enc_pk")) for n, (r, _) in replies.items()},
            {n: (r.get("cert"), r.get("signature")) for n, (r, _) in replies.items()},
        )
        fitres = {
            n: compat.recorddict_to_fitres(content, keep_input=True) for n, (_, content) in replies.items()
        }
        relay = {n: _with(RecordDict(), _relay(*srv.keys_for(n))) for n in srv.mask_pks}
        replies = self._ask(grid, plan, "shares", relay, outcome)
        srv.take_shares({n: unpack(r, "shares") for n, (r, _) in replies.items()})
        ask = {
            n: _with(RecordDict(), {**pack("shares", srv.shares_for(n)), "stage": "masked"})
            for n in srv.sharers
        }
        replies = self._ask(grid, plan, "masked", ask, outcome)
        survivors = srv.take_masked(
            {
                n: (r.get("masked"), [str(p) for p in cast(list, r.get("peers", []))])
                for n, (r, _) in replies.items()
            }
        )
        ask = {n: _with(RecordDict(), {"stage": "unmask", "survivors": survivors}) for n in survivors}
        replies = self._ask(grid, plan, "unmask", ask, outcome)
        answers = {n: {"b": unpack(r, "b"), "s": unpack(r, "s")} for n, (r, _) in replies.items()}
        total = srv.finish(survivors, answers)
        outcome.survivors = survivors
        for node in sorted(set(plan.contributors) - set(survivors)):
            outcome.dropped.setdefault(node, "did not count")
        weight = float(total[0])
        outcome.total_weight = weight
        outcome.mean_error_bound = 2 * plan.sum_error_bound(len(survivors)) / weight
        return [(fitins[n][0], fitres[n]) for n in survivors], total[1:] / weight

    def _ask(
        self, grid: Grid, plan: SumPlan, stage: str, contents: dict[str, RecordDict], outcome: RoundOutcome
    ) -> dict[str, tuple[ConfigRecord, RecordDict]]:
        """Send one stage's messages; the replies without error, by node; errors and silence go to ``outcome``."""
        messages = [
            Message(content=c, dst_node_id=int(n), message_type=MessageType.TRAIN, group_id=str(plan.round))
            for n, c in contents.items()
        ]
        replies: dict[str, tuple[ConfigRecord, RecordDict]] = {}
        for reply in cast(Iterable[Message], grid.send_and_receive(messages, timeout=self.timeout)):
            node = str(reply.metadata.src_node_id)
            if node not in contents:
                continue
            if reply.has_error():
                outcome.dropped[node] = f"stage {stage!r}: {reply.error.reason}"
                log.warning(
                    "round %d: node %s failed at stage %r: %s", plan.round, node, stage, reply.error.reason
                )
            elif RECORD not in reply.content.config_records:
                outcome.dropped[node] = f"stage {stage!r}: the reply has no secure-sum record"
            else:
                replies[node] = (reply.content.config_records[RECORD], reply.content)
        for node in sorted(set(contents) - set(replies)):
            outcome.dropped.setdefault(node, f"no answer at stage {stage!r}")
        return replies


def _relay(
    mask_pks: dict[str, bytes],
    enc_pks: dict[str, bytes],
    certs: dict[str, bytes],
    signatures: dict[str, bytes],
) -> dict[str, Any]:
    """Stage ``shares``'s record for one node: its neighbourhood's keys (and certificates, signatures)."""
    return {
        **pack("mask_pks", mask_pks),
        **pack("enc_pks", enc_pks),
        **pack("certs", certs),
        **pack("signatures", signatures),
        "stage": "shares",
    }


def _with(content: RecordDict, config: dict[str, Any]) -> RecordDict:
    content.config_records[RECORD] = ConfigRecord(config)
    return content


def _split(mean: NDArray[np.float64], model: list[NDArray[Any]]) -> list[NDArray[Any]]:
    """The flat mean as arrays of the model's shapes (and floating dtypes)."""
    out, start = [], 0
    for array in model:
        part = mean[start : start + array.size].reshape(array.shape)
        out.append(part.astype(array.dtype) if array.dtype.kind == "f" else part)
        start += array.size
    return out
