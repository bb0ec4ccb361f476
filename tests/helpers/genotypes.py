"""Small PLINK 1 filesets for the genotype tests, written with ``bed-reader``'s ``to_bed``."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def genotypes(n: int, d: int, seed: int = 0, missing: float = 0.1) -> np.ndarray:
    """``n x d`` dosages 0/1/2 with about ``missing`` of the calls missing (NaN), every SNP called at least once."""
    rng = np.random.default_rng(seed)
    frequency = rng.uniform(0.05, 0.95, size=d)
    values = rng.binomial(2, frequency, size=(n, d)).astype(np.float64)
    values[rng.random((n, d)) < missing] = np.nan
    values[0, np.isnan(values).all(axis=0)] = 1.0
    return values


def write(path: Path, values: np.ndarray, ids=None, alleles=("A", "G"), positions=None) -> Path:
    n, d = values.shape
    ids = [f"rs{j}" for j in range(d)] if ids is None else list(ids)
    from bed_reader import to_bed

    to_bed(
        path,
        values,
        properties={
            "iid": [f"person{i}" for i in range(n)],
            "sid": ids,
            "chromosome": ["1"] * d,
            "bp_position": [1000 + 10 * int(s.removeprefix("rs")) for s in ids]
            if positions is None
            else positions,
            "allele_1": [alleles[0]] * d,
            "allele_2": [alleles[1]] * d,
        },
    )
    return path
