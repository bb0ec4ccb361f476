"""Every party of a run on this host: as threads (:func:`run_threads`) or as processes (:func:`launch_local`).

Both run the same four :class:`~mpc_pca.deployment.Deployment` steps as
:func:`mpc_pca.deploy.run_party` (announce, configure, cap, role), so for a
fixed noise seed the three modes compute the same result.

:func:`launch_local` makes throw-away credentials for the run (a CA and one
certificate per party, in the run's temporary directory, deleted afterwards)
and hosts the rendezvous on ``127.0.0.1`` at a port the kernel picks, so every
link is TLS 1.3 between authenticated party names as in a real deployment;
with ``insecure=True`` (required by a backend over gloo) the links are plain.
Each party is a child process handed its :class:`~mpc_pca.deploy.PartySpec`
object, the in-memory rows included (no command line, no file of rows):
a child of a fork server that imported the party code once
(:data:`PARTY_PRELOAD`), or, for a backend over gloo, a new interpreter
(torch and gloo are not fork-safe once initialised).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deploy.party import run_party
from mpc_pca.deploy.phase_lines import forward_phases, relog
from mpc_pca.deploy.spec import ArraySource, PartySpec
from mpc_pca.deployment import Deployment
from protocols.errors import InputValidationError
from protocols.runtime.exits import run_or_exit
from protocols.runtime.parties import host_introducer, local_links

if TYPE_CHECKING:  # the link model is a testing tool: imported only where a run is modelled
    from protocols.testing.link_model import LinkProfile

#: What the fork server imports once for every party of a run that is not over gloo:
#: a party forked from it starts without re-importing numpy, the deploy floor, the
#: protocols' deployments and the TLS transport (issue 15).
PARTY_PRELOAD = (
    "mpc_pca.deploy.party",
    "mpc_pca.deploy.local",
    "mpc_pca.data.inputs",
    "mpc_pca.data.columns",
    "mpc_pca.registry",
    "mpc_pca.pppca.deployment",
    "protocols.runtime.network",
    "protocols.runtime.parties",
    "protocols.transport.tls",
)


def start_party_server() -> None:
    """Start the fork server of the parties early, so that its imports overlap the caller's work."""
    from protocols.runtime.launcher import start_fork_server

    start_fork_server(PARTY_PRELOAD)


def child_environment() -> dict[str, str]:
    """Environment of launched parties: this package importable, gloo on loopback, 1 thread."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    lo = next((ifname for _, ifname in socket.if_nameindex() if ifname in ("lo", "lo0")), None)
    if lo is not None:
        env.setdefault("GLOO_SOCKET_IFNAME", lo)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def host_rendezvous(
    ranks: Mapping[str, int],
    workdir: Path,
    insecure: bool,
    gloo: bool,
    timeout: float,
    link_profile: LinkProfile | None = None,
) -> tuple[Any, int]:
    """Host the run's rendezvous on 127.0.0.1; return the object to keep alive and its port.

    Without ``insecure``, writes throw-away credentials for every party under ``workdir / "tls"``.
    With ``link_profile`` (not over gloo), the port returned is that of a
    :class:`~protocols.testing.wan_emulator.DelayForwarder` in front of the rendezvous,
    which puts one in front of every party's listener too; the object kept
    alive is then ``(introducer, forwarder)``: close both with :func:`close_rendezvous`.
    """
    if gloo:
        if link_profile is not None:
            raise InputValidationError(
                f"link_profile={link_profile!r} cannot be used over gloo: the emulated WAN links are the "
                "TLS transport's (gloo's own traffic, which insecure=True runs use, would not go through them)"
            )
        from protocols.runtime.launcher import host_store

        return host_store(len(ranks), timeout)
    introducer = host_introducer(
        ranks, workdir, insecure=insecure, timeout=timeout, link_profile=link_profile
    )
    if link_profile is None:
        return introducer, introducer.port
    from protocols.testing.wan_emulator import DelayForwarder

    forwarder = DelayForwarder(("127.0.0.1", introducer.port), link_profile)
    return (introducer, forwarder), forwarder.address[1]


def close_rendezvous(keep_alive: Any) -> None:
    """Close the emulated WAN links :func:`host_rendezvous` made with a ``link_profile`` (else nothing).

    Also closes what :func:`static_table` made (its listening sockets and forwarders).
    """
    if isinstance(keep_alive, StaticTable):
        keep_alive.close()
    elif isinstance(keep_alive, tuple):
        introducer, forwarder = keep_alive
        forwarder.close()
        introducer.close_forwarders()


def static_table(
    layout: Mapping[str, int], workdir: Path, insecure: bool, link_profile: LinkProfile | None = None
) -> tuple[StaticTable, StaticTable]:
    """Bind every party's listener and write the run's static address table (``launch_local(static_peers=True)``).

    Returns the object to close after the run (:func:`close_rendezvous`) twice,
    as :func:`host_rendezvous` returns its object and port.
    """
    table = StaticTable(layout, workdir, insecure, link_profile)
    return table, table


class StaticTable:
    """Listening sockets on 127.0.0.1 for every party, their credentials and the static table of them.

    Without ``insecure``, writes throw-away credentials for every party under
    ``workdir / "tls"``. With ``link_profile``, a
    :class:`~protocols.testing.wan_emulator.DelayForwarder` stands in front
    of each listener and the table holds the forwarders' addresses.
    """

    def __init__(
        self, layout: Mapping[str, int], workdir: Path, insecure: bool, link_profile: LinkProfile | None
    ) -> None:
        from protocols.transport.peers import PeerTable
        from protocols.transport.rendezvous import listen

        self.workdir, self.insecure = workdir, insecure
        if not insecure:
            from protocols.transport.certs import write_credentials

            write_credentials(list(layout), workdir / "tls", days=1)
        self.listeners: dict[str, socket.socket] = {}
        self.forwarders: list[Any] = []
        entries = []
        try:
            for name in sorted(layout, key=lambda n: layout[n]):
                sock = listen("127.0.0.1", 0)
                self.listeners[name] = sock
                address = ("127.0.0.1", sock.getsockname()[1])
                if link_profile is not None:
                    from protocols.testing.wan_emulator import DelayForwarder

                    forwarder = DelayForwarder(address, link_profile)
                    self.forwarders.append(forwarder)
                    address = forwarder.address
                entries.append((name, address))
        except BaseException:
            self.close()
            raise
        self.table = PeerTable(tuple(entries))

    def links(self, name: str, *, timeout: float, connect_timeout: float) -> Any:
        """Party ``name``'s :class:`~protocols.runtime.parties.LinkOptions`: the table and its own listener."""
        from protocols.runtime.parties import LinkOptions
        from protocols.transport.tls import Credentials

        return LinkOptions(
            "",
            None if self.insecure else Credentials.from_dir(self.workdir / "tls", name),
            self.insecure,
            timeout=timeout,
            connect_timeout=connect_timeout,
            peers=self.table,
            listener=self.listeners[name],
        )

    def close(self) -> None:
        """Close this process's copies of the listeners (the parties have their own) and the forwarders."""
        for forwarder in self.forwarders:
            forwarder.close()
        for sock in self.listeners.values():
            sock.close()


def _deployment(protocol: str, deployment: Deployment | None, *, threads: bool = False) -> Deployment:
    """The protocol object given, else the registry's (as threads, also one that does not deploy)."""
    from mpc_pca.registry import deployment as deployable
    from mpc_pca.registry import entry

    if deployment is not None:
        return deployment
    return entry(protocol) if threads else deployable(protocol)


def run_threads(
    protocol: str,
    parts: Sequence[NDArray[np.float64]],
    settings: Mapping[str, Any] | None = None,
    noise_seed: int | None = None,
    *,
    timeout: float = 120.0,
    feature_names: Sequence[str] | None = None,
    deployment: Deployment | None = None,
    link_profile: LinkProfile | None = None,
) -> dict[str, Any]:
    """Every party of a run as a thread of this process (:func:`mpc_pca.threads.run_protocol`), as JSON.

    Each party checks what a deployed party checks (its announcement and the
    agreed configuration), not the checks that need every part at once
    (:meth:`~mpc_pca.deployment.Deployment.preflight`, which the estimators and
    :func:`launch_local` make).

    Returns ``protocol``, the result party's JSON fields and ``report`` (every
    party's traffic): the JSON :func:`launch_local` returns for the same run.
    With ``link_profile``, every message between the threads takes the time
    a link of that RTT and uplink bandwidth would give it
    (:mod:`protocols.testing.link_model`; connection set-up is not modelled),
    and the result also has ``links``: the messages delivered and the run's
    message depth (the longest causal chain of messages).
    """
    from mpc_pca.threads import run_protocol

    deployment = _deployment(protocol, deployment, threads=True)
    links = None
    if link_profile is not None:
        from protocols.testing.link_model import ModelledLinks

        links = ModelledLinks(link_profile)
    arrays = [np.asarray(p, dtype=np.float64) for p in parts]
    run = run_protocol(
        deployment, arrays, settings, random_state=noise_seed, timeout=timeout, feature_names=feature_names,
        wrap_channel=None if links is None else links.wrap, preflight=False,
    )  # fmt: skip
    result = run.result(feature_names)
    if links is not None:
        result["links"] = {"delivered": links.delivered, "message_depth": links.depth}
    return result


def party_process(spec: PartySpec, verbosity: int = 0, deployment: Deployment | None = None) -> int:
    """Body of one launched party: run it; on failure end the process at once so that its links close."""
    level = logging.WARNING - 10 * verbosity
    logging.basicConfig(
        level=max(logging.DEBUG, min(logging.ERROR, level)), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
    )  # fmt: skip
    forward_phases(sys.stderr)  # the launcher's progress report (mpc_pca.deploy.phase_lines)
    run_or_exit(lambda: run_party(spec, deployment=deployment))
    return 0


def launch_local(
    protocol: str,
    parts: Sequence[NDArray[np.float64]],
    settings: Mapping[str, Any] | None = None,
    *,
    noise_seed: int | None = None,
    timeout: float = 600.0,
    connect_timeout: float = 60.0,
    insecure: bool = False,
    verbosity: int = 0,
    feature_names: Sequence[str] | None = None,
    deployment: Deployment | None = None,
    link_profile: LinkProfile | None = None,
    static_peers: bool = False,
) -> dict[str, Any]:
    """Run every party of a run as a process on this host; return the result party's result.

    The result has the result party's JSON fields (as :func:`run_threads`) and
    ``report`` with every party's traffic.

    With ``link_profile`` (:class:`protocols.testing.wan_emulator.LinkProfile`), every
    TCP connection of the run (party to party, party to rendezvous) goes
    through a user-space :class:`~protocols.testing.wan_emulator.DelayForwarder` in
    this process, in front of the accepting end: each link has the profile's
    round-trip time and bandwidth (a WAN emulated where the kernel has no
    ``netem``). Not over gloo (its traffic would bypass the forwarders).

    With ``static_peers``, no rendezvous: this process binds every party's
    listening socket on ``127.0.0.1`` (port 0), hands each party its own
    socket and writes a static address table of them
    (:mod:`protocols.transport.peers`, as a party's ``peers`` setting); with a
    ``link_profile`` the table holds the addresses of the forwarders in
    front of those sockets. Not over gloo.

    Raises
    ------
    InputValidationError
        Before any process starts, for whatever the in-process run would
        refuse, and for a ``link_profile`` over gloo.
    ProtocolError
        If any party failed; the message gives the first failure and how each
        failed party ended.
    """
    from mpc_pca.threads import announce
    from protocols.runtime.launcher import PythonCall, launch, raise_on_failure

    deployment = _deployment(protocol, deployment)
    full = deployment.settings(settings)
    gloo = deployment.runs_over_gloo(full)
    if gloo and static_peers:
        raise InputValidationError(
            "static_peers=True cannot be used with a backend over gloo: torch.distributed has its own "
            "rendezvous (a TCPStore), not the TLS transport's address table"
        )
    if gloo and link_profile is not None:
        raise InputValidationError(
            f"link_profile={link_profile!r} cannot be used with a backend over gloo: its own traffic would not "
            "go through the emulated WAN links (they forward the TLS transport's connections only)"
        )
    if not gloo:
        start_party_server()  # its imports overlap the checks and the credentials below
    elif not insecure:
        raise InputValidationError(
            "the crypten backend's own traffic runs over gloo, which cannot be wrapped in TLS; add insecure=True"
        )
    arrays = [np.asarray(p, dtype=np.float64) for p in parts]
    # The launcher holds every part, so before any process starts it refuses whatever
    # the in-process run would refuse.
    deployment.preflight(arrays, full)
    layout, data, _ = announce(deployment, arrays, full, feature_names)
    names = None if feature_names is None else tuple(feature_names)
    with tempfile.TemporaryDirectory(prefix="mpc-pca-run-") as tmp:
        workdir = Path(tmp)
        if static_peers:
            keep_alive, static = static_table(layout, workdir, insecure, link_profile)
        else:
            # The parties count connect_timeout from their own start, a few seconds later.
            keep_alive, port = host_rendezvous(
                layout, workdir, insecure, gloo, connect_timeout + 3, link_profile
            )
        outputs = {name: workdir / f"{name}.json" for name in layout}
        commands = {}
        for name in layout:
            if static_peers:
                links = static.links(name, timeout=timeout, connect_timeout=connect_timeout)
            else:
                links = local_links(
                    name, port, workdir, insecure=insecure, timeout=timeout, connect_timeout=connect_timeout
                )
            rows = ArraySource(data[name], names) if name in data else None
            spec = PartySpec(protocol, name, len(arrays), links, rows, full, outputs[name], noise_seed)
            commands[name] = PythonCall(
                party_process, (spec, verbosity, deployment), start_method="spawn" if gloo else "forkserver"
            )
        try:
            outcomes = launch(
                commands, timeout=timeout, env=child_environment(), workdir=workdir, preload=PARTY_PRELOAD,
                on_line=relog,  # the children's phases, logged again here (mpc_pca.deploy.phase_lines)
            )  # fmt: skip
        finally:
            close_rendezvous(keep_alive)
        raise_on_failure(outcomes, keep_alive if gloo else None)
        results = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    winner = deployment.result_party(layout)
    result = {key: value for key, value in results[winner].items() if key not in ("party", "rank", "report")}
    result["report"] = {name: results[name]["report"][name] for name in layout}
    return result


__all__ = [
    "PARTY_PRELOAD",
    "StaticTable",
    "child_environment",
    "close_rendezvous",
    "host_rendezvous",
    "launch_local",
    "party_process",
    "run_threads",
    "start_party_server",
    "static_table",
]
