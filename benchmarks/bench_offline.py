"""Dealer-free offline phase (issue 39): what the eigensolver asks for, and what Paillier OLE costs.

Usage::

    python -m benchmarks.bench_offline [--d 100] [--k 5] [--providers 3] [--key-bits 2048] [--check]

1. Records the correlated randomness the ladder eigensolver of the
   hidden-covariance mode requests (one in-process run with the dealer, its
   full iteration budget, on a covariance with a clear gap; numbered as the
   ledger numbers them) as :class:`~protocols.tensor.offline_store.Request` s.
2. Times the Paillier operations (:func:`~protocols.tensor.offline_cost.measure_timings`).
3. Prints the operation counts and estimated seconds per provider
   (:mod:`protocols.tensor.offline_cost`), triples and truncation pairs apart.
4. With ``--check``: generates one (d x d)@(d x k) triple among the providers
   for real and prints its wall time beside the model's estimate.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from protocols.errors import ProtocolError
from protocols.tensor import correlated
from protocols.tensor.offline_cost import measure_timings, total_counts
from protocols.tensor.offline_store import Request, generate_offline


def record_requests(d: int, k: int, n_providers: int) -> list[Request]:
    """The requests of one ladder eigensolve at ``d``, ``k`` (run with the dealer, in-process)."""
    from protocols.runtime import run_inprocess
    from protocols.tensor import TensorSession, share_input
    from protocols.tensor.fast_eig import ladder_eigenvectors
    from protocols.tensor.fast_eig_math import F

    requests: dict[int, Request] = {}
    holders = [f"h{i}" for i in range(n_providers)]
    originals = {name: getattr(correlated, name) for name in ("triple", "truncation_pair")}

    def triple(session: Any, kind: Any, a_shape: Any, b_shape: Any) -> Any:
        out = originals["triple"](session, kind, a_shape, b_shape)
        if out is not None and session.index == 0:
            requests[out.ident] = Request(kind, (tuple(a_shape), tuple(b_shape)))
        return out

    def truncation_pair(session: Any, shape: Any, bits: int) -> Any:
        out = originals["truncation_pair"](session, shape, bits)
        if out is not None and session.index == 0:
            requests[out.ident] = Request("truncation", (tuple(shape),), bits=bits)
        return out

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * d, d)) * np.r_[np.linspace(10, 6, k), np.linspace(1, 0.1, d - k)]
    cov = x.T @ x / (4 * d)

    def role(party: Any) -> Any:
        session = TensorSession(party, holders=holders, dealer="server", frac_bits=F)
        shared = share_input(session, cov if party.name == "h0" else None, owner="h0", shape=(d, d))
        try:
            return ladder_eigenvectors(shared, k, to="server")
        except ProtocolError:
            return None  # stopped at the iteration budget: every item of the budget was requested

    import protocols.tensor.batched as batched
    import protocols.tensor.ops as ops

    patched = [(mod, name) for mod in (correlated, ops, batched) for name in originals if hasattr(mod, name)]
    replacements = {"triple": triple, "truncation_pair": truncation_pair}
    try:
        for mod, name in patched:
            setattr(mod, name, replacements[name])
        run_inprocess({name: role for name in [*holders, "server"]}, timeout=3600)
    finally:
        for mod, name in patched:
            setattr(mod, name, originals[name])
    return [requests[i] for i in sorted(requests)]


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


def report(requests: list[Request], d: int, k: int, n_providers: int, key_bits: int, *, check: bool) -> None:
    """Print the counts and estimated seconds at one key size (and the real triple with ``check``)."""
    timings = measure_timings(key_bits, allow_insecure_key_size=key_bits < 2048)
    print(f"timings at {key_bits} bits: {timings}")
    for label, kinds in (("triples", ("mul", "matmul")), ("truncation pairs", ("truncation",))):
        chosen = [r for r in requests if r.kind in kinds]
        counts = total_counts(chosen, n_providers, key_bits)
        print(
            f"{label}: {len(chosen)} requests, {counts}, about {counts.seconds(timings):.0f} s per provider"
        )
        for request in sorted(set(chosen), key=str):
            same = [r for r in chosen if r == request]
            seconds = total_counts(same, n_providers, key_bits).seconds(timings)
            print(
                f"    {len(same):3d} x {request.kind} {request.shapes} bits={request.bits}: {seconds:.0f} s"
            )
    if check:
        estimate = total_counts([Request("matmul", ((d, d), (d, k)))], n_providers, key_bits)
        wall = check_one_triple(d, k, n_providers, key_bits)
        print(
            f"one ({d}x{d})@({d}x{k}) triple: {wall:.1f} s wall, model {estimate.seconds(timings):.1f} s per provider"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--providers", type=int, default=3)
    parser.add_argument("--key-bits", type=int, nargs="+", default=[2048])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    requests = record_requests(args.d, args.k, args.providers)
    for key_bits in args.key_bits:
        report(requests, args.d, args.k, args.providers, key_bits, check=args.check)


if __name__ == "__main__":
    main()
