"""``mpc-pca party``: one party of a multi-host run (identities: :mod:`mpc_pca.cli.certs`).

``party`` follows torchrun's conventions: ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT`` are read from the environment when the
flags are absent, and the role follows from the rank (a ``--role`` that does
not match it is an error). It refuses to start without TLS credentials
(``--tls-dir`` or ``--ca/--cert/--key``) unless ``--insecure`` is given.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.cli.errors import errors_in_flag_terms, own_words_as_flags
from mpc_pca.cli.options import (
    add_paillier_arguments,
    add_read_arguments,
    check_output,
    read_options,
    warnings_once,
)
from mpc_pca.cli.privacy import holds_dp_release, privacy_fields
from mpc_pca.cli.row_bound import check_row_bound, divide_rows
from mpc_pca.files import write_atomic
from protocols.errors import InputValidationError
from protocols.runtime.exits import run_or_exit


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """``-v`` (phase and link details) and ``-q`` (errors only)."""
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less log output")


def configure_logging(args: argparse.Namespace) -> None:
    """Log to stderr at WARNING, INFO with -v, DEBUG with -vv, ERROR with -q; settings named as flags."""
    level = logging.WARNING - 10 * getattr(args, "verbose", 0) + 10 * getattr(args, "quiet", 0)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_FlagTermsFormatter("%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S"))
    logging.basicConfig(level=max(logging.DEBUG, min(logging.ERROR, level)), handlers=[handler])


class _FlagTermsFormatter(logging.Formatter):
    """A log line with this party's settings spelled as flags; a peer's report it quotes stays as said."""

    def format(self, record: logging.LogRecord) -> str:
        return own_words_as_flags(super().format(record))


def add_party_parser(sub: Any) -> None:
    party = sub.add_parser(
        "party",
        help="run one party of a protocol as this process (one per organisation), over TLS links",
    )
    party.add_argument("--protocol", required=True, help="a deployable protocol, e.g. pppca-ss")
    party.add_argument(
        "--role", default=None,
        help="optional: follows from --rank (data holders first, e.g. PPPCA: providers 0..M-1, server M, "
        "consumer M+1); a name (server) or a kind (provider) that does not match the rank is an error",
    )  # fmt: skip
    party.add_argument("--rank", type=int, default=None, help="this party's rank (default: $RANK)")
    party.add_argument(
        "--world-size",
        type=int,
        default=None,
        help="number of parties, e.g. PPPCA: M + 2 (default: $WORLD_SIZE)",
    )
    party.add_argument(
        "--master", default=None,
        help="ADDR:PORT of the rendezvous, hosted by rank 0 on that interface "
        "(default: $MASTER_ADDR:$MASTER_PORT)",
    )  # fmt: skip
    party.add_argument(
        "--relay", default=None, metavar="HOST:PORT",
        help="instead of --master: dial out to this relay (mpc-pca relay), which hosts the rendezvous and "
        "forwards end-to-end TLS sessions; this party then accepts no connection (needs TLS)",
    )  # fmt: skip
    party.add_argument(
        "--peers", default=None, metavar="FILE",
        help="instead of --master/--relay: a JSON table of every party's name and HOST:PORT in rank order "
        "(no rendezvous; this party listens at its own entry, or --listen, and dials the higher ranks)",
    )  # fmt: skip
    party.add_argument(
        "--listen", default=None, metavar="HOST[:PORT]",
        help="where this party's links listen: an interface, or HOST:PORT for a fixed port to open in a "
        "firewall (default: the interface that routes to the master, a port the kernel picks)",
    )  # fmt: skip
    party.add_argument(
        "--advertise", default=None, metavar="HOST:PORT",
        help="the address the others dial to reach this party (e.g. a NAT port forward; default: --listen's)",
    )  # fmt: skip
    party.add_argument(
        "--join-window", default=None, metavar="DURATION",
        help="how long the rendezvous and this party wait for every party to join: seconds or 90s, 30m, 2h "
        "(default: --connect-timeout)",
    )  # fmt: skip
    party.add_argument(
        "--waiting-log-interval", type=float, default=30.0, metavar="SECONDS",
        help="rendezvous: seconds between two 'waiting room' lines (shown with -v; default 30)",
    )  # fmt: skip
    party.add_argument(
        "--data", default=None,
        help="providers: this party's rows (CSV, optionally compressed, Parquet or builtin:NAME); "
        "pppca-ss/pppca-he providers read a file in chunks of --chunk-rows rows",
    )  # fmt: skip
    party.add_argument(
        "--chunk-rows", type=int, default=None, metavar="N",
        help="pppca providers: rows read at a time from --data (default 65,536; memory O(N x columns + d^2) for N rows a chunk, "
        "whatever the file's size); 0 reads the whole table into memory",
    )  # fmt: skip
    party.add_argument(
        "--dask-scheduler", default=None, metavar="HOST:PORT",
        help="pppca providers: compute the local statistics and projection of --data on this Dask "
        "cluster, whose workers read the file at the same path (needs mpc-pca[dask])",
    )  # fmt: skip
    party.add_argument("--n-components", type=int, default=2, help="number of components k (default 2)")
    party.add_argument("--backend", default=None, help="secure-sum backend (protocol default if omitted)")
    party.add_argument("--frac-bits", type=int, default=None, help="fixed-point fractional bits")
    party.add_argument("--key-bits", type=int, default=None, help="paillier backend: modulus bits")
    add_paillier_arguments(party)
    party.add_argument(
        "--timeout", type=float, default=600.0,
        help="phase deadline: seconds a party waits while no party makes progress (default 600)",
    )  # fmt: skip
    party.add_argument(
        "--connect-timeout", type=float, default=60.0,
        help="rendezvous, link set-up and the --dask-scheduler handshake, s",
    )  # fmt: skip
    party.add_argument("--tls-dir", type=Path, default=None, help="DIR with ca.pem, NAME.pem, NAME.key")
    party.add_argument("--ca", type=Path, default=None, help="consortium CA certificate (PEM)")
    party.add_argument("--cert", type=Path, default=None, help="this party's certificate (PEM)")
    party.add_argument("--key", type=Path, default=None, help="this party's private key (PEM)")
    party.add_argument(
        "--insecure", action="store_true",
        help="plain TCP links: nothing encrypted or authenticated (required by --backend crypten)",
    )  # fmt: skip
    party.add_argument("--ifname", default=None, help="crypten only: network interface for gloo")
    party.add_argument(
        "--output", type=Path, default=None,
        help="write this party's JSON result here (checked before the run, written atomically)",
    )  # fmt: skip
    party.add_argument("--force", action="store_true", help="overwrite an existing --output file")
    party.add_argument(
        "--external-rendezvous", "--external-store", action="store_true", help=argparse.SUPPRESS
    )
    party.add_argument(
        "--reveal",
        choices=("covariance", "components", "spectrum"),
        default=None,
        help="pppca: what the server learns",
    )
    party.add_argument(
        "--eigengap", type=float, default=None,
        help="--reveal components: assumed lower bound on 1 - lambda_{k+1}/lambda_k, from 1e-8 to 0.9 "
        "(default 0.1; all parties)",
    )  # fmt: skip
    party.add_argument(
        "--min-ratio", type=float, default=None,
        help="--reveal components, crypten engine: assumed lower bound on lambda_k / total variance "
        "(default 0.01; all parties)",
    )  # fmt: skip
    party.add_argument(
        "--eigensolver", choices=("subspace", "krylov"), default=None,
        help="--reveal components: subspace iteration (default) or block Krylov (all parties)",
    )  # fmt: skip
    party.add_argument(
        "--dealer", choices=("server", "providers"), default=None,
        help="--reveal components: the server deals the eigensolve's masks (default), or the providers make "
        "them among themselves in an offline phase (all parties)",
    )  # fmt: skip
    party.add_argument("--standardize", action="store_true", help="standardize the columns (all parties)")
    party.add_argument(
        "--dropout-threshold", type=int, default=None, metavar="T",
        help="pppca-ss with --backend additive-masks: the run survives providers that drop before their "
        "masked input arrives, as long as T remain (every party must give the same T)",
    )  # fmt: skip
    party.add_argument("--seed", type=int, default=None, help="deprecated alias of --noise-seed")
    from mpc_pca.cli.dp import add_dp_arguments
    from mpc_pca.cli.wide import add_randomized_arguments

    add_randomized_arguments(party)
    add_dp_arguments(party)
    add_read_arguments(party)
    add_verbosity(party)


def _from_env(value: Any, variable: str, env: Mapping[str, str], flag: str) -> str:
    if value is not None:
        return str(value)
    if variable in env:
        return env[variable]
    raise InputValidationError(f"{flag} is required (or set ${variable}, as torchrun does)")


def resolve_layout(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[int, int, str]:
    """Rank, world size and master address from the flags, else torchrun's environment variables."""
    try:
        rank = int(_from_env(args.rank, "RANK", env, "--rank"))
        world = int(_from_env(args.world_size, "WORLD_SIZE", env, "--world-size"))
    except ValueError as exc:
        raise InputValidationError(f"rank and world size must be integers: {exc}") from None
    from protocols.transport.ranks import check_world_size

    check_world_size(world, "--world-size" if args.world_size is not None else "$WORLD_SIZE")
    if getattr(args, "relay", None) is not None:
        given = [flag for flag, value in (("--master", args.master), ("--listen", args.listen),
                 ("--advertise", args.advertise)) if value is not None]  # fmt: skip
        if given:
            raise InputValidationError(
                f"--relay replaces {' and '.join(given)}: with a relay every party only dials out to it, and "
                "the relay hosts the rendezvous; drop " + ", ".join(given)
            )
        from protocols.transport.rendezvous import parse_endpoint

        host, port = parse_endpoint(args.relay, "--relay", port_required=True)
        master = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    elif args.master is not None:
        master = args.master
    else:
        addr = _from_env(None, "MASTER_ADDR", env, "--master")
        master = (
            f"[{addr}]:{_from_env(None, 'MASTER_PORT', env, '--master')}"
            if ":" in addr
            else (f"{addr}:{_from_env(None, 'MASTER_PORT', env, '--master')}")
        )
    return rank, world, master


def resolve_peers(args: argparse.Namespace, env: Mapping[str, str], deployment: Any) -> tuple[Any, str, int]:
    """The static address table of ``--peers``, this party's name in it, and the number of providers.

    The world size is the table's length (``--world-size``/``$WORLD_SIZE``,
    if given, must agree); the rank comes from ``--rank``/``$RANK`` or else
    from ``--role`` given as a party name (``server``). The table's names
    must be the protocol's parties in rank order.

    Raises
    ------
    InputValidationError
        Naming the value: an option that needs a rendezvous (``--master``,
        ``--relay``, ``--advertise``, ``--join-window``), a world size or
        rank that disagrees with the table, a role the table does not list.
    """
    from mpc_pca.deploy.party import resolve_party
    from protocols.transport.peers import read_peers
    from protocols.transport.ranks import check_world_size

    given = [flag for flag, value in (("--master", args.master), ("--relay", args.relay),
             ("--advertise", args.advertise), ("--join-window", args.join_window)) if value is not None]  # fmt: skip
    if args.external_rendezvous:
        given.append("--external-rendezvous")
    if given:
        raise InputValidationError(
            f"--peers replaces {', '.join(given)}: with a static address table there is no rendezvous, every "
            "party listens at its own entry's address; drop " + ", ".join(given)
        )
    table = read_peers(args.peers)
    world = len(table.parties)
    check_world_size(world, f"--peers {args.peers!r}: the number of parties")
    stated = args.world_size if args.world_size is not None else env.get("WORLD_SIZE")
    if stated is not None and str(stated).strip() != str(world):
        raise InputValidationError(
            f"--world-size {stated} disagrees with --peers {args.peers!r}, which lists {world} parties"
        )
    rank_text = args.rank if args.rank is not None else env.get("RANK")
    if rank_text is not None:
        try:
            rank = int(rank_text)
        except ValueError:
            raise InputValidationError(f"rank {rank_text!r} is not an integer") from None
    elif args.role is not None and args.role in table.ranks:
        rank = table.ranks[args.role]
    else:
        raise InputValidationError(
            f"--peers {args.peers!r} lists {list(table.ranks)}: give --rank, or --role with one of these names"
        )
    name, n_providers = resolve_party(deployment, args.role, rank, world)
    table.check_ranks(deployment.layout(n_providers))
    return table, name, n_providers


def credentials_of(args: argparse.Namespace, name: str) -> Any:
    """The party's TLS credentials from ``--tls-dir`` and/or ``--ca/--cert/--key`` (None if none given)."""
    from protocols.transport.tls import Credentials

    if args.tls_dir is None and not (args.ca or args.cert or args.key):
        return None
    base = Credentials.from_dir(args.tls_dir, name) if args.tls_dir is not None else None
    parts = {"ca": args.ca, "cert": args.cert, "key": args.key}
    for field, value in parts.items():
        if value is None:
            if base is None:
                raise InputValidationError(
                    f"--{field} is missing (give --tls-dir, or all of --ca, --cert, --key)"
                )
            parts[field] = getattr(base, field)
    creds = Credentials(**parts)
    creds.check()
    return creds


def link_addresses(args: argparse.Namespace) -> dict[str, Any]:
    """``listen``, ``advertise``, ``join_window`` and ``waiting_log_interval`` of the links, parsed.

    ``--listen HOST`` without a port listens on the kernel's pick, or on the
    port of ``--advertise`` when that is given (a 1:1 port forward).

    Raises
    ------
    InputValidationError
        Naming the option and its value when it does not parse.
    """
    from protocols.runtime.runner import parse_duration
    from protocols.transport.rendezvous import parse_endpoint

    listen = advertise = window = None
    if args.listen is not None:
        listen = parse_endpoint(args.listen, "--listen", port_required=False)
    if args.advertise is not None:
        advertise = parse_endpoint(args.advertise, "--advertise", port_required=True)
    text = (args.listen or "").strip()
    if listen is not None and advertise is not None and "]:" not in text and text.count(":") != 1:
        listen = (listen[0], advertise[1])
    if args.join_window is not None:
        window = parse_duration(args.join_window, "--join-window")
    return {
        "listen": listen,
        "advertise": advertise,
        "join_window": window,
        "waiting_log_interval": args.waiting_log_interval,
    }


def party_inputs(args: argparse.Namespace) -> list[str]:
    """Every file this party reads (its data, credentials, peers file): ``--output`` may be none of them."""
    files = [str(path) for path in (args.data, args.ca, args.cert, args.key, args.peers) if path is not None]
    if args.tls_dir is not None and Path(args.tls_dir).is_dir():
        files += [str(path) for path in Path(args.tls_dir).iterdir() if path.is_file()]
    return files


@errors_in_flag_terms()
def party_command(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    announce: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Execute ``mpc-pca party``: parse the arguments into a :class:`~mpc_pca.deploy.PartySpec` and run it.

    ``announce`` (the progress report's first line) is told, before any link is
    set up, which party this is and where it joins the run.
    """
    from mpc_pca.cli.options import DASK_INSTALL, check_protocol_options, require_backend, require_installed
    from mpc_pca.cli.runners import settings_of
    from mpc_pca.cli.wide import solver_protocol
    from mpc_pca.deploy import FileSource, LinkOptions, PartySpec, run_party
    from mpc_pca.deploy.party import resolve_party
    from mpc_pca.registry import deployment as deployable
    from mpc_pca.validation import warn_privacy_leaks

    # --svd-solver picks the PPPCA protocol; deployable refuses a protocol that runs in one process only
    protocol = deployable(solver_protocol(args.protocol, args.svd_solver, args.role))
    args.protocol = protocol.name  # the registry's spelling from here on (PPPCA-SS -> pppca-ss)
    if args.seed is not None:
        print(
            "mpc-pca: warning: party --seed is deprecated; use --noise-seed (the same DP noise seed)",
            file=sys.stderr,
        )
        if args.noise_seed not in (None, args.seed):
            raise InputValidationError(
                f"--seed {args.seed} and --noise-seed {args.noise_seed} differ; give only --noise-seed"
            )
        args.noise_seed = args.seed
    check_protocol_options(args, protocol)
    row_bound = check_row_bound(args, protocol)
    require_backend(args.backend)
    check_output(args.output, "--output", party_inputs(args), args.force)
    deployment = protocol
    environment = os.environ if env is None else env
    peers = None
    if args.peers is not None:
        peers, name, n_providers = resolve_peers(args, environment, deployment)
        master = ""
    else:
        rank, world, master = resolve_layout(args, environment)
        name, n_providers = resolve_party(deployment, args.role, rank, world)
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    if args.relay is not None and args.insecure:
        raise InputValidationError(
            "--relay needs TLS: the pairs' end-to-end sessions are what keep the relay from reading or "
            "altering frames; drop --insecure and give --tls-dir (or --ca/--cert/--key)"
        )
    credentials = None if args.insecure else credentials_of(args, name)
    # --insecure: the links themselves warn once (protocols.runtime.parties), not this command again
    links = LinkOptions(
        master, credentials, args.insecure, timeout=args.timeout, connect_timeout=args.connect_timeout,
        host_rendezvous=False if args.external_rendezvous else None, **link_addresses(args),
        relay=master if args.relay is not None else None, peers=peers,
    )  # fmt: skip
    if args.dask_scheduler is not None:
        require_installed("--dask-scheduler", ("dask", "distributed"), DASK_INSTALL)
    data = (
        None
        if args.data is None
        else FileSource(
            args.data, read_options(args), args.chunk_rows, args.dask_scheduler, args.connect_timeout
        )
    )
    if row_bound is not None and data is not None:
        data = bounded_rows(data, row_bound)
    if "epsilon" in protocol.options or args.noise_seed is not None:
        warn_privacy_leaks(epsilon=args.epsilon, random_state=args.noise_seed)
    spec = PartySpec(
        args.protocol, name, n_providers, links, data, settings_of(args, protocol), noise_seed=args.noise_seed
    )
    if announce is not None:
        announce(f"{name} of {args.protocol}: joining the run {_joining_where(args, master)}")
    return run_party(spec, deployment=deployment)


def bounded_rows(source: Any, bound: float) -> Any:
    """``--row-bound``: this party's rows, read whole and divided by the public ``bound`` (notes on stderr)."""
    from mpc_pca.deploy.spec import ArraySource, load_rows

    rows = load_rows(source)
    if rows is None:  # pragma: no cover - a FileSource always has rows
        return source
    for note in rows.notes:
        print(f"mpc-pca: {note}", file=sys.stderr)
    return ArraySource(divide_rows(np.asarray(rows.values), bound), rows.names)


def _joining_where(args: argparse.Namespace, master: str) -> str:
    """Where this party meets the others: its relay, its peers file or the rendezvous (hosted by rank 0 or not)."""
    if args.relay is not None:
        return f"through the relay at {master}"
    if args.peers is not None:
        return f"with the addresses in {args.peers}"
    host = "an external rendezvous" if args.external_rendezvous else "the rendezvous hosted by rank 0"
    return f"at {host} ({master})"


def party_main(args: argparse.Namespace) -> int:
    """Run one party; on failure end the process at once so that its links close."""
    configure_logging(args)
    result = run_or_exit(lambda: _party_guarded(args))
    if args.output is not None:
        write_atomic(args.output, json.dumps(result, indent=2))
    traffic = result["report"][result["party"]]
    print(
        f"{result['party']} (rank {result['rank']}) done: sent {traffic['bytes_sent']:,} B, "
        f"received {traffic['bytes_received']:,} B, rounds {traffic['rounds']}, {traffic['seconds']:.3f} s"
        + (f"; result written to {args.output}" if args.output is not None else "")
    )
    return 0


def _party_guarded(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`party_command` with its warnings printed once and its phases shown (unless ``-q``)."""
    from mpc_pca.cli.progress import phase_progress
    from mpc_pca.registry import entry
    from mpc_pca.validation import warn_privacy_leaks

    with errors_in_flag_terms(), warnings_once() as leaks, phase_progress(enabled=not args.quiet) as progress:
        result = party_command(args, announce=None if progress is None else progress.announce)
        if result.get("n_samples") is not None and result.get("delta") is not None:
            warn_privacy_leaks(delta=result["delta"], n_samples=result["n_samples"])
    protocol = entry(result["protocol"])
    if holds_dp_release(protocol, result):  # as mpc-pca run says it, for the parties that hold the release
        result.update(privacy_fields(protocol, leaks))
    return result
