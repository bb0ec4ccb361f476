"""The threads runner: every party of one protocol object as a thread of this process.

The estimators, ``mpc-pca run`` (in-process) and the studies run a protocol
here; local processes (:func:`mpc_pca.deploy.launch_local`) and one process per
host (``mpc-pca party``) run the *same* :class:`~mpc_pca.deployment.Deployment`
object, through the same four steps:

1. every party's announcement (:meth:`~mpc_pca.deployment.Deployment.public`,
   after the floor's keys, :mod:`mpc_pca.floor`), computed here: nothing is sent;
2. the run's configuration from all of them
   (:meth:`~mpc_pca.deployment.Deployment.configure`);
3. every party's role and noise generator;
4. the roles as threads (:func:`protocols.runtime.run_inprocess`).

Before step 1, :meth:`~mpc_pca.deployment.Deployment.preflight` refuses
whatever needs every part at once (this runner holds them all), so an error
names the part and the limit before any party starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_pca.deployment import Deployment
from mpc_pca.floor import check_floor_views, floor_public, with_feature_names
from mpc_pca.noise_seeds import NoiseSeed, noise_root
from protocols.errors import InputValidationError
from protocols.runtime import RunResult, run_inprocess
from protocols.runtime.runner import ChannelWrapper
from protocols.runtime.threads import single_threaded_blas


@dataclass(frozen=True)
class ThreadsRun:
    """One finished run of a protocol object: its layout, configuration, outputs and reports."""

    protocol: Deployment
    layout: dict[str, int]
    config: Any
    run: RunResult

    @property
    def result_party(self) -> str:
        """The party whose output is the run's result."""
        return self.protocol.result_party(self.layout)

    @property
    def output(self) -> Any:
        """The result party's raw output (e.g. the server's ``PPPCAModel``)."""
        return self.run.outputs[self.result_party]

    def result(self, feature_names: Sequence[str] | None = None) -> dict[str, Any]:
        """The run's JSON: ``protocol``, the result party's fields and every party's ``report``."""
        names = None if feature_names is None else tuple(str(n) for n in feature_names)
        fields = self.protocol.result(self.result_party, self.config, self.output)
        return {
            "protocol": self.protocol.name,
            **with_feature_names(fields, names),
            "report": self.run.report_dict(),
        }


def announce(
    protocol: Deployment,
    parts: Sequence[Any],
    settings: Mapping[str, Any],
    feature_names: Sequence[str] | None = None,
) -> tuple[dict[str, int], dict[str, Any], Any]:
    """Every party's announcement computed here, checked and configured (nothing is sent).

    Returns
    -------
    layout : dict of str to int
        Every party's name and rank.
    data : dict of str to rows
        Each data holder's part.
    config : object
        The protocol's configuration of the run.
    """
    if len(parts) < 1:
        raise InputValidationError("a run needs at least one part (one provider's rows)")
    n = len(parts)
    layout = protocol.layout(n)
    holders = tuple(protocol.data_holders(n))
    data = dict(zip(holders, parts, strict=True))
    views = {
        name: {
            **floor_public(protocol.name, n, name in data, feature_names),
            **protocol.public(name, data.get(name), settings),
        }
        for name in layout
    }
    check_floor_views(views, holders)
    return layout, data, protocol.configure(views, n)


def run_protocol(
    protocol: Deployment,
    parts: Sequence[Any],
    settings: Mapping[str, Any] | None = None,
    *,
    random_state: NoiseSeed = None,
    timeout: float = 120.0,
    feature_names: Sequence[str] | None = None,
    wrap_channel: ChannelWrapper | None = None,
    preflight: bool = True,
) -> ThreadsRun:
    """Run every party of ``protocol`` as a thread of this process.

    Parameters
    ----------
    protocol : Deployment
        The protocol object (from :func:`mpc_pca.registry.entry`, or one an
        estimator built with its own parameters).
    parts : sequence
        One data holder's rows per part, in the protocol's holder order.
    settings : mapping, optional
        The protocol's settings (:meth:`~mpc_pca.deployment.Deployment.settings`
        fills in the defaults).
    random_state : int, SeedSequence, Generator or None
        Seed of every party's DP noise (:func:`noise_root`); ``None``: fresh
        randomness. A run with a known seed is not private.
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    feature_names : sequence of str, optional
        The parts' column names (announced, as ``mpc-pca party`` does).
    wrap_channel : callable, optional
        Wraps each party's channel (:func:`protocols.runtime.run_inprocess`).
    preflight : bool, default=True
        Run :meth:`~mpc_pca.deployment.Deployment.preflight` (the checks that
        need every part at once, e.g. PPPCA's precision bound) before the
        announcements. ``False``: only what the parties check themselves, as
        when they are deployed (:func:`mpc_pca.deploy.run_threads`).

    Returns
    -------
    ThreadsRun
    """
    full = protocol.settings(settings)
    protocol.check_threads(full)
    if preflight:
        protocol.preflight(parts, full)
    layout, data, config = announce(protocol, parts, full, feature_names)
    # no seed: each party draws its own fresh randomness (protocol.generator(..., None)), as when deployed;
    # a root drawn here would turn a protocol's own CSPRNG noise (pppca-dp) into seeded noise
    root = None if random_state is None else noise_root(random_state)
    if isinstance(random_state, np.random.SeedSequence):
        # as spawn_generators: a SeedSequence given again draws fresh children, not the same noise
        root = np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key, pool_size=random_state.pool_size,
            n_children_spawned=random_state.n_children_spawned,
        )  # fmt: skip
        random_state.spawn(len(layout))
    roles = {
        name: protocol.role(name, config, data.get(name), protocol.generator(name, layout, root))
        for name in layout
    }
    if protocol.one_blas_thread:
        with single_threaded_blas():
            run = run_inprocess(roles, timeout=timeout, wrap_channel=wrap_channel)
    else:
        run = run_inprocess(roles, timeout=timeout, wrap_channel=wrap_channel)
    return ThreadsRun(protocol, layout, config, run)


__all__ = ["NoiseSeed", "ThreadsRun", "announce", "noise_root", "run_protocol"]
