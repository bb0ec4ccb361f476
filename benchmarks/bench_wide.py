"""Secure PCA at biobank width (issue 37): ``pppca-randomized`` on a simulated structured cohort read from ``.bed`` files.

A cohort of ``N`` diploid individuals from 5 populations (an ``msprime``
island model, :mod:`benchmarks.bench_wide_cohort`), the first ``d`` SNPs of
minor allele frequency >= 0.01, is split unevenly over 5 sites (each a mix of
populations) and written as one PLINK 1 fileset per site. Then, in one
process with one BLAS thread (threadpoolctl; bed-reader with one thread;
both recorded), with k = 10, 10 oversamples, scikit-learn's ``auto`` power
(7 power iterations, 8 products) and standardized genotypes
(``(x - 2p) / sqrt(2p(1 - p))`` with the pooled ``p``, the protocol's
``standardize=True``):

1. the sites' files are read by the project's reader
   (:class:`mpc_pca.data.plink.BedFile`) into one pooled array, each site's
   rows a view of it;
2. the secure run on those parts (threads runner, additive backend), and the
   same algorithm in plaintext on the pooled matrix from the same start seed
   (:func:`mpc_pca.wide.subspace.randomized_pca`), timed in turn; then the
   secure run again with ``iterates="sites"`` (``provider0`` leads the
   iterations, the server learns only the output), same settings and start,
   beside the same plaintext run (``in_memory.sites_mode``);
3. the secure run again with each site streaming its ``.bed`` file in chunks
   (:class:`mpc_pca.data.genotype_part.BedPart`, as ``mpc-pca party --data
   site.bed``), beside the plaintext algorithm over the same streamed files
   (``--skip-streamed-runs`` leaves this step out: ``"streamed": null``);
4. scikit-learn's ``randomized_svd`` of the pooled standardized matrix and the
   exact top-k decomposition (the ``N x N`` Gram matrix's eigenpairs,
   :mod:`benchmarks.bench_wide_reference`); subspace angles and eigenvalue
   errors of the 4 structure components and of all k;
5. k-means (5 clusters) on the first 4 PC scores: the secure scores (each site
   computed its own) against the exact ones and the true populations;
6. each site's peak memory in a child process streaming its file (its sums and one product)
   (:mod:`benchmarks.bench_wide_memory`), and one site of a 1,000,000-SNP
   ``.bed`` file streamed under the bound stated there.

Usage: ``python -m benchmarks.bench_wide [--quick]`` writes
``benchmarks/results/wide.json`` and ``wide.png`` (``--quick``: 500 x 2,000 and
a 20,000-SNP streamed site, seconds). Needs the ``bench-genotype`` extra
(``msprime``, ``bed-reader``). The published ``wide.json`` is the full size run with
``--skip-streamed-runs --workdir /tmp/i37_work`` (34 min on a 2-core machine shared with other jobs;
step 3 would have added 22 passes over every file); the quick run includes step 3.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from benchmarks import bench_wide_cohort as cohort_module
from benchmarks.bench_wide_memory import site_peak, write_random_bed
from benchmarks.bench_wide_plot import plot
from benchmarks.bench_wide_reference import (
    accuracy,
    agreement,
    clusters,
    exact_top,
    sklearn_top,
    standardize_in_place,
)
from benchmarks.bench_wide_runs import (
    Clock,
    plaintext_run,
    secure_run,
    secure_scores,
    solver_settings,
    traffic,
    versus_plaintext,
)  # fmt: skip
from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine

K = 10
#: Components that carry the structure of 5 populations.
STRUCTURE = 4
SEED = 37
FULL = {"individuals": 10_000, "snps": 100_000, "stream_individuals": 2_000, "stream_snps": 1_000_000,
        "stream_chunk_rows": 100}  # fmt: skip
QUICK = {
    "individuals": 500,
    "snps": 2_000,
    "stream_individuals": 500,
    "stream_snps": 20_000,
    "stream_chunk_rows": 50,
}


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 x 2,000, a 20,000-SNP streamed site (CI)")
    for key, value in FULL.items():
        flag = "--" + key.replace("_", "-")
        parser.add_argument(
            flag, type=int, default=None, help=f"default {value:,} ({QUICK[key]:,} with --quick)"
        )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="folder for the .bed files (default: a temp dir)"
    )
    parser.add_argument(
        "--skip-streamed-runs",
        action="store_true",
        help="leave out step 3 (the secure and plaintext runs over the streamed files: 22 passes over every file)",
    )
    add_out_argument(parser)
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    for key in FULL:
        if getattr(args, key) is None:
            setattr(args, key, sizes[key])
        low = 1 if key == "stream_chunk_rows" else K if "individuals" in key else 2 * K
        if getattr(args, key) < low:
            parser.error(f"--{key.replace('_', '-')} must be at least {low}")
    return args


def load_pooled(paths: list[Path], n: int, d: int) -> tuple[np.ndarray, list[np.ndarray], float]:
    """Every site's file read by the project's reader into one ``(N, d)`` array; the sites' views; seconds."""
    from mpc_pca.data.plink import BedFile

    pooled = np.empty((n, d))
    parts, start = [], 0
    with Clock() as clock:
        for path in paths:
            site = BedFile(path)
            rows = site.n_samples
            pooled[start : start + rows] = site.read()
            parts.append(pooled[start : start + rows])
            start += rows
    if start != n:
        raise RuntimeError(f"the files hold {start} individuals, expected {n}")
    return pooled, parts, clock.timed.wall


def streamed_runs(paths: list[Path], settings: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Step 3: the secure run and the plaintext algorithm over the same ``.bed`` files streamed in chunks."""
    from mpc_pca.data.genotype_part import BedPart
    from mpc_pca.data.inputs import ReadOptions

    done, secure = secure_run([BedPart(p, ReadOptions()) for p in paths], settings)
    reference, _, plain = plaintext_run([BedPart(p, ReadOptions()) for p in paths], settings)
    return done, comparison(done, secure, reference, plain, "plaintext_same_files")


def in_memory_runs(parts: list[np.ndarray], pooled: np.ndarray, settings: dict[str, Any]) -> dict[str, Any]:
    """Step 2: the secure run on the sites' arrays and the plaintext algorithm on the pooled matrix."""
    done, secure = secure_run(parts, settings)
    reference, moments, plain = plaintext_run([pooled], settings)
    sites_done, sites = secure_run(parts, settings, iterates="sites")
    report = comparison(done, secure, reference, plain, "plaintext_pooled")
    report["sites_mode"] = {
        **comparison(sites_done, sites, reference, plain, "plaintext_pooled"),
        "equal_to_server_mode": float(np.max(np.abs(sites_done.output.components - done.output.components))),
    }
    return {"done": done, "reference": reference, "moments": moments, "report": report}


def comparison(done: Any, secure: Any, reference: Any, plain: Any, plain_key: str) -> dict[str, Any]:
    """One secure run beside its plaintext run (same start): both timings, their ratios, the differences, traffic."""
    return {
        "secure": secure.as_dict(),
        plain_key: plain.as_dict(),
        "wall_ratio": secure.wall / plain.wall,
        "cpu_ratio": secure.cpu / plain.cpu,
        "versus_plaintext": versus_plaintext(done, reference),
        "traffic": traffic(done),
    }


def references(pooled: np.ndarray, runs: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Step 4: sklearn and the exact decomposition (``pooled`` is standardized in place)."""
    power = runs["done"].output.solver.n_products - 1
    standardize_in_place(pooled, runs["moments"])
    with Clock() as sk_clock:
        sk_values, sk_components = sklearn_top(pooled, K, settings["n_oversamples"], power, SEED)
    with Clock() as exact_clock:
        values, components = exact_top(pooled, K)
    exact_scores = pooled @ components[:STRUCTURE].T
    model = runs["done"].output
    return {
        "exact_values": values,
        "exact_components": components,
        "exact_scores": exact_scores,
        "report": {
            "sklearn_randomized_svd": {**sk_clock.timed.as_dict(), "n_iter": power},
            "exact_gram_eigh": exact_clock.timed.as_dict(),
            "exact_eigenvalues": values.tolist(),
            "secure_eigenvalues": model.explained_variance.tolist(),
            "sklearn_eigenvalues": sk_values.tolist(),
            "secure_vs_exact": accuracy(
                model.explained_variance, model.components, values, components, STRUCTURE
            ),
            "sklearn_vs_exact": accuracy(sk_values, sk_components, values, components, STRUCTURE),
            "plaintext_vs_exact": accuracy(
                runs["reference"].eigenvalues, runs["reference"].components, values, components, STRUCTURE
            ),
        },
    }


def cluster_report(secure: np.ndarray, exact: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """Step 5: k-means on the first 4 PC scores; agreements up to relabelling."""
    on_secure = clusters(secure[:, :STRUCTURE], 5, SEED)
    on_exact = clusters(exact, 5, SEED)
    return {
        "secure_vs_exact": agreement(on_secure, on_exact),
        "secure_vs_populations": agreement(on_secure, truth),
        "exact_vs_populations": agreement(on_exact, truth),
    }


def memory_report(paths: list[Path], args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Step 6: each site's peak in a child process; then the streamed 1,000,000-SNP site."""
    width = solver_settings(K, SEED)["n_oversamples"] + K
    sites = {
        f"provider{i}": site_peak(path, width, K, seed=SEED, with_scores=False)
        for i, path in enumerate(paths)
    }
    with Clock() as clock:
        big = write_random_bed(
            workdir / "stream" / "wide_site.bed", args.stream_individuals, args.stream_snps, SEED
        )
    stream = site_peak(big, width, K, args.stream_chunk_rows, SEED, with_scores=False)
    return {"per_provider": sites, "stream": {**stream, "write_seconds": clock.timed.wall}}


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Steps 1-6 of the module notes; the JSON payload (with the arrays the plot needs under ``_plot``)."""
    settings = solver_settings(K, SEED)
    with Clock() as clock:
        cohort = cohort_module.simulate(args.individuals, args.snps, SEED)
        paths = cohort_module.write_sites(cohort, workdir / "sites")
    simulated = {
        "seconds": clock.timed.wall, "n_chromosomes": cohort.n_chromosomes,
        "site_rows": [s.stop - s.start for s in cohort_module.site_slices(args.individuals)],
        "population_mix_per_site": cohort_module.population_mix(cohort),
        "bed_bytes": [p.stat().st_size for p in paths],
    }  # fmt: skip
    pooled, parts, read_seconds = load_pooled(paths, args.individuals, args.snps)
    runs = in_memory_runs(parts, pooled, settings)
    print(f"in memory: {runs['report']['secure']} vs {runs['report']['plaintext_pooled']}", flush=True)
    print(f"in memory, iterates='sites': {runs['report']['sites_mode']['secure']}", flush=True)
    streamed: dict[str, Any] | None = None
    if not args.skip_streamed_runs:
        streamed_done, streamed = streamed_runs(paths, settings)
        streamed["equal_to_in_memory_run"] = float(
            np.max(np.abs(streamed_done.output.components - runs["done"].output.components))
        )
        print(f"streamed: {streamed['secure']} vs {streamed['plaintext_same_files']}", flush=True)
    refs = references(pooled, runs, settings)
    print(f"references: {refs['report']['secure_vs_exact']}", flush=True)
    del pooled, parts
    scores = secure_scores(runs["done"])
    memory = memory_report(paths, args, workdir)
    return {
        "cohort": simulated,
        "read_seconds": read_seconds,
        "in_memory": runs["report"],
        "streamed": streamed,
        "versus_exact": refs["report"],
        "clusters": cluster_report(scores, refs["exact_scores"], cohort.populations),
        "memory": memory,
        "_plot": {"scores": scores[:, :2], "populations": cohort.populations},
    }


def summary(payload: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets beside what was measured."""
    exact = payload["versus_exact"]["secure_vs_exact"]
    runs = payload["in_memory"]
    return {
        "secure_minus_plaintext_same_start": runs["versus_plaintext"]["max_abs_component_difference"],
        "secure_minus_plaintext_same_start_sign_aligned": runs["versus_plaintext"][
            "max_abs_component_difference_sign_aligned"
        ],
        "target_same_start": 1e-8,
        "structure_subspace_sine": exact["structure_subspace_sine"],
        "structure_eigenvalue_relative_error": exact["structure_max_eigenvalue_relative_error"],
        "target_structure": 1e-6,
        "time_ratio_wall": runs["wall_ratio"],
        "time_ratio_cpu": runs["cpu_ratio"],
        "sites_mode_minus_plaintext_same_start_sign_aligned": runs["sites_mode"]["versus_plaintext"][
            "max_abs_component_difference_sign_aligned"
        ],
        "sites_mode_time_ratio_wall": runs["sites_mode"]["wall_ratio"],
        "sites_mode_time_ratio_cpu": runs["sites_mode"]["cpu_ratio"],
        "target_time_ratio": 1.5,
        "cluster_agreement_secure_vs_exact": payload["clusters"]["secure_vs_exact"],
        "target_cluster_agreement": 0.99,
        "stream_peak_within_bound": payload["memory"]["stream"]["within_bound"],
        "providers_peak_within_bound": all(
            s["within_bound"] for s in payload["memory"]["per_provider"].values()
        ),
    }


def main() -> None:
    """Run the benchmark and write ``wide.json`` and ``wide.png``."""
    args = parse_args()
    folder = output_dir(args.out, args.quick)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BED_READER_NUM_THREADS"):
        os.environ[name] = "1"  # inherited by the memory children (spawned) and read by bed-reader
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp, threadpool_limits(1):
        blas = [
            {k: v for k, v in i.items() if k in ("internal_api", "num_threads", "version")}
            for i in threadpool_info()
        ]
        payload = measure(args, Path(tmp))
    extra = payload.pop("_plot")
    payload = {
        "machine": machine(), "quick": args.quick, "blas_threads": blas, "bed_reader_threads": 1,
        "n_individuals": args.individuals, "n_snps": args.snps, "n_sites": 5, "n_populations": 5, "k": K,
        "settings": solver_settings(K, SEED), "summary": {}, **payload,
        "main_process_peak_rss_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
    }  # fmt: skip
    payload["summary"] = summary(payload)
    name = "wide_quick" if args.quick else "wide"
    path = write_json(f"{name}.json", payload, folder)
    plot(payload, extra["scores"], extra["populations"], folder / f"{name}.png")
    print(f"wrote {path} and {name}.png: {payload['summary']}")


if __name__ == "__main__":
    main()
