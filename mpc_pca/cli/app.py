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
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.cli.certs import add_certs_parser, certs_main
from mpc_pca.cli.dp import add_dp_arguments, summarize_variance
from mpc_pca.cli.errors import command_line_flags, errors_in_flag_terms, in_flag_terms
from mpc_pca.cli.options import (
    EXIT_CODES_HELP,
    EXIT_INPUT,
    EXIT_PROTOCOL,
    OnceAction,
    add_paillier_arguments,
    add_read_arguments,
    check_output,
    check_protocol_options,
    paillier_backend_options,
    read_options,
    require_backend,
    warnings_once,
)
from mpc_pca.cli.party import add_party_parser, add_verbosity, configure_logging, party_main
from mpc_pca.cli.privacy import holds_dp_release, privacy_fields, privacy_summary
from mpc_pca.cli.relay import add_relay_parser, relay_main
from mpc_pca.cli.row_bound import check_row_bound, divide_rows
from mpc_pca.cli.studies import add_study_parsers, report_command, study_command
from mpc_pca.cli.wide import add_randomized_arguments, solver_protocol
from mpc_pca.data.datasets import builtin_names
from mpc_pca.data.inputs import ProviderData, expand_specs, provider_data
from mpc_pca.files import write_atomic
from mpc_pca.registry import entry, names
from protocols.errors import InputValidationError, ProtocolError


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        package_version = version("mpc-pca")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        package_version = "unknown"
    parser = argparse.ArgumentParser(
        prog="mpc-pca",
        description="Secure multiparty and differentially private PCA over horizontally partitioned data.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run a protocol on one file per provider, or on one data set split among them",
        epilog=EXIT_CODES_HELP,
    )
    run.add_argument("--protocol", required=True, help=f"one of: {', '.join(names())}")
    run.add_argument(
        "--data",
        required=True,
        nargs="+",
        action=OnceAction,
        metavar="SPEC",
        help="one file per provider (h0.csv h1.csv ..., a directory, or a glob), or one CSV/Parquet file, "
        f"builtin:NAME (NAME in {{{', '.join(builtin_names())}}}) or synthetic:stm|mog[:N[:SEED]] (capeagn) "
        "split among --parties",
    )
    run.add_argument(
        "--parties", type=int, default=None, help="one data set: number of providers (default 3)"
    )
    run.add_argument("--n-components", type=int, default=2, help="number of components k (default 2)")
    run.add_argument(
        "--split", choices=("even", "random"), default=None, help="one data set: how rows are split (even)"
    )
    run.add_argument(
        "--seed",
        type=int,
        default=None,
        help="one data set: seed of --split random (the row split only; the DP noise takes --noise-seed)",
    )
    run.add_argument("--backend", default=None, help="secure-sum backend (protocol default if omitted)")
    run.add_argument("--frac-bits", type=int, default=None, help="fixed-point fractional bits (default 20)")
    run.add_argument(
        "--output", type=Path, default=None, help="write the JSON result here (checked before the run)"
    )
    run.add_argument(
        "--transform-output",
        type=Path,
        default=None,
        help="pppca: write the consumer's projected rows X_i T here as CSV, with a provider column",
    )
    run.add_argument("--force", action="store_true", help="overwrite existing output files")
    run.add_argument(
        "--standardize",
        action="store_true",
        help="pppca: PCA of the standardized columns (StandardScaler + PCA on the pooled rows)",
    )
    add_read_arguments(run)
    run.add_argument(
        "--key-bits", type=int, default=None, help="pppca-he: Paillier modulus bits, 2048 (default) or 3072"
    )
    add_paillier_arguments(run)
    run.add_argument(
        "--reveal",
        choices=("covariance", "components", "spectrum"),
        default=None,
        help="pppca: what the server learns: the covariance matrix (paper, default) or only the "
        "top-k components, eigenvalues and total variance (eigensolve on shares)",
    )
    run.add_argument(
        "--eigengap",
        type=float,
        default=None,
        help="--reveal components: assumed lower bound on 1 - lambda_{k+1}/lambda_k, from 1e-8 to 0.9 (default 0.1)",
    )
    run.add_argument(
        "--min-ratio",
        type=float,
        default=None,
        help="--reveal components: assumed lower bound on lambda_k / total variance (default 0.01)",
    )
    run.add_argument(
        "--eigensolver",
        choices=("subspace", "krylov"),
        default=None,
        help="--reveal components: the eigensolve on shares, subspace iteration (default) or block Krylov "
        "(fewer rounds at small gaps; the providers also see the Krylov basis' small summary matrices)",
    )
    run.add_argument(
        "--dealer",
        choices=("server", "providers"),
        default=None,
        help="--reveal components: who makes the eigensolve's masks, the server as dealer (default) or the "
        "providers among themselves in an offline phase (no coalition short of all providers knows a mask)",
    )
    run.add_argument(
        "--dropout-threshold",
        type=int,
        default=None,
        metavar="T",
        help="pppca-ss with --backend additive-masks: survive providers that drop before their masked "
        "input arrives, as long as T remain (Shamir-shared mask seeds, SecAgg-style)",
    )
    add_randomized_arguments(run)
    _add_torch_arguments(run)
    add_dp_arguments(run)
    add_party_parser(sub)
    add_relay_parser(sub)
    add_certs_parser(sub)
    from mpc_pca.cli.plot import add_plot_parser

    add_plot_parser(sub)
    add_study_parsers(sub)
    return parser


def _add_torch_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--transport",
        choices=("inprocess", "processes", "torch"),
        default="inprocess",
        help="inprocess: parties as threads (default); processes: each party its own process on this "
        "host, linked by TLS 1.3 with throw-away credentials made for the run; torch: old alias of processes",
    )
    run.add_argument(
        "--timeout", type=float, default=None,
        help="inprocess: receive timeout per message (default 120 s); processes: phase deadline (default 600 s)",
    )  # fmt: skip
    run.add_argument(
        "--connect-timeout", type=float, default=60.0, help="--transport processes: rendezvous timeout, s"
    )
    run.add_argument(
        "--insecure", action="store_true",
        help="--transport processes: plain TCP links (required by --backend crypten)",
    )  # fmt: skip
    add_verbosity(run)


def run_command(args: argparse.Namespace) -> dict[str, Any]:
    """Execute ``mpc-pca run`` and return the JSON-ready result.

    Every check (protocol, options, data, column names, output paths) is made
    before any party starts. The consumer's projection, if any, is returned
    under the private key ``_projection`` and the providers' tables under
    ``_data`` (neither is part of the JSON).
    """
    protocol = entry(solver_protocol(args.protocol, getattr(args, "svd_solver", None)))
    args.protocol = protocol.name  # the registry's spelling from here on (PPPCA-SS -> pppca-ss)
    check_protocol_options(args, protocol)
    row_bound = check_row_bound(args, protocol)
    require_backend(args.backend)
    transport = getattr(args, "transport", "inprocess")
    transport = "processes" if transport == "torch" else transport
    if getattr(args, "timeout", None) is None:
        args.timeout = 600.0 if transport == "processes" else 120.0
    if transport == "inprocess" and getattr(args, "insecure", False):
        raise InputValidationError("--insecure only applies to --transport processes")
    if transport == "inprocess" and args.backend is not None:
        from protocols.backends import backend_class

        if backend_class(args.backend).needs_processes:
            raise InputValidationError(
                f"the {args.backend} backend needs each party in its own process; add --transport processes "
                "(alias --transport torch)"
            )
    if transport == "inprocess" and "paillier_randomness" in protocol.options:
        paillier_backend_options(args, args.backend)  # the --paillier-* flags, checked by their names
    if transport == "processes" and args.transform_output is not None:
        raise InputValidationError("--transform-output needs --transport inprocess")
    from mpc_pca.data.partition import check_split_seed

    check_split_seed(args.seed)  # before the data are read: a refused argument prints only its error
    inputs = expand_specs(args.data)
    check_output(args.output, "--output", inputs, args.force)
    check_output(args.transform_output, "--transform-output", inputs, args.force, [args.output])
    if transport == "processes" and protocol.deployable:
        from mpc_pca.deploy.local import start_party_server

        start_party_server()  # its imports overlap the reading of the data
    data = provider_data(
        args.data, read_options(args), parties=args.parties, split=args.split, seed=args.seed
    )
    for note in data.notes:
        print(f"mpc-pca: {in_flag_terms(note, command_line_flags())}", file=sys.stderr)
    parts = [divide_rows(part, row_bound) for part in data.parts]  # a public constant: as each site would
    result = {
        "protocol": args.protocol,
        "data": data.sources[0] if len(data.sources) == 1 else data.sources,
        "parties": len(parts),
        "part_rows": [p.shape[0] for p in parts],
        "n_features": len(data.names),
        "feature_names": list(data.names),
        "n_components": args.n_components,
    }
    result["transport"] = getattr(
        args, "transport", "inprocess"
    )  # as typed: "torch" is an alias of "processes"
    result["_data"] = data
    if transport == "processes":
        from mpc_pca.cli.runners import run_processes

        result.update(run_processes(args, parts, tuple(data.names)))
    else:
        from mpc_pca.cli.runners import run_inprocess

        result.update(run_inprocess(args, parts, tuple(data.names)))
    return result


def projection_csv(projection: np.ndarray, data: ProviderData) -> str:
    """The consumer's ``X_i T`` as CSV: ``provider``, ``source`` and one column per component."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["provider", "source", *(f"pc{j + 1}" for j in range(projection.shape[1]))])
    row = 0
    for i, table in enumerate(data.tables):
        for values in projection[row : row + table.values.shape[0]]:
            writer.writerow([f"provider{i}", table.source, *(repr(float(v)) for v in values)])
        row += table.values.shape[0]
    return out.getvalue()


def summarize(result: dict[str, Any]) -> str:
    """A short human-readable summary of a run."""
    lines = [
        f"protocol {result['protocol']} on {result['data']}: {result['parties']} parties "
        f"holding {result['part_rows']} rows, {result['n_features']} features",
    ]
    if "epsilon" in result:
        lines.extend(privacy_summary(result))
    ratio = result.get("explained_variance_ratio")
    if "weights" in result and "explained_variance" not in result:
        lines.append("weights: " + ", ".join(f"{w:.4f}" for w in result["weights"]))
    for i, value in enumerate(result.get("explained_variance", [])):
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
    """Entry point of the ``mpc-pca`` console script (exit codes: :data:`EXIT_CODES_HELP`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "party":
        return party_main(args)
    if args.command == "certs":
        return certs_main(args)
    if args.command == "relay":
        return relay_main(args)
    configure_logging(args)
    if args.command == "plot":
        from mpc_pca.cli.plot import plot_command

        return _guarded(lambda: plot_command(args))
    if args.command in ("study", "report"):
        return _guarded(lambda: (study_command if args.command == "study" else report_command)(args))
    return _guarded(lambda: _run_main(args))


def _guarded(command: Callable[[], int]) -> int:
    """Run a command; report project errors in one line with their exit code."""
    try:
        with errors_in_flag_terms():
            return command()
    except InputValidationError as exc:
        print(f"mpc-pca: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ProtocolError as exc:
        print(f"mpc-pca: error: protocol failure: {exc}", file=sys.stderr)
        return EXIT_PROTOCOL


def _run_main(args: argparse.Namespace) -> int:
    from mpc_pca.cli.progress import phase_progress

    started = f"{args.protocol}: reading the data and starting the parties ({args.transport})"
    with warnings_once() as leaks, phase_progress(enabled=not args.quiet, first_line=started):
        result = run_command(args)
    protocol = entry(result["protocol"])
    if holds_dp_release(protocol, result):  # say whether the release is private, and if not why
        result.update(privacy_fields(protocol, leaks))
    projection = result.pop("_projection", None)
    data = result.pop("_data")
    print(summarize(result))
    if args.output is not None:
        write_atomic(args.output, json.dumps(result, indent=2))
        print(f"result written to {args.output}")
    if args.transform_output is not None:
        if projection is None:
            raise InputValidationError(f"--transform-output does not apply to protocol {args.protocol!r}")
        write_atomic(args.transform_output, projection_csv(projection, data))
        print(f"projected rows written to {args.transform_output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
