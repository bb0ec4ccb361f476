"""The wide benchmark's figure: the spectrum found against the exact one, the PCs by population, the timings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.studies.plotting import pyplot, save


def plot(payload: dict[str, Any], scores: np.ndarray, populations: np.ndarray, path: Path) -> Path:
    """Three panels: eigenvalues (exact, secure, scikit-learn), PC1 vs PC2 of the secure scores, run times."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    refs = payload["versus_exact"]
    ranks = np.arange(1, payload["k"] + 1)
    axes[0].plot(ranks, refs["exact_eigenvalues"], "k-", lw=3, alpha=0.4, label="exact (Gram eigh)")
    axes[0].plot(ranks, refs["secure_eigenvalues"], "o", mfc="none", label="secure pppca-randomized")
    axes[0].plot(ranks, refs["sklearn_eigenvalues"], "x", label="scikit-learn randomized_svd")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("component")
    axes[0].set_title("eigenvalues of the standardized covariance")
    axes[0].legend(fontsize=8)
    for population in np.unique(populations):
        mine = populations == population
        axes[1].scatter(scores[mine, 0], scores[mine, 1], s=3, alpha=0.5, label=f"population {population}")
    axes[1].set_xlabel("PC1 (secure, each site's own scores)")
    axes[1].set_ylabel("PC2")
    agreement = payload["clusters"]["secure_vs_exact"]
    axes[1].set_title(f"k-means on PC1-4: {100 * agreement:.2f} % as on the exact PCs")
    axes[1].legend(fontsize=7, markerscale=3)
    runs = payload["in_memory"]
    streamed = payload["streamed"]
    bars = {
        "secure\n(arrays)": runs["secure"]["wall_seconds"],
        "plaintext\n(pooled)": runs["plaintext_pooled"]["wall_seconds"],
    }
    if streamed is not None:
        bars["secure\n(.bed stream)"] = streamed["secure"]["wall_seconds"]
        bars["plaintext\n(.bed stream)"] = streamed["plaintext_same_files"]["wall_seconds"]
    bars["sklearn\nrandomized_svd"] = refs["sklearn_randomized_svd"]["wall_seconds"]
    bars["exact\n(Gram eigh)"] = refs["exact_gram_eigh"]["wall_seconds"]
    axes[2].bar(range(len(bars)), list(bars.values()), color="tab:blue")
    axes[2].set_xticks(range(len(bars)), list(bars), fontsize=7, rotation=35, ha="right")
    axes[2].set_ylabel("wall seconds, one BLAS thread")
    axes[2].set_title("run times in one process")
    fig.suptitle(
        f"pppca-randomized: {payload['n_individuals']:,} individuals x {payload['n_snps']:,} SNPs, "
        f"5 sites, 5 populations, k = {payload['k']}"
    )
    fig.tight_layout()
    return save(fig, path)


__all__ = ["plot"]
