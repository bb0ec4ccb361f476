"""The wide benchmark's cohort: a structured population simulated with ``msprime``, split over sites as ``.bed`` files.

Five demes of an island model (``msprime.Demography.island_model``, each of
effective size :data:`DEME_SIZE`, symmetric migration :data:`MIGRATION`) give
population structure; diploid individuals are sampled unevenly from them
(:data:`POPULATION_SHARES`). Independent chromosomes of
:data:`CHROMOSOME_BP` base pairs (recombination and mutation rates
:data:`RECOMBINATION` and :data:`MUTATION`, infinite sites, so every site is
biallelic) are simulated until the cohort has ``n_snps`` SNPs of minor allele
frequency at least :data:`MIN_MAF`; the first ``n_snps`` of them are kept.
The individuals are shuffled (a fixed seed) and cut into sites of uneven
sizes (:data:`SITE_SHARES`): every site holds a mix of populations. Each site
is written as a PLINK 1 fileset with ``bed-reader``'s ``to_bed``; the ``.fam``
family id of an individual is its population (``pop0`` .. ``pop4``).

``msprime`` and ``bed-reader`` are the ``bench-genotype`` extra; they are
imported when a cohort is simulated or written, so this module imports without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

#: Effective size of each deme (diploid individuals).
DEME_SIZE = 2_000
#: Symmetric migration rate between demes, per generation (4 N m = 2: strongly diverged populations).
MIGRATION = 2.5e-4
#: Share of the individuals sampled from each population (uneven).
POPULATION_SHARES = (0.30, 0.25, 0.20, 0.15, 0.10)
#: Share of the individuals held by each site (uneven; each a mix of populations).
SITE_SHARES = (0.34, 0.26, 0.18, 0.13, 0.09)
#: Length of one simulated chromosome, recombination and mutation rates (per bp per generation).
CHROMOSOME_BP = 2_000_000
#: Four recombinations per mutation: short linkage blocks, so that linkage does not swamp the structure
#: (what LD pruning does for a real cohort before its PCA).
RECOMBINATION = 4e-8
MUTATION = 1e-8
#: Minor allele frequency a SNP needs to be kept.
MIN_MAF = 0.01


@dataclass(frozen=True)
class Cohort:
    """A simulated cohort: dosages, population labels and SNP positions.

    Attributes
    ----------
    dosages : ndarray of shape (n, d), int8
        Copies of the derived allele, 0, 1 or 2, individuals in shuffled order.
    populations : ndarray of shape (n,)
        Each individual's population, 0 .. 4.
    chromosomes, positions : ndarray of shape (d,)
        Each SNP's chromosome (1, 2, ...) and base-pair position.
    n_chromosomes : int
        Chromosomes simulated.
    """

    dosages: NDArray[np.int8]
    populations: NDArray[np.int64]
    chromosomes: NDArray[np.int64]
    positions: NDArray[np.int64]
    n_chromosomes: int


def uneven_counts(n: int, shares: Sequence[float]) -> list[int]:
    """``n`` cut by ``shares`` (each at least 1, summing to ``n``; the rounding remainder goes to the first).

    Examples
    --------
    >>> uneven_counts(10_000, (0.34, 0.26, 0.18, 0.13, 0.09))
    [3400, 2600, 1800, 1300, 900]
    """
    counts = [max(1, int(n * share)) for share in shares]
    counts[0] += n - sum(counts)
    if counts[0] < 1:
        raise ValueError(f"{n} individuals cannot be cut into {len(shares)} non-empty groups")
    return counts


def _chromosome(counts: Sequence[int], seed: int) -> tuple[NDArray[np.int8], NDArray[np.int64]]:
    """One chromosome: the common SNPs' dosages ``(n, d_c)`` (individuals by population) and positions."""
    import msprime

    demography = msprime.Demography.island_model([DEME_SIZE] * len(counts), migration_rate=MIGRATION)
    samples = {demography.populations[i].name: int(c) for i, c in enumerate(counts)}
    ancestry = msprime.sim_ancestry(
        samples=samples, demography=demography, sequence_length=CHROMOSOME_BP,
        recombination_rate=RECOMBINATION, random_seed=seed,
    )  # fmt: skip
    tree_sequence = msprime.sim_mutations(
        ancestry, rate=MUTATION, random_seed=seed + 1, discrete_genome=False,
        model=msprime.BinaryMutationModel(),
    )  # fmt: skip
    haplotypes = tree_sequence.genotype_matrix()  # (sites, 2 n), individuals' two nodes side by side
    dosages = (haplotypes[:, 0::2] + haplotypes[:, 1::2]).astype(np.int8)
    del haplotypes
    frequency = dosages.mean(axis=1, dtype=np.float64) / 2.0
    keep = np.minimum(frequency, 1.0 - frequency) >= MIN_MAF
    positions = tree_sequence.tables.sites.position[keep].astype(np.int64)
    return np.ascontiguousarray(dosages[keep].T), positions


def simulate(n_individuals: int, n_snps: int, seed: int = 2026) -> Cohort:
    """The cohort of the module notes: ``n_individuals`` diploids, the first ``n_snps`` common SNPs."""
    counts = uneven_counts(n_individuals, POPULATION_SHARES)
    labels = np.repeat(np.arange(len(counts)), counts)
    blocks: list[NDArray[np.int8]] = []
    chromosomes: list[NDArray[np.int64]] = []
    positions: list[NDArray[np.int64]] = []
    found = 0
    while found < n_snps:
        chromosome = len(blocks) + 1
        block, where = _chromosome(counts, seed + 10 * chromosome)
        take = min(block.shape[1], n_snps - found)
        blocks.append(block[:, :take])
        positions.append(where[:take])
        chromosomes.append(np.full(take, chromosome, dtype=np.int64))
        found += take
    order = np.random.default_rng(seed).permutation(n_individuals)
    dosages = np.ascontiguousarray(np.hstack(blocks)[order])
    return Cohort(dosages, labels[order], np.concatenate(chromosomes), np.concatenate(positions), len(blocks))


def site_slices(n_individuals: int) -> list[slice]:
    """The consecutive (shuffled) individuals of each site (:data:`SITE_SHARES`)."""
    bounds = np.cumsum([0, *uneven_counts(n_individuals, SITE_SHARES)])
    return [slice(int(a), int(b)) for a, b in pairwise(bounds)]


def write_sites(cohort: Cohort, folder: Path) -> list[Path]:
    """Each site's PLINK 1 fileset ``site{i}.bed/.bim/.fam`` in ``folder`` (``to_bed``); the ``.bed`` paths."""
    from bed_reader import to_bed

    folder.mkdir(parents=True, exist_ok=True)
    d = cohort.dosages.shape[1]
    # Zero-padded: a .bed site of pppca-randomized puts its SNPs in id order (the order its digests hash),
    # so ids that sort as the file does keep every run in the cohort's column order.
    snp_ids = [f"snp{j:08d}_chr{c}" for j, c in enumerate(cohort.chromosomes)]
    paths = []
    for index, rows in enumerate(site_slices(cohort.dosages.shape[0])):
        path = folder / f"site{index}.bed"
        people = range(rows.start, rows.stop)
        to_bed(
            path,
            cohort.dosages[rows],
            properties={
                "fid": [f"pop{cohort.populations[i]}" for i in people],
                "iid": [f"ind{i}" for i in people],
                "sid": snp_ids,
                "chromosome": [str(c) for c in cohort.chromosomes],
                "bp_position": cohort.positions,
                "allele_1": ["A"] * d,
                "allele_2": ["G"] * d,
            },
            count_A1=True,
            num_threads=1,
        )
        paths.append(path)
    return paths


def population_mix(cohort: Cohort) -> list[list[int]]:
    """How many individuals of each population each site holds (rows: sites)."""
    n_populations = len(POPULATION_SHARES)
    return [
        np.bincount(cohort.populations[rows], minlength=n_populations).tolist()
        for rows in site_slices(cohort.dosages.shape[0])
    ]


__all__ = ["Cohort", "population_mix", "simulate", "site_slices", "uneven_counts", "write_sites"]
