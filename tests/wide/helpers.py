"""Data and reference computations shared by the wide-data tests (dense matrices here only, in tests)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.wide.site import site_product, site_sums
from mpc_pca.wide.subspace import SubspaceResult, randomized_pca

#: Top eigenvalues well apart, then a flat bulk: a clear gap after the fifth.
SPIKES = np.array([40.0, 30.0, 20.0, 12.0, 8.0])


def gapped_rows(n: int, d: int, seed: int = 0, offset: float = 3.0) -> np.ndarray:
    """``n x d`` rows with five spikes (:data:`SPIKES`) over noise of variance 0.25, shifted by ``offset``."""
    rng = np.random.default_rng(seed)
    loadings = np.linalg.qr(rng.normal(size=(d, SPIKES.size)))[0]
    latent = rng.normal(size=(n, SPIKES.size)) * np.sqrt(SPIKES)
    columns = rng.uniform(0.5, 2.0, size=d)  # uneven column scales, so standardizing changes the answer
    return (latent @ loadings.T + 0.5 * rng.normal(size=(n, d)) + offset) * columns


def split(rows: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """``rows`` cut into consecutive parts of the given sizes."""
    assert sum(sizes) == rows.shape[0]
    return [np.ascontiguousarray(p) for p in np.split(rows, np.cumsum(sizes)[:-1])]


def dense_covariance(rows: np.ndarray, standardize: bool = False) -> np.ndarray:
    """The pooled (standardized) covariance, formed densely: the test's ground truth."""
    centred = rows - rows.mean(axis=0)
    if standardize:
        centred = centred / rows.std(axis=0)
    return centred.T @ centred / (rows.shape[0] - 1)


def top_eigh(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` eigenvalues (decreasing) and eigenvectors as rows, from numpy's ``eigh``."""
    values, vectors = np.linalg.eigh(matrix)
    return values[::-1][:k], vectors[:, ::-1][:, :k].T


def subspace_sine(a: np.ndarray, b: np.ndarray) -> float:
    """Sine of the largest principal angle between the row spaces of two ``k x d`` orthonormal sets."""
    return float(np.linalg.norm(a.T - b.T @ (b @ a.T), 2))


def aligned(estimate: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """``estimate``'s rows with the signs of ``exact``'s."""
    return estimate * np.sign(np.sum(estimate * exact, axis=1))[:, None]


def reference(parts: Sequence[np.ndarray], k: int, **options: object) -> SubspaceResult:
    """The plaintext reference over ``parts`` (``standardize`` given: sums of squares passed)."""
    standardize = bool(options.pop("standardize", False))
    stats = [site_sums(p) for p in parts]
    result, _ = randomized_pca(
        lambda block: np.sum([site_product(p, block) for p in parts], axis=0),
        np.sum([s.sums for s in stats], axis=0),
        sum(s.n_rows for s in stats),
        k,
        column_squares=np.sum([s.squares for s in stats], axis=0) if standardize else None,
        **options,  # type: ignore[arg-type]
    )
    return result


class BlocksPart(ChunkedPart):
    """An array read in chunks of the given sizes (the last may be shorter): a file read in chunks."""

    def __init__(self, rows: np.ndarray, chunk: int) -> None:
        self.rows = rows
        self.chunk = chunk
        self.n_features = rows.shape[1]

    def chunks(self) -> Iterator[np.ndarray]:
        for start in range(0, self.rows.shape[0], self.chunk):
            yield np.ascontiguousarray(self.rows[start : start + self.chunk])
