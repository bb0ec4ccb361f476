"""Dealer-free offline phase (issue 39): what the eigensolver asks for, and what it costs.

Usage::

    python -m benchmarks.bench_offline [--d 100] [--k 5] [--providers 3] [--key-bits 2048] [--check]

1. Plans the correlated randomness the ladder eigensolver of the
   hidden-covariance mode can take at PPPCA's default iteration budget (20), worst case
   (:func:`~protocols.tensor.offline_plan.ladder_plan`: every iteration, every
   squaring, the every-holder masking rotation).
2. Times the Paillier operations and an extended OT
   (:func:`~protocols.tensor.offline_cost.measure_timings`).
3. Prints the operation counts and estimated seconds per provider
   (:mod:`protocols.tensor.offline_cost`), triples and truncation pairs apart.
4. Generates every truncation pair among provider threads for real (OT
   extension: seconds, not hours) and prints the wall time, each provider's
   CPU time and bytes sent.
5. With ``--check``: generates one (d x d)@(d x k) triple among the providers
   for real and prints its wall time beside the model's estimate.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import Any

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.pppca.components import ComponentsSettings, default_max_iterations
from mpc_pca.studies.machine import describe_machine
from protocols.tensor.offline_cost import measure_timings, total_counts
from protocols.tensor.offline_plan import ladder_plan
from protocols.tensor.offline_store import Request, generate_offline

#: The issue's goal for the offline phase at d = 100, M = 3 (seconds per provider).
GOAL_SECONDS = 300.0
#: PPPCA's iteration budget of the ladder at its default assumed eigengap (0.1): 20 iterations.
MAX_ITERATIONS = default_max_iterations(ComponentsSettings.eigengap)
FULL = {"d": 100, "k": 5}
QUICK = {"d": 12, "k": 2}


def check_one_triple(d: int, k: int, n_providers: int, key_bits: int) -> float:
    """Wall seconds to generate one (d x d)@(d x k) triple among ``n_providers`` threads."""
    from protocols.runtime import run_inprocess
    from protocols.tensor.provider_products import exchange_keys

    providers = [f"p{i}" for i in range(n_providers)]
    request = Request("matmul", ((d, d), (d, k)))

    def role(party: Any) -> Any:
        group = exchange_keys(party, providers, key_bits=key_bits, allow_insecure_key_size=key_bits < 2048)
        start = time.perf_counter()
        generate_offline(group, [request])
        return time.perf_counter() - start

    return max(run_inprocess({p: role for p in providers}, timeout=3600).outputs.values())


def generate_truncation_pairs(requests: list[Request], n_providers: int) -> dict[str, Any]:
    """Generate every truncation pair of ``requests`` among ``n_providers`` threads, for real.

    Wall seconds (all providers in this process), and per provider its CPU
    seconds (:func:`time.thread_time`) and bytes sent, base OTs included. The
    Paillier keys the group carries take no part (a 512-bit test key each).
    """
    from protocols.runtime import run_inprocess
    from protocols.tensor.provider_products import exchange_keys

    providers = [f"p{i}" for i in range(n_providers)]
    pairs = [r for r in requests if r.kind == "truncation"]

    def role(party: Any) -> Any:
        group = exchange_keys(party, providers, key_bits=512, allow_insecure_key_size=True)
        sent_before = party.channel.meter.bytes_sent
        start, cpu = time.perf_counter(), time.thread_time()
        generate_offline(group, pairs)
        return (
            time.perf_counter() - start,
            time.thread_time() - cpu,
            party.channel.meter.bytes_sent - sent_before,
        )

    outputs = run_inprocess({p: role for p in providers}, timeout=3600).outputs
    wall = max(out[0] for out in outputs.values())
    cpu = [outputs[p][1] for p in providers]
    sent = [outputs[p][2] for p in providers]
    print(
        f"truncation pairs for real: {wall:.1f} s wall for all {n_providers} providers in one process, "
        f"CPU per provider {min(cpu):.1f}-{max(cpu):.1f} s, sent per provider {max(sent) / 1e6:.0f} MB at most",
        flush=True,
    )
    return {"requests": len(pairs), "wall_seconds": wall, "cpu_seconds": cpu, "bytes_sent": sent}


def report(
    requests: list[Request], d: int, k: int, n_providers: int, key_bits: int, *, check: bool
) -> dict[str, Any]:
    """Counts and estimated seconds at one key size (and the real triple with ``check``), printed and returned."""
    timings = measure_timings(key_bits, allow_insecure_key_size=key_bits < 2048)
    print(f"timings at {key_bits} bits: {timings}", flush=True)
    out: dict[str, Any] = {"key_bits": key_bits, "timings": asdict(timings)}
    for label, kinds in (("triples", ("mul", "matmul")), ("truncation_pairs", ("truncation",))):
        chosen = [r for r in requests if r.kind in kinds]
        counts = total_counts(chosen, n_providers, key_bits)
        seconds = counts.seconds(timings)
        print(f"{label}: {len(chosen)} requests, {counts}, about {seconds:.0f} s per provider", flush=True)
        out[label] = {"requests": len(chosen), "operations": asdict(counts), "seconds_per_provider": seconds}
    out["goal_seconds"] = GOAL_SECONDS
    out["estimated_seconds_per_provider"] = (
        out["triples"]["seconds_per_provider"] + out["truncation_pairs"]["seconds_per_provider"]
    )
    out["truncation_pairs"]["generated"] = generate_truncation_pairs(requests, n_providers)
    if check:
        estimate = total_counts([Request("matmul", ((d, d), (d, k)))], n_providers, key_bits).seconds(timings)
        wall = check_one_triple(d, k, n_providers, key_bits)
        print(
            f"one ({d}x{d})@({d}x{k}) triple: {wall:.1f} s wall, model {estimate:.1f} s per provider",
            flush=True,
        )
        out["check_one_triple"] = {"shape": [[d, d], [d, k]], "wall_seconds": wall, "model_seconds": estimate}
    return out


def main(argv: list[str] | None = None) -> None:
    """Record the requests, cost them at each key size, write ``offline.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"d = {QUICK['d']}, k = {QUICK['k']}, a 512-bit key"
    )
    parser.add_argument("--d", type=int, default=None, help=f"default {FULL['d']}")
    parser.add_argument("--k", type=int, default=None, help=f"default {FULL['k']}")
    parser.add_argument("--providers", type=int, default=3)
    parser.add_argument(
        "--key-bits", type=int, nargs="+", default=None, help="default 2048 (512 with --quick)"
    )
    parser.add_argument(
        "--check", action="store_true", help="also generate one (d x d)@(d x k) triple for real"
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    d = sizes["d"] if args.d is None else args.d
    k = sizes["k"] if args.k is None else args.k
    if not 1 <= k < d or args.providers < 2:
        parser.error(
            f"need 1 <= k < d and at least 2 providers, got d={d}, k={k}, providers={args.providers}"
        )
    key_sizes = args.key_bits or [512 if args.quick else 2048]
    folder = output_dir(args.out, args.quick)
    requests = ladder_plan(d, k, n_holders=args.providers, max_iterations=MAX_ITERATIONS)
    payload = {
        "machine": describe_machine(), "quick": args.quick, "d": d, "k": k, "providers": args.providers,
        "requests": len(requests),
        "by_key_size": [report(requests, d, k, args.providers, bits, check=args.check) for bits in key_sizes],
    }  # fmt: skip
    path = write_json("offline.json", payload, folder)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
