"""Synthetic single topic models and spherical Gaussian mixtures with known parameters (capeAGN experiments).

No text corpus ships offline with the installed packages (scikit-learn's
20 newsgroups and similar are downloaded on first use), so capeAGN is
evaluated on these generators.

The recovery error against the known parameters is
:func:`mpc_pca.dp.recovery.recovery_error`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

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


#: Parameters of ``synthetic:stm`` / ``synthetic:mog`` (the command line's synthetic data).
SYNTHETIC_DEFAULTS = {
    "stm": {"n_words": 30, "n_topics": 3},
    "mog": {"n_features": 10, "n_components": 3, "sigma": 0.08},
}


def load_synthetic(spec: str) -> NDArray[np.float64]:
    """Rows of ``synthetic:MODEL[:N[:SEED]]``: a 3-topic model over 30 words or a 3-component mixture in 10-D.

    ``MODEL`` is ``stm`` (word counts, 10 words per document) or ``mog``
    (``|mu_k| = 0.5``, ``sigma = 0.08``); ``N`` defaults to 6000 rows and
    ``SEED`` to 0.

    Examples
    --------
    >>> load_synthetic("synthetic:stm:100:1").shape
    (100, 30)
    """
    fields = spec.split(":")
    if len(fields) < 2 or len(fields) > 4 or fields[0] != "synthetic" or fields[1] not in SYNTHETIC_DEFAULTS:
        raise InputValidationError(f"data spec {spec!r} is not synthetic:stm|mog[:N[:SEED]]")
    try:
        n = int(fields[2]) if len(fields) > 2 else 6000
        seed = int(fields[3]) if len(fields) > 3 else 0
    except ValueError as exc:
        raise InputValidationError(f"data spec {spec!r}: N and SEED must be integers") from exc
    if n < 1 or seed < 0:
        raise InputValidationError(f"data spec {spec!r}: need N >= 1 and SEED >= 0")
    rng = np.random.default_rng(seed)
    if fields[1] == "stm":
        return np.vstack(make_topic_model(n, **SYNTHETIC_DEFAULTS["stm"], rng=rng).parts)  # type: ignore[arg-type]
    return np.vstack(make_gaussian_mixture(n, **SYNTHETIC_DEFAULTS["mog"], rng=rng).parts)  # type: ignore[arg-type]
