"""Command line: ``mpc-pca run --protocol NAME --data SPEC --parties M --n-components K``.

Every protocol writes the same JSON result: ``components`` (k x d),
``explained_variance``, ``mean``, ``report`` (per role: bytes, messages,
rounds, seconds) plus protocol-specific keys (e.g. ``epsilon``/``delta``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.cli.dp import add_dp_arguments, dp_protocol_specs, summarize_variance
from mpc_pca.cli.studies import add_study_parsers, report_command, study_command
from mpc_pca.data.datasets import builtin_names, load_data
from mpc_pca.data.partition import split_rows
from protocols.errors import InputValidationError, ProtocolError

Runner = Callable[[argparse.Namespace, list[np.ndarray]], dict[str, Any]]


@dataclass(frozen=True)
class ProtocolSpec:
    """A protocol the ``run`` command can execute."""

    name: str
    summary: str
    runner: Runner
    #: Which of the protocol-specific ``run`` options (``backend``, ``frac_bits``,
    #: ``key_bits``) the protocol uses; giving any other one is an error.
    options: frozenset[str] = frozenset()


#: ``run`` options that only some protocols use, with their flag names.
PROTOCOL_OPTIONS = {"backend": "--backend", "frac_bits": "--frac-bits", "key_bits": "--key-bits"}


def _run_pppca(args: argparse.Namespace, parts: list[np.ndarray], default_backend: str) -> dict[str, Any]:
    from mpc_pca.pppca import PPPCA
    from protocols.backends import make_backend

    backend_name = args.backend or default_backend
    backend = make_backend(backend_name, frac_bits=args.frac_bits, key_bits=getattr(args, "key_bits", None))
    model = PPPCA(args.n_components, backend=backend, timeout=args.timeout)
    model.fit_transform(parts)
    return {"backend": backend_name, **model.model_.result_fields(), "report": model.report_}


def protocol_table() -> dict[str, ProtocolSpec]:
    """The protocols ``mpc-pca run`` knows, by name (built on each call; no global state)."""
    specs = [
        ProtocolSpec(
            "pppca-ss",
            "PPPCA with secret sharing (Liu et al. 2020, Alg. 2)",
            lambda args, parts: _run_pppca(args, parts, "additive"),
            frozenset(PROTOCOL_OPTIONS),
        ),
        ProtocolSpec(
            "pppca-he",
            "PPPCA with Paillier homomorphic encryption (Liu et al. 2020, Alg. 1)",
            lambda args, parts: _run_pppca(args, parts, "paillier"),
            frozenset(PROTOCOL_OPTIONS),
        ),
    ]
    specs += dp_protocol_specs(ProtocolSpec)
    return {spec.name: spec for spec in specs}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpc-pca",
        description="Secure multiparty and differentially private PCA over horizontally partitioned data.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a protocol on a data set split among simulated parties")
    run.add_argument("--protocol", required=True, help=f"one of: {', '.join(protocol_table())}")
    run.add_argument(
        "--data",
        required=True,
        help=f"a CSV file or builtin:NAME with NAME in {{{', '.join(builtin_names())}}}",
    )
    run.add_argument("--parties", type=int, default=3, help="number of data providers (default 3)")
    run.add_argument("--n-components", type=int, default=2, help="number of components k (default 2)")
    run.add_argument("--split", choices=("even", "random"), default="even", help="how rows are split")
    run.add_argument("--seed", type=int, default=None, help="seed for --split random and for DP noise")
    run.add_argument("--backend", default=None, help="secure-sum backend (protocol default if omitted)")
    run.add_argument("--frac-bits", type=int, default=None, help="fixed-point fractional bits (default 20)")
    run.add_argument("--output", type=Path, default=None, help="write the JSON result here")
    run.add_argument(
        "--key-bits", type=int, default=None, help="pppca-he: Paillier modulus bits, 2048 (default) or 3072"
    )
    _add_torch_arguments(run)
    add_dp_arguments(run)
    _add_party_parser(sub)
    add_study_parsers(sub)
    return parser


def _add_torch_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--transport",
        choices=("inprocess", "torch"),
        default="inprocess",
        help="inprocess: parties as threads (default); torch: each party its own process over "
        "torch.distributed (gloo) on this host",
    )
    run.add_argument("--timeout", type=float, default=120.0, help="receive timeout per message, s")
    run.add_argument(
        "--connect-timeout", type=float, default=60.0, help="--transport torch: rendezvous timeout, s"
    )


def _add_party_parser(sub: Any) -> None:
    party = sub.add_parser(
        "party",
        help="run one party of a protocol as this process, over torch.distributed (one per host)",
    )
    party.add_argument("--protocol", required=True, help="protocol name, e.g. pppca-ss")
    party.add_argument("--role", required=True, choices=("provider", "server", "consumer"))
    party.add_argument("--rank", type=int, required=True, help="providers 0..M-1, server M, consumer M+1")
    party.add_argument("--world-size", type=int, required=True, help="number of parties, M + 2")
    party.add_argument("--master", required=True, help="ADDR:PORT of the rendezvous (hosted by rank 0)")
    party.add_argument("--data", default=None, help="providers: this party's rows (CSV or builtin:NAME)")
    party.add_argument("--n-components", type=int, default=2, help="number of components k (default 2)")
    party.add_argument("--backend", default=None, help="secure-sum backend (protocol default if omitted)")
    party.add_argument("--frac-bits", type=int, default=None, help="fixed-point fractional bits")
    party.add_argument("--key-bits", type=int, default=None, help="paillier backend: modulus bits")
    party.add_argument("--timeout", type=float, default=120.0, help="receive timeout per message, s")
    party.add_argument("--connect-timeout", type=float, default=60.0, help="rendezvous timeout, s")
    party.add_argument("--ifname", default=None, help="network interface for gloo (GLOO_SOCKET_IFNAME)")
    party.add_argument("--output", type=Path, default=None, help="write this party's JSON result here")
    party.add_argument("--external-store", action="store_true", help=argparse.SUPPRESS)


def run_command(args: argparse.Namespace) -> dict[str, Any]:
    """Execute ``mpc-pca run`` and return the JSON-ready result."""
    table = protocol_table()
    if args.protocol not in table:
        raise InputValidationError(f"unknown protocol {args.protocol!r}; choose one of {list(table)}")
    spec = table[args.protocol]
    for option, flag in PROTOCOL_OPTIONS.items():
        if getattr(args, option, None) is not None and option not in spec.options:
            raise InputValidationError(f"{flag} does not apply to protocol {args.protocol!r}")
    if args.protocol == "pppca-he" and args.backend not in (None, "paillier"):
        raise InputValidationError(f"pppca-he uses the paillier backend, not --backend {args.backend!r}")
    transport = getattr(args, "transport", "inprocess")
    if transport == "inprocess" and args.backend == "crypten":
        raise InputValidationError(
            "the crypten backend needs each party in its own process; add --transport torch"
        )
    data = load_data(args.data)
    parts = split_rows(data, args.parties, args.split, args.seed)
    result = {
        "protocol": args.protocol,
        "data": args.data,
        "parties": args.parties,
        "part_rows": [p.shape[0] for p in parts],
        "n_features": data.shape[1],
        "n_components": args.n_components,
    }
    result["transport"] = transport
    if transport == "torch":
        result.update(_run_torch(args, parts))
    else:
        result.update(table[args.protocol].runner(args, parts))
    return result


def _run_torch(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """``run --transport torch``: every party a process on this host (see mpc_pca.pppca.distributed)."""
    from mpc_pca.pppca.distributed import TORCH_PROTOCOLS, launch_local

    if args.protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {args.protocol!r} does not run with --transport torch yet; "
            f"choose one of {list(TORCH_PROTOCOLS)} or --transport inprocess"
        )
    result = launch_local(
        parts,
        n_components=args.n_components,
        backend=args.backend or TORCH_PROTOCOLS[args.protocol],
        frac_bits=args.frac_bits,
        key_bits=getattr(args, "key_bits", None),
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        protocol=args.protocol,
    )
    return result


def party_command(args: argparse.Namespace) -> dict[str, Any]:
    """Execute ``mpc-pca party``: one party of a run, in this process."""
    import os

    from mpc_pca.pppca.distributed import TORCH_PROTOCOLS, run_party

    if args.protocol not in TORCH_PROTOCOLS:
        raise InputValidationError(
            f"protocol {args.protocol!r} cannot run as separate parties yet; choose one of "
            f"{list(TORCH_PROTOCOLS)}"
        )
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    data = None
    if args.data is not None:
        if args.role != "provider":
            raise InputValidationError(f"the {args.role} holds no data; do not pass --data to it")
        data = load_data(args.data)
    return run_party(
        role=args.role,
        rank=args.rank,
        world_size=args.world_size,
        master=args.master,
        data=data,
        n_components=args.n_components,
        backend=args.backend or TORCH_PROTOCOLS[args.protocol],
        frac_bits=args.frac_bits,
        key_bits=args.key_bits,
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        host_store=False if args.external_store else None,
        protocol=args.protocol,
    )


def _party_main(args: argparse.Namespace) -> int:
    """Run one party; on failure end the process at once so that its links close."""
    import os

    try:
        result = party_command(args)
    except (InputValidationError, ProtocolError) as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(2)  # do not wait for gloo's teardown: peers must see this party's links close
    except Exception as exc:  # a bug, not a protocol failure: keep the traceback
        import traceback

        traceback.print_exc()
        print(f"mpc-pca: error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(1)
    if args.output is not None:
        args.output.write_text(json.dumps(result, indent=2))
    traffic = result["report"][result["party"]]
    print(
        f"{result['party']} (rank {result['rank']}) done: sent {traffic['bytes_sent']:,} B, "
        f"received {traffic['bytes_received']:,} B, rounds {traffic['rounds']}, {traffic['seconds']:.3f} s"
        + (f"; result written to {args.output}" if args.output is not None else "")
    )
    return 0


def summarize(result: dict[str, Any]) -> str:
    """A short human-readable summary of a run."""
    lines = [
        f"protocol {result['protocol']} on {result['data']}: {result['parties']} parties "
        f"holding {result['part_rows']} rows, {result['n_features']} features",
    ]
    if "epsilon" in result:
        lines.append(f"privacy: epsilon={result['epsilon']}, delta={result.get('delta')}")
    ratio = result.get("explained_variance_ratio")
    for i, value in enumerate(result["explained_variance"]):
        extra = f" ({100 * ratio[i]:.2f}% of variance)" if ratio is not None else ""
        lines.append(f"  component {i + 1}: variance {summarize_variance(value)}{extra}")
    if "captured_energy_ratio" in result:
        lines.append(f"captured energy q/q_o on the pooled rows: {result['captured_energy_ratio']:.4f}")
    lines.append("traffic per role:")
    for role, rep in result["report"].items():
        lines.append(
            f"  {role:>12}: sent {rep['bytes_sent']:>10,} B, received {rep['bytes_received']:>10,} B, "
            f"rounds {rep['rounds']}, {rep['seconds'] * 1000:.1f} ms"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mpc-pca`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "party":
        return _party_main(args)
    try:
        if args.command in ("study", "report"):
            return (study_command if args.command == "study" else report_command)(args)
        result = run_command(args)
    except (InputValidationError, ProtocolError) as exc:
        print(f"mpc-pca: error: {exc}", file=sys.stderr)
        return 2
    print(summarize(result))
    if args.output is not None:
        args.output.write_text(json.dumps(result, indent=2))
        print(f"result written to {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
