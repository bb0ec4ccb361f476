"""Every party of a PPPCA run as a process on this host (``mpc-pca run ... --transport torch``).

The rows are split as the in-process run splits them, each provider's rows
are written to its own temporary CSV file (mode 0600, exact float64 round
trip), and the server's result is merged with every party's traffic report.

The launcher makes throw-away credentials for the run (a CA and one
certificate per party, in the run's temporary directory, deleted afterwards)
and hosts the rendezvous on ``127.0.0.1`` at a port the kernel picks, so every
link is TLS 1.3 between authenticated party names as in a real deployment.
With ``insecure=True`` (required by the crypten backend) the links are plain.

Start-up: except with CrypTen, the parties are not new interpreters but
children of a fork server that imported the party code once
(:class:`protocols.runtime.launcher.PythonEntry`, :data:`PARTY_PRELOAD`), so a
run pays the imports once instead of once per party
(``python -m benchmarks.bench_startup``). CrypTen parties stay separate
interpreters: torch and gloo are not fork-safe once initialised.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.distributed import TORCH_PROTOCOLS, pppca_ranks
from mpc_pca.pppca.driver import preflight
from mpc_pca.roles import SERVER
from protocols.backends import make_backend
from protocols.errors import InputValidationError

#: What the fork server imports once for every party of a non-CrypTen run: a party
#: forked from it starts without re-importing numpy, pandas, the command line and
#: the TLS transport (issue 15).
PARTY_PRELOAD = (
    "mpc_pca.cli.main",
    "mpc_pca.data.inputs",
    "mpc_pca.data.columns",
    "mpc_pca.pppca.distributed",
    "protocols.runtime.network",
    "protocols.transport.tls",
)


def start_party_server() -> None:
    """Start the fork server of non-CrypTen parties early, so its imports overlap the caller's."""
    from protocols.runtime.launcher import start_fork_server

    start_fork_server(PARTY_PRELOAD)


def child_environment() -> dict[str, str]:
    """Environment of launched parties: this package importable, gloo on loopback, 1 thread."""
    import socket

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    lo = next((ifname for _, ifname in socket.if_nameindex() if ifname in ("lo", "lo0")), None)
    if lo is not None:
        env.setdefault("GLOO_SOCKET_IFNAME", lo)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def host_rendezvous(
    ranks: dict[str, int], workdir: Path, insecure: bool, crypten: bool, timeout: float
) -> tuple[Any, int]:
    """Host the run's rendezvous on 127.0.0.1; return the object to keep alive and its port."""
    if crypten:
        from protocols.runtime.launcher import host_store

        return host_store(len(ranks), timeout)
    from protocols.transport.rendezvous import INTRODUCER_NAME, Introducer
    from protocols.transport.tls import Credentials, server_context

    ctx = None
    if not insecure:
        from protocols.transport.certs import write_credentials

        write_credentials([*ranks, INTRODUCER_NAME], workdir / "tls", days=1)
        ctx = server_context(Credentials.from_dir(workdir / "tls", INTRODUCER_NAME))
    introducer = Introducer("127.0.0.1:0", ranks, ctx, timeout)
    return introducer, introducer.port


def launch_local(
    parts: Sequence[NDArray[np.float64]],
    *,
    n_components: int = 2,
    backend: str = "additive",
    frac_bits: int | None = None,
    key_bits: int | None = None,
    timeout: float = 600.0,
    connect_timeout: float = 60.0,
    protocol: str = "pppca-ss",
    insecure: bool = False,
    verbosity: int = 0,
    reveal: str = "covariance",
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run every party of a PPPCA run as a process on this host; return the server's result.

    The result has the keys of the in-process ``mpc-pca run`` result produced by
    the protocol runner (``backend``, ``components``, ``explained_variance``,
    ``explained_variance_ratio``, ``mean``, ``n_samples``) and ``report`` with
    every party's traffic.

    Raises
    ------
    ProtocolError
        If any party failed; the message gives the first failure and how each
        failed party ended.
    """
    from protocols.runtime.launcher import PythonEntry, launch, raise_on_failure

    if protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {protocol!r} cannot run as processes yet; choose one of {list(TORCH_PROTOCOLS)}"
        )
    crypten = backend == "crypten"
    if not crypten:
        start_party_server()  # its imports overlap the checks and the credentials below
    if crypten and not insecure:
        raise InputValidationError(
            "the crypten backend's own traffic runs over gloo, which cannot be wrapped in TLS; add --insecure"
        )
    # The launcher holds every part, so before any process starts it refuses whatever
    # the in-process run would refuse (repeating the providers' local statistics once).
    backend_impl = make_backend(backend, frac_bits=frac_bits, key_bits=key_bits)
    arrays, _, _, _ = preflight(
        list(parts), n_components, backend_impl, standardize=standardize, reveal=reveal
    )
    ranks = pppca_ranks(len(arrays))
    world = len(ranks)
    with tempfile.TemporaryDirectory(prefix="mpc-pca-run-") as tmp:
        workdir = Path(tmp)
        # The parties count connect_timeout from their own start, a few seconds later.
        keep_alive, port = host_rendezvous(ranks, workdir, insecure, crypten, connect_timeout + 3)
        outputs = {name: workdir / f"{name}.json" for name in ranks}
        commands: dict[str, list[str] | PythonEntry] = {}
        for name, rank in ranks.items():
            argv = [
                "party",
                "--protocol", protocol, "--rank", str(rank),
                "--world-size", str(world), "--master", f"127.0.0.1:{port}",
                "--n-components", str(n_components), "--backend", backend,
                "--timeout", str(timeout), "--connect-timeout", str(connect_timeout),
                "--external-rendezvous", "--output", str(outputs[name]), "--reveal", reveal,
            ]  # fmt: skip
            argv += ["--insecure"] if insecure else ["--tls-dir", str(workdir / "tls")]
            argv += ["-v"] * verbosity if verbosity > 0 else ["-q"] * -verbosity
            if frac_bits is not None:
                argv += ["--frac-bits", str(frac_bits)]
            if key_bits is not None:
                argv += ["--key-bits", str(key_bits)]
            if standardize:
                argv += ["--standardize"]
            if rank < len(arrays):
                path = workdir / f"{name}.csv"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", newline="") as handle:
                    if feature_names is not None:  # the providers agree on the names by hash
                        csv.writer(handle, lineterminator="\n").writerow(feature_names)
                    np.savetxt(handle, arrays[rank], fmt="%.17g", delimiter=",")
                argv += ["--data", str(path), "--delimiter", ","]
                argv += ["--header" if feature_names is not None else "--no-header"]
            # CrypTen parties are new interpreters; the others are forked from the fork server
            commands[name] = (
                [sys.executable, "-m", "mpc_pca.cli", *argv]
                if crypten
                else PythonEntry("mpc_pca.cli.main", "main", tuple(argv))
            )
        outcomes = launch(
            commands, timeout=timeout, env=child_environment(), workdir=workdir, preload=PARTY_PRELOAD
        )
        raise_on_failure(outcomes, keep_alive if crypten else None)
        results = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    result = {key: value for key, value in results[SERVER].items() if key not in ("party", "rank", "report")}
    result["report"] = {name: results[name]["report"][name] for name in ranks}
    return result
