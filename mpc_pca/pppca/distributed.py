"""PCA protocols with every party in its own OS process, over torch.distributed.

Two entry points, both running the *same* role functions as the in-process
runtime (:mod:`mpc_pca.pppca`):

* :func:`run_party` - one party, on any host (``mpc-pca party ...``). Each
  provider loads only its own data file.
* :func:`launch_local` - every party of a run as a process on this host
  (``mpc-pca run ... --transport torch``): the rows are split as the
  in-process run splits them, each provider's rows are written to its own
  temporary CSV file (mode 0600, exact float64 round trip), and the server's
  result is merged with every party's traffic report.

Rank layout for PPPCA with ``M`` providers (world size ``M + 2``):
``provider0 .. provider{M-1}`` are ranks ``0 .. M-1``, ``server`` is rank
``M``, ``consumer`` is rank ``M + 1``.

Before the protocol starts, the parties publish their public parameters
(protocol, number of providers, ``k``, backend, fractional bits and, for
providers, the number of features) through the rendezvous store and check
that they agree, so a misconfigured party is reported by name instead of
surfacing as a malformed message later.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.protocol import (
    PPPCAConfig,
    PPPCAModel,
    consumer_role,
    preflight,
    provider_role,
    server_role,
)
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import SecureSumBackend, make_backend
from protocols.errors import InputValidationError

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


def party_name(role: str, rank: int, world_size: int) -> str:
    """The party name that ``role`` has at ``rank`` in a PPPCA world of ``world_size``."""
    if world_size < 3:
        raise InputValidationError(
            f"world size {world_size} is too small; PPPCA needs at least 1 provider, a server and a "
            "consumer (world size = providers + 2)"
        )
    if not 0 <= rank < world_size:
        raise InputValidationError(f"rank {rank} is out of range; it must be between 0 and {world_size - 1}")
    ranks = pppca_ranks(world_size - 2)
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
    shared = ("protocol", "n_parties", "n_components", "backend", "frac_bits", "key_bits")
    for key in shared:
        values = {name: view.get(key) for name, view in views.items()}
        if len(set(map(json.dumps, values.values()))) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")
    widths = {name: views[name].get("n_features") for name in provider_names(n_parties)}
    if len(set(widths.values())) != 1 or not isinstance(next(iter(widths.values())), int):
        raise InputValidationError(f"the providers' data sets have different numbers of features: {widths}")
    return next(iter(widths.values()))


def run_party(
    *,
    role: str,
    rank: int,
    world_size: int,
    master: str,
    data: NDArray[np.float64] | None = None,
    n_components: int = 2,
    backend: str = "additive",
    frac_bits: int | None = None,
    key_bits: int | None = None,
    timeout: float = 120.0,
    connect_timeout: float = 60.0,
    host_store: bool | None = None,
    protocol: str = "pppca-ss",
    backend_factory: Callable[[], SecureSumBackend] | None = None,
) -> dict[str, Any]:
    """Run one party of a PPPCA run in this process; return its JSON-ready output.

    Parameters
    ----------
    role : {"provider", "server", "consumer"}
    rank, world_size : int
        This party's rank and the number of parties (providers + 2).
    master : str
        ``ADDR:PORT`` of the rendezvous store (hosted by rank 0 unless ``host_store=False``).
    data : ndarray of shape (n_i, d), optional
        The provider's own rows; required for providers, refused for the others.
    n_components, backend, frac_bits, key_bits
        Protocol settings; every party must pass the same values
        (``key_bits``: Paillier modulus size, paillier backend only).
    timeout, connect_timeout : float
        Receive timeout and rendezvous timeout, in seconds.
    backend_factory : callable, optional
        Builds this party's backend object instead of ``make_backend(backend)``
        (e.g. a custom subclass); ``backend`` is still the name the parties
        agree on.

    Returns
    -------
    dict
        ``party``, ``rank``, ``report`` (``{party: traffic}``) and the role's
        output: the model for the server, the projected rows for the consumer,
        the number of rows for a provider.
    """
    from protocols.transport import torch_store as torch_dist

    if protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {protocol!r} cannot run as processes yet; choose one of {list(TORCH_PROTOCOLS)}"
        )
    name = party_name(role, rank, world_size)
    n_parties = world_size - 2
    backend_impl = (
        make_backend(backend, frac_bits=frac_bits, key_bits=key_bits)
        if backend_factory is None
        else backend_factory()
    )
    if backend == "crypten":
        from protocols.backends.crypten_compat import import_crypten

        import_crypten()  # import before the clock starts, and fail before joining if missing
    public: dict[str, Any] = {
        "protocol": protocol,
        "n_parties": n_parties,
        "n_components": n_components,
        "backend": backend,
        "frac_bits": backend_impl.codec.frac_bits,
        "key_bits": key_bits,
    }
    stats = None
    if role == "provider":
        if data is None:
            raise InputValidationError(f"{name} needs its data (--data FILE)")
        (data,) = check_parts([data], min_total_rows=1, check_values=False)
        stats = LocalStatistics.of(data)
        check_statistics_finite(data, (stats.column_sums, stats.scatter), rank)
        public["n_features"] = int(data.shape[1])
    elif data is not None:
        raise InputValidationError(f"the {role} holds no data; do not pass --data to it")

    rdv = torch_dist.connect(
        name,
        pppca_ranks(n_parties),
        master,
        connect_timeout=connect_timeout,
        timeout=timeout,
        host_store=host_store,
    )
    try:
        n_features = _agree(rdv.exchange_public(public, connect_timeout), n_parties)
        k = check_n_components(n_components, n_features)
        config = PPPCAConfig(n_parties, n_features, k, with_consumer=True)
    except BaseException as exc:
        rdv.record_failure(f"party {name!r} failed: {type(exc).__name__}: {exc}")
        raise
    if role == "provider":
        output, report = torch_dist.run_role(
            rdv, lambda party: provider_role(party, data, config, backend_impl, stats), timeout=timeout
        )
    elif role == SERVER:
        output, report = torch_dist.run_role(
            rdv, lambda party: server_role(party, config, backend_impl), timeout=timeout
        )
    else:
        output, report = torch_dist.run_role(rdv, lambda party: consumer_role(party, config), timeout=timeout)
    torch_dist.shutdown(rdv, timeout=timeout)

    result: dict[str, Any] = {"party": name, "rank": rank, "protocol": protocol}
    if role == SERVER:
        result.update(model_result(output, backend))
    elif role == CONSUMER:
        result["projection"] = np.asarray(output).tolist()
    else:
        result["n_rows"] = int(data.shape[0])
    result["report"] = {name: report.as_dict()}
    return result


def child_environment() -> dict[str, str]:
    """Environment of launched parties: this package importable, gloo on loopback, 1 thread."""
    from protocols.transport.torch_store import loopback_interface

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    lo = loopback_interface()
    if lo is not None:
        env.setdefault("GLOO_SOCKET_IFNAME", lo)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def launch_local(
    parts: Sequence[NDArray[np.float64]],
    *,
    n_components: int = 2,
    backend: str = "additive",
    frac_bits: int | None = None,
    key_bits: int | None = None,
    timeout: float = 120.0,
    connect_timeout: float = 60.0,
    protocol: str = "pppca-ss",
) -> dict[str, Any]:
    """Run every party of a PPPCA run as a process on this host; return the server's result.

    The result has the keys of the in-process ``mpc-pca run`` result produced by
    the protocol runner (``backend``, ``components``, ``explained_variance``,
    ``explained_variance_ratio``, ``mean``, ``n_samples``) and ``report`` with
    every party's traffic.

    Raises
    ------
    ProtocolError
        If any party failed; the message gives the first recorded failure and
        how each failed party ended.
    """
    from protocols.transport.launcher import host_store, launch, raise_on_failure

    if protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {protocol!r} cannot run as processes yet; choose one of {list(TORCH_PROTOCOLS)}"
        )
    # The launcher holds every part, so before any process starts it refuses whatever
    # the in-process run would refuse (repeating the providers' local statistics once).
    backend_impl = make_backend(backend, frac_bits=frac_bits, key_bits=key_bits)
    arrays, _, _ = preflight(list(parts), n_components, backend_impl)
    ranks = pppca_ranks(len(arrays))
    world = len(ranks)
    store, port = host_store(world, connect_timeout)
    with tempfile.TemporaryDirectory(prefix="mpc-pca-run-") as tmp:
        workdir = Path(tmp)
        outputs = {name: workdir / f"{name}.json" for name in ranks}
        commands = {}
        for name, rank in ranks.items():
            role = "provider" if name.startswith("provider") else name
            command = [
                sys.executable, "-m", "mpc_pca.cli", "party",
                "--protocol", protocol, "--role", role, "--rank", str(rank),
                "--world-size", str(world), "--master", f"127.0.0.1:{port}",
                "--n-components", str(n_components), "--backend", backend,
                "--timeout", str(timeout), "--connect-timeout", str(connect_timeout),
                "--external-store", "--output", str(outputs[name]),
            ]  # fmt: skip
            if frac_bits is not None:
                command += ["--frac-bits", str(frac_bits)]
            if key_bits is not None:
                command += ["--key-bits", str(key_bits)]
            if role == "provider":
                path = workdir / f"{name}.csv"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as handle:
                    np.savetxt(handle, arrays[rank], fmt="%.17g", delimiter=",")
                command += ["--data", str(path)]
            commands[name] = command
        outcomes = launch(commands, timeout=timeout, env=child_environment(), workdir=workdir)
        raise_on_failure(outcomes, store)
        results = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    result = {key: value for key, value in results[SERVER].items() if key not in ("party", "rank", "report")}
    result["report"] = {name: results[name]["report"][name] for name in ranks}
    return result
