"""The two jobs of the benchmark: FedAvg of a logistic regression on scikit-learn's digits, and raw vectors.

``digits``: 1 500 of the 1 797 images split evenly over the nodes (partition
``i`` takes every ``n``-th row from ``i``), the last 297 held out; the model is
a multinomial logistic regression (64 x 10 weights, 10 biases) trained by full
batch gradient descent. ``vector``: node ``node_id`` sends a fresh uniform
vector in [-1, 1] each round (seeded by node and round), weight 1, so the
aggregate is the plain mean.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_digits

TRAIN = 1500
FEATURES, CLASSES = 64, 10
EPOCHS, LEARNING_RATE = 5, 0.5
#: Every update is clipped to this range before it is sent (the agreed range of both aggregators).
RANGE = 8.0


def digits() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scikit-learn's digits, pixels scaled to [0, 1]."""
    data = load_digits()
    return data.data / 16.0, data.target


def partition(index: int, count: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Node ``index``'s training rows out of ``count`` partitions."""
    x, y = digits()
    return x[:TRAIN][index::count], y[:TRAIN][index::count]


def initial(task: str, size: int) -> list[NDArray[np.float64]]:
    """The model's initial parameters (zeros)."""
    if task == "digits":
        return [np.zeros((FEATURES, CLASSES)), np.zeros(CLASSES)]
    return [np.zeros(size)]


def _softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def train(
    params: list[NDArray[np.float64]], x: NDArray[np.float64], y: NDArray[np.int64]
) -> list[NDArray[np.float64]]:
    """``EPOCHS`` full-batch gradient steps of the logistic regression from ``params``, clipped to ``RANGE``."""
    w, b = params[0].copy(), params[1].copy()
    onehot = np.eye(CLASSES)[y]
    for _ in range(EPOCHS):
        grad = _softmax(x @ w + b) - onehot
        w -= LEARNING_RATE * x.T @ grad / len(y)
        b -= LEARNING_RATE * grad.mean(axis=0)
    return [np.clip(w, -RANGE, RANGE), np.clip(b, -RANGE, RANGE)]


def accuracy(params: list[NDArray[np.float64]]) -> float:
    """Accuracy on the 297 held-out digits."""
    x, y = digits()
    return float(np.mean(np.argmax(x[TRAIN:] @ params[0] + params[1], axis=1) == y[TRAIN:]))


def vector(node: int, server_round: int, size: int) -> list[NDArray[np.float64]]:
    """Node ``node``'s random vector of round ``server_round``."""
    return [np.random.default_rng([node, server_round]).uniform(-1.0, 1.0, size)]
