"""PPPCA with every party in its own OS process: one party (``mpc-pca party``).

:func:`run_party` runs the *same* role functions as the in-process runtime
(:mod:`mpc_pca.pppca.protocol`) as one party, on any host; each provider
loads only its own data file. :mod:`mpc_pca.pppca.launch` starts every party
of a run on this host (``mpc-pca run ... --transport torch``).

Links are mutually authenticated TLS 1.3 (:mod:`protocols.runtime.network`)
unless ``insecure=True``; the crypten backend runs over gloo
(:mod:`protocols.transport.torch_store`) and therefore requires ``insecure``.

Rank layout for PPPCA with ``M`` providers (world size ``M + 2``):
``provider0 .. provider{M-1}`` are ranks ``0 .. M-1``, ``server`` is rank
``M``, ``consumer`` is rank ``M + 1``.

Before the protocol starts, the parties exchange their public parameters
(protocol, number of providers, ``k``, backend, fractional bits and, for
providers, the number of features and rows) over the authenticated links and
check that they agree, so a misconfigured party is reported by name instead
of surfacing as a malformed message later. The agreed settings also bound
the size of every message a party accepts (:func:`message_cap`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.components import check_reveal
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.protocol import (
    PPPCAConfig,
    PPPCAModel,
    consumer_role,
    provider_role,
    server_role,
)
from mpc_pca.pppca.scaling import agree_exponents, provider_exponents
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import SecureSumBackend, make_backend
from protocols.errors import InputValidationError
from protocols.transport.tls import Credentials

log = logging.getLogger("mpc_pca.party")

#: Protocols that can run with ``--transport torch``, with their default backend.
TORCH_PROTOCOLS = {"pppca-ss": "additive", "pppca-he": "paillier"}
ROLES = ("provider", "server", "consumer")


def pppca_ranks(n_parties: int) -> dict[str, int]:
    """Name-to-rank map of a PPPCA run with ``n_parties`` providers and a consumer."""
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or n_parties < 1:
        raise InputValidationError(f"the number of providers must be a positive integer, got {n_parties!r}")
    ranks = {name: i for i, name in enumerate(provider_names(n_parties))}
    ranks[SERVER] = n_parties
    ranks[CONSUMER] = n_parties + 1
    return ranks


def role_of(rank: int, world_size: int) -> str:
    """The role at ``rank`` in a PPPCA world of ``world_size`` (providers first, then server, consumer)."""
    if not 0 <= rank < world_size:
        raise InputValidationError(f"rank {rank} is out of range; it must be between 0 and {world_size - 1}")
    if rank < world_size - 2:
        return "provider"
    return SERVER if rank == world_size - 2 else CONSUMER


def party_name(role: str | None, rank: int, world_size: int) -> str:
    """The party name that ``role`` has at ``rank`` in a PPPCA world of ``world_size``.

    ``role=None`` derives the role from the rank; a given role must match it.
    """
    if world_size < 3:
        raise InputValidationError(
            f"world size {world_size} is too small; PPPCA needs at least 1 provider, a server and a "
            "consumer (world size = providers + 2)"
        )
    if not 0 <= rank < world_size:
        raise InputValidationError(f"rank {rank} is out of range; it must be between 0 and {world_size - 1}")
    ranks = pppca_ranks(world_size - 2)
    role = role_of(rank, world_size) if role is None else role
    if role == "provider":
        if rank >= world_size - 2:
            raise InputValidationError(
                f"providers take ranks 0 .. {world_size - 3} in a world of {world_size}; got rank {rank}"
            )
        return f"provider{rank}"
    if role in (SERVER, CONSUMER):
        if ranks[role] != rank:
            raise InputValidationError(
                f"the {role} runs at rank {ranks[role]} in a world of {world_size} "
                f"(providers 0 .. {world_size - 3}, server {world_size - 2}, consumer {world_size - 1}); "
                f"got rank {rank}"
            )
        return role
    raise InputValidationError(f"unknown role {role!r}; choose one of {list(ROLES)}")


def model_result(model: PPPCAModel, backend: str) -> dict[str, Any]:
    """The server's output as the JSON fields ``mpc-pca run`` writes."""
    return {"backend": backend, **model.result_fields()}


def _agree(views: dict[str, dict[str, Any]], n_parties: int) -> int:
    """Check that every party published the same settings; return the number of features."""
    shared = ("protocol", "n_parties", "n_components", "backend", "frac_bits", "key_bits", "reveal", "standardize")
    for key in shared:
        values = {name: view.get(key) for name, view in views.items()}
        if len(set(map(json.dumps, values.values()))) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")
    rows = {name: views[name].get("n_rows") for name in provider_names(n_parties)}
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in rows.values()):
        raise InputValidationError(f"every provider must announce a positive number of rows: {rows}")
    widths = {name: views[name].get("n_features") for name in provider_names(n_parties)}
    if len(set(widths.values())) != 1 or not isinstance(next(iter(widths.values())), int):
        raise InputValidationError(f"the providers' data sets have different numbers of features: {widths}")
    return next(iter(widths.values()))


def _agree_columns(views: dict[str, dict[str, Any]], n_parties: int) -> tuple[int, ...]:
    """Check that the providers' ordered column names match (by hash); agree the column exponents."""
    providers = provider_names(n_parties)
    hashes = {name: views[name].get("columns_hash") for name in providers}
    if len(set(hashes.values())) != 1:
        raise InputValidationError(
            "the providers' ordered column names differ (SHA-256 of the names, per provider): "
            f"{hashes}; give every provider the same columns (--columns NAMES selects and orders them)"
        )
    return agree_exponents([views[name].get("column_exponents", []) for name in providers])


def agreed_config(views: dict[str, dict[str, Any]], n_parties: int, n_components: int) -> PPPCAConfig:
    """The run's :class:`PPPCAConfig` from the settings every party published (checked to match)."""
    n_features = _agree(views, n_parties)
    k = check_n_components(n_components, n_features)
    view = next(iter(views.values()))
    reveal = check_reveal(view.get("reveal", "covariance"))
    exponents = _agree_columns(views, n_parties)
    if reveal == "components":  # no column scaling in that mode (see mpc_pca.pppca.driver.preflight)
        exponents = (0,) * n_features
    return PPPCAConfig(n_parties, n_features, k, True, exponents, bool(view.get("standardize")), reveal)


def message_cap(views: Mapping[str, Mapping[str, Any]], n_features: int) -> int:
    """Largest message (bytes) any party of this run may send, from the agreed settings.

    The largest payloads are the Gram matrix's secure sum (at most ``d^2 + d + 1``
    ring elements, or that many Paillier ciphertexts of ``2 * key_bits`` bits
    when nothing is packed), ``T`` (``d x k`` floats) and a provider's projected
    rows (``n_i x k`` floats); 1 MiB covers headers and key exchanges.
    """
    view = next(iter(views.values()))
    d, k = n_features, int(view["n_components"])
    per_entry = 8
    if view.get("backend") == "paillier":
        per_entry = 2 * int(view.get("key_bits") or 3072) // 8 + 8
    rows = max(int(v["n_rows"]) for v in views.values() if "n_rows" in v)
    return (d * d + d + 1) * per_entry + (d + rows) * k * 8 + (1 << 20)




def run_party(
    *,
    rank: int,
    world_size: int,
    master: str,
    role: str | None = None,
    data: NDArray[np.float64] | None = None,
    n_components: int = 2,
    backend: str = "additive",
    frac_bits: int | None = None,
    key_bits: int | None = None,
    timeout: float = 600.0,
    connect_timeout: float = 60.0,
    host_rendezvous: bool | None = None,
    protocol: str = "pppca-ss",
    backend_factory: Callable[[], SecureSumBackend] | None = None,
    credentials: Credentials | None = None,
    insecure: bool = False,
    listen_host: str | None = None,
    reveal: str = "covariance",
    columns_hash: str | None = None,
    standardize: bool = False,
) -> dict[str, Any]:
    """Run one party of a PPPCA run in this process; return its JSON-ready output.

    Parameters
    ----------
    rank, world_size : int
        This party's rank and the number of parties (providers + 2).
    master : str
        ``ADDR:PORT`` of the rendezvous (hosted by rank 0 unless ``host_rendezvous=False``).
    role : {"provider", "server", "consumer"}, optional
        Derived from the rank when omitted; a role that does not match the rank is an error.
    data : ndarray of shape (n_i, d), optional
        The provider's own rows; required for providers, refused for the others.
    n_components, backend, frac_bits, key_bits
        Protocol settings; every party must pass the same values
        (``key_bits``: Paillier modulus size, paillier backend only).
    timeout : float
        Phase deadline: seconds a party waits while no party of the run makes progress.
    connect_timeout : float
        Seconds for the rendezvous and for connecting the links.
    backend_factory : callable, optional
        Builds this party's backend object instead of ``make_backend(backend)``
        (e.g. a custom subclass); ``backend`` is still the name the parties
        agree on.
    credentials : Credentials, optional
        CA, certificate and key of this party: every link is TLS 1.3 with both
        ends authenticated by party name. Required unless ``insecure``.
    insecure : bool
        Plain TCP (or gloo for crypten): nothing encrypted or authenticated.
    listen_host : str, optional
        Interface of this party's listening socket (default: the one routing to the master).
    reveal : {"covariance", "components"}, default="covariance"
        What the server learns (see :mod:`mpc_pca.pppca.components`); every
        party must pass the same value.
    columns_hash : str, optional
        Providers: hash of the ordered column names of their data
        (:func:`mpc_pca.data.columns.names_hash`); every provider must publish
        the same one.
    standardize : bool, default=False
        Standardize the columns (every party must agree).

    Returns
    -------
    dict
        ``party``, ``rank``, ``report`` (``{party: traffic}``) and the role's
        output: the model for the server, the projected rows for the consumer,
        the number of rows for a provider.
    """
    if protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {protocol!r} cannot run as processes yet; choose one of {list(TORCH_PROTOCOLS)}"
        )
    reveal = check_reveal(reveal)
    if reveal == "components" and standardize:
        raise InputValidationError(
            "standardize=True needs the pooled variances, which reveal='components' keeps secret"
        )
    name = party_name(role, rank, world_size)
    role = role_of(rank, world_size)
    if backend == "crypten" and not insecure:
        raise InputValidationError(
            "the crypten backend's own traffic runs over gloo, which cannot be wrapped in TLS; "
            "it needs --insecure (see the README's trust model)"
        )
    if credentials is None and not insecure:
        raise InputValidationError(
            f"{name} has no TLS credentials: pass --tls-dir DIR (or --ca/--cert/--key), or --insecure to "
            "run with links that are neither encrypted nor authenticated"
        )
    if insecure:
        log.warning("%s: --insecure: the links are neither encrypted nor authenticated", name)
    n_parties = world_size - 2
    backend_impl = (
        make_backend(backend, frac_bits=frac_bits, key_bits=key_bits)
        if backend_factory is None
        else backend_factory()
    )
    public: dict[str, Any] = {
        "protocol": protocol,
        "n_parties": n_parties,
        "n_components": n_components,
        "backend": backend,
        "frac_bits": backend_impl.codec.frac_bits,
        "key_bits": key_bits,
        "reveal": reveal,
        "standardize": bool(standardize),
    }
    stats = None
    if role == "provider":
        if data is None:
            raise InputValidationError(f"{name} needs its data (--data FILE)")
        (data,) = check_parts([data], min_total_rows=1, check_values=False)
        stats = LocalStatistics.of(data)
        check_statistics_finite(data, (stats.column_sums, stats.scatter_triangle), rank)
        public["n_features"] = int(data.shape[1])
        public["n_rows"] = int(data.shape[0])
        public["columns_hash"] = columns_hash
        public["column_exponents"] = provider_exponents(data).tolist()
    elif data is not None:
        raise InputValidationError(f"the {role} holds no data; do not pass --data to it")

    def make_role(config: PPPCAConfig) -> Callable[[Any], Any]:
        if role == "provider":
            return lambda party: provider_role(party, data, config, backend_impl, stats)
        if role == SERVER:
            return lambda party: server_role(party, config, backend_impl)
        return lambda party: consumer_role(party, config)

    ranks = pppca_ranks(n_parties)
    if backend == "crypten":
        output, report = _run_over_gloo(name, ranks, master, public, make_role, timeout, connect_timeout, host_rendezvous)
    else:
        from protocols.runtime import network as party_runner

        channel = party_runner.open_links(
            name, ranks, master, credentials=None if insecure else credentials, listen_host=listen_host,
            timeout=timeout, connect_timeout=connect_timeout, host_rendezvous=host_rendezvous,
        )  # fmt: skip
        try:
            views = party_runner.agree(channel, public, connect_timeout)
            config = agreed_config(views, n_parties, n_components)
            channel.set_message_cap(message_cap(views, config.n_features))
        except BaseException as exc:
            party_runner.fail(channel, exc)
            raise
        output, report = party_runner.run_role(channel, make_role(config))

    result: dict[str, Any] = {"party": name, "rank": rank, "protocol": protocol}
    if role == SERVER:
        result.update(model_result(output, backend))
    elif role == CONSUMER:
        result["projection"] = np.asarray(output).tolist()
    else:
        result["n_rows"] = int(data.shape[0])
    result["report"] = {name: report.as_dict()}
    return result


def _run_over_gloo(
    name: str,
    ranks: dict[str, int],
    master: str,
    public: dict[str, Any],
    make_role: Callable[[PPPCAConfig], Callable[[Any], Any]],
    timeout: float,
    connect_timeout: float,
    host_store: bool | None,
) -> tuple[Any, Any]:
    """The crypten backend's path: TCPStore rendezvous and gloo links (``--insecure`` only)."""
    from protocols.backends.crypten_compat import import_crypten
    from protocols.runtime import gloo
    from protocols.transport import torch_store

    import_crypten()  # import before the clock starts, and fail before joining if missing
    n_parties = public["n_parties"]
    rdv = torch_store.connect(
        name, ranks, master, connect_timeout=connect_timeout, timeout=timeout, host_store=host_store
    )
    try:
        config = agreed_config(rdv.exchange_public(public, connect_timeout), n_parties, public["n_components"])
    except BaseException as exc:
        rdv.record_failure(f"party {name!r} failed: {type(exc).__name__}: {exc}")
        raise
    output, report = gloo.run_role(rdv, make_role(config), timeout=timeout)
    gloo.shutdown(rdv, timeout=timeout)
    return output, report
