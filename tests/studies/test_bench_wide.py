"""The wide benchmark (``python -m benchmarks.bench_wide``): its pieces, and its quick run end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_wide_cohort as cohort_module
from benchmarks import bench_wide_memory
from benchmarks.bench_wide_reference import agreement, exact_top, standardize_in_place, subspace_sine
from mpc_pca.wide.subspace import pooled_moments

bed_reader = pytest.importorskip("bed_reader", reason="the genotype extra is not installed")


def test_a_random_bed_decodes_to_the_dosages_drawn_across_blocks_and_a_padded_last_byte(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(bench_wide_memory, "WRITE_BLOCK", 16)  # 45 SNPs: three blocks, the last short
    n, d, seed = 7, 45, 3  # 7 individuals: the last byte of each SNP holds one call and padding
    path = bench_wide_memory.write_random_bed(tmp_path / "r.bed", n, d, seed)
    rng = np.random.default_rng(seed)
    expected = []
    for start in range(0, d, 16):
        count = min(d, start + 16) - start
        p = rng.uniform(0.05, 0.5, size=(count, 1)).astype(np.float32)
        draw = rng.random((count, n), dtype=np.float32)
        expected.append((draw < p * p).astype(int) + (draw < p * (2 - p)).astype(int))
    values = bed_reader.open_bed(path, count_A1=True).read(dtype="float64")
    np.testing.assert_array_equal(values, np.vstack(expected).T)
    assert path.stat().st_size == 3 + d * 2  # magic bytes + ceil(7 / 4) bytes per SNP


def test_sites_written_are_the_cohort_rows_with_their_populations(tmp_path):
    from mpc_pca.data.plink import BedFile

    rng = np.random.default_rng(0)
    n, d = 40, 12
    cohort = cohort_module.Cohort(
        rng.integers(0, 3, size=(n, d)).astype(np.int8), rng.integers(0, 5, size=n),
        np.repeat([1, 2], d // 2), np.arange(d) * 10 + 5, 2,
    )  # fmt: skip
    paths = cohort_module.write_sites(cohort, tmp_path)
    slices = cohort_module.site_slices(n)
    assert [s.stop - s.start for s in slices] == cohort_module.uneven_counts(n, cohort_module.SITE_SHARES)
    assert slices[0].start == 0 and slices[-1].stop == n
    for path, rows in zip(paths, slices, strict=True):
        site = BedFile(path)
        np.testing.assert_array_equal(site.read(), cohort.dosages[rows])
        families = [line.split()[0] for line in path.with_suffix(".fam").read_text().splitlines()]
        assert families == [f"pop{p}" for p in cohort.populations[rows]]


def test_uneven_counts_are_non_empty_and_sum_to_n():
    for n in (5, 17, 500, 10_000):
        counts = cohort_module.uneven_counts(n, cohort_module.SITE_SHARES)
        assert sum(counts) == n and min(counts) >= 1
        assert n == 5 or len(set(counts)) == len(counts)  # uneven as soon as there are enough individuals
    with pytest.raises(ValueError, match="cannot be cut"):
        cohort_module.uneven_counts(3, cohort_module.SITE_SHARES)


def test_the_gram_route_gives_the_covariance_eigenpairs():
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(30, 80)) * rng.uniform(0.5, 3.0, size=80) + 2.0  # n < d, as a cohort
    moments = pooled_moments(rows.sum(axis=0), rows.shape[0], (rows**2).sum(axis=0))
    z = standardize_in_place(rows.copy(), moments)
    np.testing.assert_allclose(z, (rows - rows.mean(0)) / rows.std(0), atol=1e-12)
    values, components = exact_top(z, 5)
    dense = np.linalg.eigh(z.T @ z / (z.shape[0] - 1))
    np.testing.assert_allclose(values, dense[0][::-1][:5], rtol=1e-10)
    assert subspace_sine(components, dense[1][:, ::-1][:, :5].T) <= 1e-10
    np.testing.assert_allclose(components @ components.T, np.eye(5), atol=1e-10)


def test_agreement_is_up_to_relabelling():
    labels = np.array([0, 0, 1, 1, 2, 2, 2, 3])
    assert agreement(labels, (labels + 1) % 4) == 1.0
    changed = (labels + 1) % 4
    changed[-1] = 1  # the last individual (population 3) put with population 0
    assert agreement(labels, changed) == 7 / 8


@pytest.mark.slow
def test_the_quick_run_writes_its_json_and_png_and_meets_the_same_start_bound(tmp_path, monkeypatch):
    pytest.importorskip("msprime", reason="the bench-genotype extra is not installed")
    from benchmarks import bench_wide

    monkeypatch.setattr(sys, "argv", ["bench_wide", "--quick", "--out", str(tmp_path)])
    bench_wide.main()
    result = json.loads(Path(tmp_path / "wide_quick.json").read_text())
    assert (result["n_individuals"], result["n_snps"], result["k"]) == (500, 2_000, 10)
    assert [t["num_threads"] for t in result["blas_threads"]] == [1] * len(result["blas_threads"])
    same = result["in_memory"]["versus_plaintext"]
    assert same["same_products"] and same["n_products"] == 8
    assert same["max_abs_component_difference_sign_aligned"] <= 1e-8
    assert same["max_eigenvalue_relative_difference"] <= 1e-8
    # the mode in which provider0 leads the iterations: the same products, the same answer
    sites = result["in_memory"]["sites_mode"]
    assert sites["versus_plaintext"]["same_products"] and sites["versus_plaintext"]["n_products"] == 8
    assert sites["versus_plaintext"]["max_abs_component_difference_sign_aligned"] <= 1e-8
    assert sites["versus_plaintext"]["max_eigenvalue_relative_difference"] <= 1e-8
    assert sites["equal_to_server_mode"] <= 1e-10 and sites["wall_ratio"] > 0 and sites["cpu_ratio"] > 0
    assert result["summary"]["sites_mode_time_ratio_wall"] == sites["wall_ratio"]
    # the site streaming its file gives the run the site holding an array gives
    assert result["streamed"]["versus_plaintext"]["max_abs_component_difference_sign_aligned"] <= 1e-8
    assert result["versus_exact"]["secure_vs_exact"]["structure_max_eigenvalue_relative_error"] <= 1e-5
    assert result["clusters"]["secure_vs_exact"] >= 0.99
    traffic = result["in_memory"]["traffic"]
    assert len({traffic[f"provider{i}"]["rounds"] for i in range(5)}) == 1
    assert sum(result["cohort"]["site_rows"]) == 500
    assert all(min(mix) >= 1 for mix in result["cohort"]["population_mix_per_site"])  # every site mixed
    memory = result["memory"]
    assert memory["stream"]["n_snps"] == 20_000 and memory["stream"]["within_bound"]
    assert all(site["within_bound"] and site["finite"] for site in memory["per_provider"].values())
    assert (tmp_path / "wide_quick.png").stat().st_size > 0
