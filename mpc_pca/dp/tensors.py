"""Symmetric third-order tensors: packing, Gaussian noise, multilinear maps.

capeAGN (Imtiaz & Sarwate, JSTSP 2018, §5) perturbs the whitened third-order
moment ``M3(W, W, W)``, a symmetric ``K x K x K`` tensor, with a symmetric
Gaussian tensor "generated with the entries from" a vector of its
``N_e = C(K + 2, 3) = K (K + 1) (K + 2) / 6`` unique entries: each unique entry
``T[i, j, l]`` with ``i <= j <= l`` is drawn i.i.d. ``N(0, s^2)`` and copied to
its (up to six) permuted positions. Every entry therefore has variance
``s^2``, and the Gaussian mechanism's sensitivity is the L2 norm of the
unique-entry vector of the change, which never exceeds the Frobenius norm of
the change (the tensor analogue of Analyze Gauss' upper triangle).

Messages carry the packed unique entries (``N_e`` numbers), never the full
``K^3`` tensor.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.messages import expect_real_array

_PERMUTATIONS = tuple(itertools.permutations(range(3)))


def n_unique_entries(k: int) -> int:
    """``C(K + 2, 3)``: number of distinct entries of a symmetric ``K x K x K`` tensor."""
    return k * (k + 1) * (k + 2) // 6


def unique_indices(k: int) -> NDArray[np.intp]:
    """Index triples ``(i, j, l)`` with ``i <= j <= l``, shape ``(C(K + 2, 3), 3)``, lexicographic."""
    if k < 1:
        return np.zeros((0, 3), dtype=np.intp)
    return np.array(list(itertools.combinations_with_replacement(range(k), 3)), dtype=np.intp)


def pack_symmetric3(tensor: NDArray[np.float64]) -> NDArray[np.float64]:
    """The unique entries ``T[i, j, l]``, ``i <= j <= l``, of a symmetric cubic tensor."""
    arr = np.asarray(tensor, dtype=np.float64)
    if arr.ndim != 3 or not (arr.shape[0] == arr.shape[1] == arr.shape[2]):
        raise InputValidationError(f"expected a cubic third-order tensor, got shape {arr.shape}")
    idx = unique_indices(arr.shape[0])
    return arr[idx[:, 0], idx[:, 1], idx[:, 2]].copy()


def unpack_symmetric3(values: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """Rebuild the symmetric ``K x K x K`` tensor from its packed unique entries."""
    vec = np.asarray(values, dtype=np.float64)
    if vec.shape != (n_unique_entries(k),):
        raise InputValidationError(
            f"a symmetric {k}x{k}x{k} tensor has {n_unique_entries(k)} unique entries, got shape {vec.shape}"
        )
    idx = unique_indices(k)
    out = np.zeros((k, k, k), dtype=np.float64)
    for perm in _PERMUTATIONS:
        out[idx[:, perm[0]], idx[:, perm[1]], idx[:, perm[2]]] = vec
    return out


def symmetrize3(tensor: NDArray[np.float64]) -> NDArray[np.float64]:
    """Average of a cubic tensor over the six permutations of its modes."""
    arr = np.asarray(tensor, dtype=np.float64)
    return sum(np.transpose(arr, perm) for perm in _PERMUTATIONS) / 6.0  # type: ignore[return-value]


def symmetric_gaussian_tensor(k: int, scale: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Symmetric ``K x K x K`` tensor whose unique entries are i.i.d. ``N(0, scale^2)``.

    JSTSP 2018 §5: "site ``s`` draws a vector ``b_s`` of ``N_e = C(K+2, 3)``
    entries i.i.d. ``N(0, tau^2)``" and fills the symmetric tensor with them.
    Every entry of the result has variance ``scale^2``.
    """
    if not math.isfinite(scale) or scale < 0:
        raise InputValidationError(f"noise scale {scale!r} must be finite and >= 0")
    m = n_unique_entries(k)
    values = rng.normal(0.0, scale, size=m) if scale > 0 else np.zeros(m)
    return unpack_symmetric3(values, k)


def multilinear(
    tensor: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``T(A, B, C)[i, j, l] = sum_{p,q,r} T[p, q, r] A[p, i] B[q, j] C[r, l]`` (Anandkumar et al. 2014, §2)."""
    return np.einsum("pqr,pi,qj,rl->ijl", tensor, a, b, c, optimize=True)


def rank_one_sum(weights: NDArray[np.float64], vectors: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_k w_k v_k (x) v_k (x) v_k`` for vectors given as rows."""
    w = np.asarray(weights, dtype=np.float64)
    v = np.asarray(vectors, dtype=np.float64)
    return np.einsum("k,ki,kj,kl->ijl", w, v, v, v, optimize=True)


def expect_symmetric3(message: Any, sender: str, k: int) -> NDArray[np.float64]:
    """Check a received packed symmetric ``K x K x K`` tensor and rebuild it."""
    packed = expect_real_array(message, sender, (n_unique_entries(k),), "a packed symmetric tensor")
    return unpack_symmetric3(packed, k)
