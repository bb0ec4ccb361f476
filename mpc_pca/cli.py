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

from mpc_pca.datasets import builtin_names, load_data
from mpc_pca.partition import split_rows
from protocols.errors import InputValidationError, ProtocolError

Runner = Callable[[argparse.Namespace, list[np.ndarray]], dict[str, Any]]


@dataclass(frozen=True)
class ProtocolSpec:
    """A protocol the ``run`` command can execute."""

    name: str
    summary: str
    runner: Runner


def _run_pppca(args: argparse.Namespace, parts: list[np.ndarray], default_backend: str) -> dict[str, Any]:
    from mpc_pca.pppca import PPPCA
    from protocols.backends.base import make_backend

    backend_name = args.backend or default_backend
    options: dict[str, Any] = {}
    if args.frac_bits is not None:
        from protocols.encoding import FixedPointCodec

        options["codec"] = FixedPointCodec(args.frac_bits)
    model = PPPCA(args.n_components, backend=make_backend(backend_name, **options))
    model.fit_transform(parts)
    return {
        "backend": backend_name,
        "components": model.components_.tolist(),
        "explained_variance": model.explained_variance_.tolist(),
        "explained_variance_ratio": model.explained_variance_ratio_.tolist(),
        "mean": model.mean_.tolist(),
        "n_samples": model.n_samples_,
        "report": model.report_,
    }


def protocol_table() -> dict[str, ProtocolSpec]:
    """The protocols ``mpc-pca run`` knows, by name (built on each call; no global state)."""
    specs = [
        ProtocolSpec(
            "pppca-ss",
            "PPPCA with secret sharing (Liu et al. 2020, Alg. 2)",
            lambda args, parts: _run_pppca(args, parts, "additive"),
        ),
    ]
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
    return parser


def run_command(args: argparse.Namespace) -> dict[str, Any]:
    """Execute ``mpc-pca run`` and return the JSON-ready result."""
    table = protocol_table()
    if args.protocol not in table:
        raise InputValidationError(f"unknown protocol {args.protocol!r}; choose one of {list(table)}")
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
    result.update(table[args.protocol].runner(args, parts))
    return result


def summarize(result: dict[str, Any]) -> str:
    """A short human-readable summary of a run."""
    lines = [
        f"protocol {result['protocol']} on {result['data']}: {result['parties']} parties "
        f"holding {result['part_rows']} rows, {result['n_features']} features",
    ]
    if "epsilon" in result:
        lines.append(f"privacy: epsilon={result['epsilon']}, delta={result.get('delta')}")
    ratio = result.get("explained_variance_ratio")
    variance = np.asarray(result["explained_variance"])
    for i, value in enumerate(variance):
        extra = f" ({100 * ratio[i]:.2f}% of variance)" if ratio is not None else ""
        lines.append(f"  component {i + 1}: variance {value:.6g}{extra}")
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
    try:
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
