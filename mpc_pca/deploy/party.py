"""One party of any registered protocol, in this process, from a :class:`PartySpec`.

The steps are the same for every protocol (the protocol-specific half is its
:class:`~mpc_pca.deployment.Deployment`): load this party's rows, compute its
public announcement, open the authenticated links
(:mod:`protocols.runtime.network`), exchange the announcements, check the
floor's own keys and let the deployment build the run's configuration, bound
every message by the deployment's cap, run the role, and turn its output into
JSON fields. A failure at any step after the links are up is sent to every
peer before the exception is re-raised.

The floor adds three keys to every announcement: ``protocol``,
``n_providers`` and, for a data holder, ``columns`` (its ordered column
names, ``None`` when the rows have none). Every party must agree on the first
two (:mod:`mpc_pca.floor` checks them). The column names are
agreed by name (:func:`~mpc_pca.floor.agree_columns`): the first
holder's order is the reference, a holder whose names are a permutation of it
reorders its own columns to that order (:func:`align_views`; the per-column
values it announced, :attr:`~mpc_pca.deployment.Deployment.column_keys`, are
read in that order by every party), and different name sets are refused with
the counts and both lists before any data leaves a party. The names are public to
every party of the run (the server's model carries them as
``feature_names``, as does every other result that holds a model:
:func:`with_feature_names`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mpc_pca.deploy.spec import FileSource, PartySpec, load_rows
from mpc_pca.deployment import Deployment, PublicSettings, Role
from mpc_pca.deployment_kit import AnnouncementError
from mpc_pca.files import write_atomic
from mpc_pca.floor import (
    agree_columns,
    align_views,
    check_floor_views,
    check_own_announcement,
    floor_public,
    with_feature_names,
)
from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime.runner import PartyReport
from protocols.transport.ranks import check_world_size

log = logging.getLogger("mpc_pca.party")

#: ``build(views) -> (config, role)``: what a party does once it has every announcement.
Build = Callable[[Mapping[str, PublicSettings]], tuple[Any, Role]]


def reorder_rows(data: Any, order: list[int] | None) -> Any:
    """A holder's rows with its columns in the agreed order (``data`` itself when already in it)."""
    if order is None or data is None:
        return data
    from mpc_pca.pppca.chunked import ChunkedPart, PermutedPart

    if isinstance(data, ChunkedPart):
        return PermutedPart(data, order)
    return np.ascontiguousarray(np.asarray(data)[:, order])


def resolve_party(deployment: Deployment, role: str | None, rank: int, world_size: int) -> tuple[str, int]:
    """The party name at ``rank`` of a world of ``world_size``, and the number of providers.

    ``role`` (optional) must match the name at that rank: either the name
    itself or its kind (``"provider"`` for ``"provider2"``).

    Raises
    ------
    InputValidationError
        If no layout of this protocol has ``world_size`` parties, the rank is
        out of range, or the role does not match the rank.
    """
    check_world_size(world_size)
    # A layout grows with its number of providers: bisect for the one of world_size parties
    # (O(W log W), where trying every count was O(W^2): 8 s at W = 4096).
    low, high = 1, world_size
    while low < high:
        middle = (low + high) // 2
        if len(deployment.layout(middle)) < world_size:
            low = middle + 1
        else:
            high = middle
    n = low
    layout = deployment.layout(n)
    if len(layout) != world_size:
        smallest = len(deployment.layout(1))
        raise InputValidationError(
            f"world size {world_size} is too small; {deployment.name} needs at least {smallest} parties "
            f"(one provider: {list(deployment.layout(1))})"
        )
    if not 0 <= rank < world_size:
        raise InputValidationError(f"rank {rank} is out of range; it must be between 0 and {world_size - 1}")
    name = next(party for party, r in layout.items() if r == rank)
    if role is not None and role not in (name, re.sub(r"\d+$", "", name)):
        if role in layout:
            raise InputValidationError(
                f"the {role} runs at rank {layout[role]} in a world of {world_size} ({layout}); got rank {rank}"
            )
        holders = deployment.data_holders(n)
        kinds = {re.sub(r"\d+$", "", h) for h in holders}
        if role in kinds:
            raise InputValidationError(
                f"{role}s take ranks 0 .. {len(holders) - 1} in a world of {world_size}; got rank {rank}"
            )
        raise InputValidationError(f"unknown role {role!r}; choose one of {sorted(kinds | set(layout))}")
    return name, n


class Builder:
    """``build(views) -> (config, role)`` of one party; remembers the column names the holders agreed on.

    Returned by :func:`prepare`; :attr:`feature_names` is set once it has been called.
    """

    def __init__(self, build: Build) -> None:
        self._build = build
        self.feature_names: tuple[str, ...] | None = None

    def __call__(self, views: Mapping[str, PublicSettings]) -> tuple[Any, Role]:
        return self._build(views)


def prepare(
    spec: PartySpec, deployment: Deployment
) -> tuple[dict[str, int], dict[str, Any], PublicSettings, Builder]:
    """Everything a party checks and computes before it sends anything.

    Returns the layout, the settings (defaults filled in), this party's
    announcement and the function that builds the configuration and the role
    from every announcement.
    """
    settings = deployment.settings(spec.settings)  # the one fill-in (Deployment.settings)
    layout = deployment.layout(spec.n_providers)
    if spec.party not in layout:
        raise InputValidationError(
            f"{spec.protocol} has no party {spec.party!r}; its parties are {list(layout)}"
        )
    holders = tuple(deployment.data_holders(spec.n_providers))
    holder = spec.party in holders
    stream = holder and deployment.streams_rows
    data_source = spec.data
    if isinstance(data_source, FileSource) and not stream and data_source.chunk_rows:
        log.warning(
            "%s: %s reads its whole table into memory (chunk_rows applies to the providers of "
            "pppca-ss and pppca-he)", spec.party, spec.protocol,
        )  # fmt: skip
    try:
        rows = load_rows(data_source, stream=stream)
        for note in () if rows is None else rows.notes:
            log.warning("%s: %s", spec.party, note)
        if rows is not None and not holder:
            raise InputValidationError(f"the {spec.party} holds no data; give it no data")
        # an array, or a ChunkedPart only for a deployment that streams_rows
        data: Any = None if rows is None else rows.values
        public = {
            **floor_public(spec.protocol, spec.n_providers, holder, None if rows is None else rows.names),
            **deployment.public(spec.party, data, settings),
        }
        check_own_announcement(spec.party, public)
    except MemoryError as exc:  # numpy's, and pyarrow's ArrowMemoryError
        hint = (
            "read it in chunks (chunk_rows=N, not 0)"
            if stream
            else f"{spec.protocol} needs its whole table in memory"
        )
        raise InputValidationError(
            f"the {spec.party}'s rows do not fit in this process's memory ({type(exc).__name__}: {exc}); "
            f"{hint}"
        ) from exc

    def build(views: Mapping[str, PublicSettings]) -> tuple[Any, Role]:
        check_floor_views(views, holders)
        reference, orders = agree_columns(views, holders)
        builder.feature_names = reference
        if orders.get(spec.party) is not None:
            log.warning(
                "%s: columns reordered by name to match %s's order (its order was %s)",
                spec.party, holders[0], list(rows.names) if rows is not None and rows.names else "?",
            )  # fmt: skip
        aligned = align_views(views, reference, orders, deployment.column_keys)
        config = deployment.configure(aligned, spec.n_providers)
        rng = deployment.generator(spec.party, layout, spec.noise_seed)
        own = reorder_rows(data, orders.get(spec.party))
        return config, deployment.role(spec.party, config, own, rng)

    builder = Builder(build)
    return layout, settings, public, builder


def run_party(spec: PartySpec, *, deployment: Deployment | None = None) -> dict[str, Any]:
    """Run one party of ``spec.protocol`` in this process; return its JSON-ready result.

    Parameters
    ----------
    spec : PartySpec
        Protocol, party name, number of providers, data, settings, links.
    deployment : Deployment, optional
        Used instead of the registry's (e.g. one with a custom backend).

    Returns
    -------
    dict
        ``party``, ``rank``, ``protocol``, the deployment's result fields of
        this party, and ``report`` (``{party: traffic}``).

    Raises
    ------
    InputValidationError
        Before anything is sent, for invalid settings, data or links.
    ProtocolError
        If this or another party failed (the message names the root cause).
    """
    from mpc_pca.registry import deployment as registered

    deployment = registered(spec.protocol) if deployment is None else deployment
    gloo = deployment.runs_over_gloo(deployment.settings(spec.settings))
    if gloo and not spec.links.insecure:
        raise InputValidationError(
            "the crypten backend's own traffic runs over gloo, which cannot be wrapped in TLS; "
            "it needs insecure=True (see the README's trust model)"
        )
    if gloo:
        _refuse_tls_only_link_options(spec.links)
    layout, _settings, public, build = prepare(spec, deployment)
    report: PartyReport | SetupReport
    if gloo:
        config, output, report = _run_over_gloo(spec, layout, public, build)
    else:
        config, output, report = _run_over_tls(spec, deployment, layout, public, build)
    result: dict[str, Any] = {"party": spec.party, "rank": layout[spec.party], "protocol": spec.protocol}
    result.update(with_feature_names(deployment.result(spec.party, config, output), build.feature_names))
    result["report"] = {spec.party: report.as_dict()}
    if spec.output is not None:
        write_atomic(spec.output, json.dumps(result, indent=2, default=_json_default))
    return result


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _build_from_peers(me: str, build: Build, views: Mapping[str, PublicSettings]) -> tuple[Any, Role]:
    """``build(views)``; a peer's announcement refused by its schema is a :class:`ProtocolError`.

    No honest party announces a value of the wrong type or range (each checks
    its own settings before it sends them), so such an announcement is a
    failure of the run caused by its sender, not an input error of this
    party (the process exits with the protocol-failure status). A
    disagreement between well-formed announcements stays an
    :class:`InputValidationError`: honest parties given different options
    disagree.
    """
    try:
        return build(views)
    except AnnouncementError as exc:
        if exc.sender == me:
            raise
        raise ProtocolError(str(exc)) from exc


def _run_over_tls(
    spec: PartySpec, deployment: Deployment, layout: dict[str, int], public: PublicSettings, build: Build
) -> tuple[Any, Any, PartyReport | SetupReport]:
    from protocols.runtime.network import agree, fail, run_role
    from protocols.runtime.parties import connect

    start = time.monotonic()
    channel = connect(spec.party, layout, spec.links, announce=public)  # the announcement rides with the keys
    linked = time.monotonic()
    try:
        views = agree(channel, public, spec.links.connect_timeout)
        config, role = _build_from_peers(spec.party, build, views)
        channel.set_message_cap(deployment.message_cap(config))
    except BaseException as exc:
        fail(channel, exc)
        raise
    agreed = time.monotonic()
    output, report = run_role(channel, role)
    return config, output, SetupReport(report, linked - start, agreed - start)


class SetupReport:
    """A party's :class:`~protocols.runtime.runner.PartyReport` and how long its set-up took.

    ``as_dict()`` adds ``setup`` to the traffic report: ``links_seconds``
    (joining the rendezvous and connecting every link) and ``agreed_seconds``
    (then agreeing the announcements too), both counted from the moment this
    party started to connect. They are what a WAN's round trips lengthen
    before the protocol's first message (see ``docs/explanation/links.md``,
    *Set-up in round trips*).
    """

    def __init__(self, report: PartyReport, links_seconds: float, agreed_seconds: float) -> None:
        self.report = report
        self.links_seconds = links_seconds
        self.agreed_seconds = agreed_seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.report.as_dict(),
            "setup": {"links_seconds": self.links_seconds, "agreed_seconds": self.agreed_seconds},
        }


def _refuse_tls_only_link_options(links: Any) -> None:
    """The gloo path has its own TCPStore rendezvous and links: refuse options it would silently ignore."""
    given = [
        f"{name}={_shown(value)}"
        for name, value in (
            ("listen", links.listen),
            ("advertise", links.advertise),
            ("join_window", links.join_window),
            ("relay", links.relay),
            ("peers", links.peers),
        )
        if value is not None
    ]
    if given:
        raise InputValidationError(
            f"{', '.join(given)} apply to the TLS links, not to the crypten backend's gloo links "
            "(torch.distributed picks its own ports and start-up deadline); drop them or use another backend"
        )


def _shown(value: Any) -> str:
    """A link setting's value as ``name=VALUE`` shows it: ``HOST:PORT``, seconds, or the table's size."""
    if isinstance(value, tuple) and len(value) == 2:
        host, port = value
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    if isinstance(value, float):
        return f"{value:g}"
    if hasattr(value, "parties"):
        return f"<a table of {len(value.parties)} parties>"
    return str(value)


def _run_over_gloo(
    spec: PartySpec, layout: dict[str, int], public: PublicSettings, build: Build
) -> tuple[Any, Any, PartyReport]:
    """CrypTen's path: TCPStore rendezvous and gloo links (``insecure`` only)."""
    from protocols.backends.crypten_compat import import_crypten
    from protocols.runtime import gloo
    from protocols.transport import torch_store

    import_crypten()  # import before the clock starts, and fail before joining if missing
    links = spec.links
    rdv = torch_store.connect(
        spec.party, layout, links.master, connect_timeout=links.connect_timeout, timeout=links.timeout,
        host_store=links.host_rendezvous,
    )  # fmt: skip
    try:
        config, role = _build_from_peers(
            spec.party, build, rdv.exchange_public(public, links.connect_timeout)
        )
    except BaseException as exc:
        rdv.record_failure(f"party {spec.party!r} failed: {type(exc).__name__}: {exc}")
        raise
    output, report = gloo.run_role(rdv, role, timeout=links.timeout)
    gloo.shutdown(rdv, timeout=links.timeout)
    return config, output, report


__all__ = [
    "prepare",
    "reorder_rows",
    "resolve_party",
    "run_party",
]
