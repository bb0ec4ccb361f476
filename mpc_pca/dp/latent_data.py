"""Synthetic single topic models and spherical Gaussian mixtures with known parameters, and recovery error.

No text corpus ships offline with the installed packages (scikit-learn's
20 newsgroups and similar are downloaded on first use), so capeAGN is
evaluated on these generators.

Recovery error: the estimated components are matched to the true ones by the
Hungarian assignment (:func:`scipy.optimize.linear_sum_assignment`) on the
pairwise Euclidean distances, and the error is the relative Frobenius norm
``sqrt(sum_k ||mu_k - mu_hat_pi(k)||^2) / sqrt(sum_k ||mu_k||^2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from protocols.errors import InputValidationError


@dataclass
class LatentSample:
    """Data split into sites plus the parameters that generated it."""

    parts: list[NDArray[np.float64]]
    components: NDArray[np.float64]
    weights: NDArray[np.float64]
    sigma: float | None = None


def _split(data: NDArray[np.float64], n_sites: int) -> list[NDArray[np.float64]]:
    if n_sites < 1 or n_sites > data.shape[0]:
        raise InputValidationError(f"n_sites={n_sites} must lie in [1, {data.shape[0]}]")
    return [np.ascontiguousarray(p) for p in np.array_split(data, n_sites)]


def _check_weights(weights: NDArray[np.float64] | None, k: int) -> NDArray[np.float64]:
    if weights is None:
        return np.full(k, 1.0 / k)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k,) or np.any(w <= 0) or not np.isclose(w.sum(), 1.0):
        raise InputValidationError(f"weights must be {k} positive numbers summing to 1, got {w!r}")
    return w


def make_topic_model(
    n_documents: int,
    n_words: int = 30,
    n_topics: int = 3,
    *,
    document_length: int = 10,
    concentration: float = 0.1,
    weights: NDArray[np.float64] | None = None,
    n_sites: int = 1,
    rng: np.random.Generator,
) -> LatentSample:
    """Documents of a single topic model as word-count rows.

    Topic-word distributions ``mu_k ~ Dirichlet(concentration)`` over
    ``n_words`` words; each document picks one topic ``h ~ w`` and draws
    ``document_length`` words i.i.d. from ``mu_h``.
    """
    w = _check_weights(weights, n_topics)
    topics = rng.dirichlet(np.full(n_words, concentration), size=n_topics)
    labels = rng.choice(n_topics, size=n_documents, p=w)
    counts = np.zeros((n_documents, n_words))
    for k in range(n_topics):
        idx = np.flatnonzero(labels == k)
        counts[idx] = rng.multinomial(document_length, topics[k], size=idx.size)
    return LatentSample(_split(counts, n_sites), topics, w)


def make_gaussian_mixture(
    n_samples: int,
    n_features: int = 10,
    n_components: int = 3,
    *,
    mean_norm: float = 0.5,
    sigma: float = 0.1,
    weights: NDArray[np.float64] | None = None,
    n_sites: int = 1,
    rng: np.random.Generator,
) -> LatentSample:
    """Rows of a mixture of spherical Gaussians ``N(mu_k, sigma^2 I)``.

    Means are random directions (Gaussian, normalised) of length
    ``mean_norm``. Keep ``mean_norm^2 + n_features sigma^2`` well below 1 so
    that few rows exceed the norm bound capeAGN assumes (those are clipped or
    refused by the estimator, per its ``row_norm``).
    """
    w = _check_weights(weights, n_components)
    means = rng.normal(size=(n_components, n_features))
    means *= mean_norm / np.linalg.norm(means, axis=1, keepdims=True)
    labels = rng.choice(n_components, size=n_samples, p=w)
    rows = means[labels] + sigma * rng.normal(size=(n_samples, n_features))
    return LatentSample(_split(rows, n_sites), means, w, sigma)


@dataclass(frozen=True)
class Recovery:
    """Errors after matching estimated to true components."""

    component_error: float
    weight_error: float
    assignment: tuple[int, ...]


def recovery_error(
    true_components: NDArray[np.float64],
    true_weights: NDArray[np.float64],
    components: NDArray[np.float64],
    weights: NDArray[np.float64],
) -> Recovery:
    """Match rows by the Hungarian assignment on Euclidean distance; relative errors.

    ``component_error = ||M - M_hat[pi]||_F / ||M||_F`` and
    ``weight_error = ||w - w_hat[pi]||_1``; ``assignment[k]`` is the estimated
    row matched to true row ``k``.
    """
    truth = np.asarray(true_components, dtype=np.float64)
    est = np.asarray(components, dtype=np.float64)
    if truth.shape != est.shape:
        raise InputValidationError(f"component shapes differ: {truth.shape} vs {est.shape}")
    cost = np.linalg.norm(truth[:, None, :] - est[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(cost)
    order = cols[np.argsort(rows)]
    err = float(np.linalg.norm(truth - est[order]) / np.linalg.norm(truth))
    werr = float(np.abs(np.asarray(true_weights) - np.asarray(weights)[order]).sum())
    return Recovery(err, werr, tuple(int(i) for i in order))
