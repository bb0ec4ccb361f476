"""Empirical moments of the two latent-variable models of capeAGN, and their sensitivities.

Imtiaz & Sarwate (JSTSP 2018, §5 and App. E) learn a single topic model (STM)
or a mixture of spherical Gaussians (MOG) from the moments of Anandkumar et
al. (JMLR 2014, §3.1 and Thm. 3.2), which for both models satisfy

    ``M2 = sum_k w_k mu_k mu_k^T``,  ``M3 = sum_k w_k mu_k (x) mu_k (x) mu_k``.

Single topic model (``model="stm"``)
    A site holds an ``N_s x D`` matrix of word **counts** (one document per
    row, ``D`` the vocabulary size; each word position is a one-hot vector
    ``x_p``). Anandkumar et al. use three words of a document,
    ``M2 = E[x_1 x_2^T]``, ``M3 = E[x_1 (x) x_2 (x) x_3]``; here every
    document contributes the average over **all ordered pairs / triples of
    distinct word positions** (a U-statistic with the same expectation and a
    smaller variance), computed from the counts ``c``:

    * pairs: ``(c c^T - diag(c)) / (L (L - 1))``, ``L = sum(c)``;
    * triples: ``(c^(x)3 - sum over the 3 placements of diag(c) (x) c + 2 diag3(c)) / (L (L - 1) (L - 2))``
      (inclusion-exclusion over coinciding positions).

    Both contributions are entry-wise non-negative with entries summing to
    1, so their Frobenius norm is at most 1 and replacing one document moves
    ``M2`` or ``M3`` by at most ``sqrt(2) / N`` in Frobenius norm (two
    non-negative tensors of norm <= 1): **Delta2 = Delta3 = sqrt(2)/N**, the
    paper's values (replace-one). Under add-remove (``N`` public) the change
    is one contribution: ``1/N``.

    Short documents. A document of ``L < 3`` words (a row of zeros included)
    has no triple of distinct word positions: it contributes zero to both
    ``M2`` and ``M3`` and still counts in ``N`` (a zero contribution keeps
    the bounds above, so the sensitivities stand). With ``p`` the share of
    documents of ``>= 3`` words (the model draws a document's length
    independently of its topic), the moments are ``p M2`` and ``p M3``, and
    ``p`` cancels exactly in the recovery (:mod:`mpc_pca.dp.agn_core`):
    ``W`` becomes ``W / sqrt(p)``, ``lambda_k`` becomes ``lambda_k / sqrt(p)``,
    ``B`` becomes ``sqrt(p) B``, so ``mu_k = lambda_k B v_k`` is unchanged and
    the weights, normalised, too. Only the signal against the fixed DP noise
    shrinks by ``p``; each site warns (:class:`ShortDocumentsWarning`) with its
    count. Keeping ``L = 2`` documents in ``M2`` alone would scale the two
    moments differently and bias the recovery.

Mixture of spherical Gaussians (``model="mog"``), common known variance ``sigma^2``
    ``M2 = E[x x^T] - sigma^2 I`` and
    ``M3 = E[x^(x)3] - sigma^2 sum_i (m (x) e_i (x) e_i + e_i (x) m (x) e_i + e_i (x) e_i (x) m)``,
    ``m = E[x]`` (Anandkumar et al. Thm. 3.2). Rows must satisfy
    ``||x|| <= 1`` (the paper's assumption). Sensitivities:

    * ``Delta2``: ``x x^T - x' x'^T`` has Frobenius norm ``<= sqrt(2)`` for unit
      rows, so **sqrt(2)/N** under replace-one; the paper's ``1/N`` is the
      add-remove value (or the spectral-norm bound, which the Gaussian
      mechanism cannot use), and is what ``neighbour="add-remove"`` gives;
    * ``Delta3 = 2/N + 6 D sigma^2 / N`` (the paper's value, both relations):
      ``||x^(x)3 - x'^(x)3||_F <= 2`` and each of the three correction terms
      moves by ``sigma^2 sqrt(D) ||x - x'|| <= 2 sqrt(D) sigma^2 <= 2 D sigma^2``.

Whitened third moment. The sites never build the ``D^3`` tensor: they
compute ``M3(W, W, W)`` (``K x K x K``) directly from ``W^T x``. Since
``||T(W, W, W)||_F <= ||W||_2^3 ||T||_F``, its sensitivity is
``||W||_2^3 Delta3`` (:func:`whitened_sensitivity`); ``W`` is public (a DP
output of the ``M2`` stage), so the bound is data-independent given ``W``.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.mechanisms import Neighbour, parse_neighbour
from protocols.errors import InputValidationError

MODELS = ("stm", "mog")

#: Fewest words a document must have to contribute to the single topic model's moments (a triple).
MIN_DOCUMENT_LENGTH = 3


class ShortDocumentsWarning(UserWarning):
    """Documents of fewer than three words contribute nothing to the single topic model's moments.

    Emitted by the site that holds them, with the count (local information,
    never sent). The documents are not changed or dropped: they count in
    ``N`` and contribute zero (module docstring), so the estimate is
    unchanged but the DP noise weighs more.
    """


def check_model(model: object) -> str:
    """Validate the latent-variable model name (``"stm"`` or ``"mog"``)."""
    if not isinstance(model, str) or model not in MODELS:
        raise InputValidationError(f"model={model!r} is not supported; choose one of {list(MODELS)}")
    return model


def check_sigma(model: str, sigma: object) -> float | None:
    """``sigma`` (the MOG's common standard deviation) must be given, finite and >= 0 for MOG; absent for STM.

    The single topic model has no noise parameter (Anandkumar et al. 2014,
    section 3.1), so a ``sigma`` given with ``model="stm"`` would be ignored:
    it is refused instead.
    """
    if model == "stm":
        if sigma is not None:
            raise InputValidationError(
                f"sigma={sigma!r} applies to the mixture-of-Gaussians model (model='mog') only; "
                "model='stm' (the single topic model) has no sigma: leave it out or choose model='mog'"
            )
        return None
    if sigma is None:
        raise InputValidationError(
            "model='mog' needs sigma, the common standard deviation of the spherical Gaussians "
            "(the sigma^2 corrections of M2 and M3 and the sensitivity Delta3 use it)"
        )
    if isinstance(sigma, bool) or not isinstance(sigma, Real) or not math.isfinite(float(sigma)) or sigma < 0:
        raise InputValidationError(f"sigma={sigma!r} must be a finite number >= 0")
    return float(sigma)


def check_documents(counts: NDArray[np.float64], index: int, *, warn: bool = False) -> NDArray[np.float64]:
    """Check that part ``index`` is a word-count matrix with a document of at least 3 words.

    Documents of fewer than ``MIN_DOCUMENT_LENGTH`` words are accepted as
    they are: they contribute zero to the moments (module docstring). With
    ``warn``, their count is reported as a :class:`ShortDocumentsWarning`
    (sites warn once, when they compute; the pre-flight checks do not).

    Raises
    ------
    InputValidationError
        For a vocabulary of one word (``n_features = 1``); naming the first
        offending row and its value, for a negative or non-integer count; or, when no document of the part has
        ``MIN_DOCUMENT_LENGTH`` words, the part's longest document (the site
        would contribute noise only).
    """
    arr = np.asarray(counts, dtype=np.float64)
    if arr.shape[1] < 2:
        raise InputValidationError(
            f"part {index} has n_features = {arr.shape[1]}: model='stm' needs a vocabulary of at least 2 "
            "words (with one word, every topic is that word and there is nothing to learn)"
        )
    bad = np.argwhere((arr < 0) | (arr != np.round(arr)))
    if bad.size:
        row, col = (int(v) for v in bad[0])
        raise InputValidationError(
            f"part {index} row {row} column {col} holds {float(arr[row, col])!r}; model='stm' needs "
            "non-negative integer word counts"
        )
    lengths = arr.sum(axis=1)
    short = int(np.count_nonzero(lengths < MIN_DOCUMENT_LENGTH))
    if short == arr.shape[0]:
        longest = int(lengths.max()) if lengths.size else 0
        raise InputValidationError(
            f"part {index}: none of its {arr.shape[0]} documents has {MIN_DOCUMENT_LENGTH} words (the longest "
            f"has {longest}); the single topic model's moments need three distinct word positions per document"
        )
    if short and warn:
        warnings.warn(
            f"part {index}: {short} of {arr.shape[0]} documents have fewer than {MIN_DOCUMENT_LENGTH} words; "
            "they count in N but contribute nothing to the moments (the DP noise weighs more)",
            ShortDocumentsWarning,
            stacklevel=2,
        )
    return arr


# -- single topic model -----------------------------------------------------------------------


def _stm_weights(counts: NDArray[np.float64], order: int) -> NDArray[np.float64]:
    """``1 / (N L (L-1) ... (L-order+1))`` per document, 0 for a document of fewer than 3 words."""
    lengths = counts.sum(axis=1)
    denom = np.ones_like(lengths)
    for j in range(order):
        denom = denom * (lengths - j)
    usable = lengths >= MIN_DOCUMENT_LENGTH
    return np.divide(1.0, counts.shape[0] * denom, out=np.zeros_like(lengths), where=usable)


def stm_second_moment(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """``M2`` of the single topic model: mean over documents of ``(c c^T - diag(c)) / (L (L - 1))``."""
    c = np.asarray(counts, dtype=np.float64)
    wt = _stm_weights(c, 2)
    return (c * wt[:, None]).T @ c - np.diag(wt @ c)


def stm_whitened_third_moment(
    counts: NDArray[np.float64], whitening: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``M3(W, W, W)`` of the single topic model from counts ``c`` and ``W`` (``D x K``).

    Per document, with ``y = W^T c``, ``P = W^T diag(c) W`` and
    ``R = sum_a c_a W_a (x) W_a (x) W_a``:
    ``(y^(x)3 - P (x) y - [P_il y_j] - y (x) P + 2 R) / (L (L - 1) (L - 2))``.
    ``W = I`` gives the full ``D x D x D`` moment.
    """
    c = np.asarray(counts, dtype=np.float64)
    w = np.asarray(whitening, dtype=np.float64)
    wt = _stm_weights(c, 3)
    y = c @ w
    cube = np.einsum("n,ni,nj,nl->ijl", wt, y, y, y, optimize=True)
    z = (c * wt[:, None]).T @ y  # sum_n wt_n c_n y_n^T, shape (D, K)
    pair = np.einsum("ai,aj,al->ijl", w, w, z, optimize=True)  # sum_n wt_n P_n (x) y_n
    diag = np.einsum("a,ai,aj,al->ijl", wt @ c, w, w, w, optimize=True)
    corrections = pair + np.transpose(pair, (0, 2, 1)) + np.transpose(pair, (2, 0, 1))
    return cube - corrections + 2.0 * diag


# -- mixture of spherical Gaussians ------------------------------------------------------------


def mog_second_moment(rows: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """``M2 = X^T X / N - sigma^2 I`` (Anandkumar et al. 2014, Thm. 3.2)."""
    x = np.asarray(rows, dtype=np.float64)
    return x.T @ x / x.shape[0] - sigma**2 * np.eye(x.shape[1])


def mog_whitened_third_moment(
    rows: NDArray[np.float64], whitening: NDArray[np.float64], sigma: float
) -> NDArray[np.float64]:
    """``M3(W, W, W)`` of the spherical mixture, ``y = W^T x``, ``G = W^T W``, ``m_W = W^T mean(x)``.

    ``mean(y^(x)3) - sigma^2 (m_W (x) G + [G_il m_j] + G (x) m_W)``; ``W = I``
    gives the full ``D x D x D`` moment.
    """
    x = np.asarray(rows, dtype=np.float64)
    w = np.asarray(whitening, dtype=np.float64)
    y = x @ w
    n = x.shape[0]
    cube = np.einsum("ni,nj,nl->ijl", y, y, y, optimize=True) / n
    mean = y.mean(axis=0)
    gram = w.T @ w
    term = np.einsum("i,jl->ijl", mean, gram)
    corrections = term + np.transpose(term, (1, 0, 2)) + np.transpose(term, (1, 2, 0))
    return cube - sigma**2 * corrections


# -- dispatch and sensitivities ------------------------------------------------------------------


def second_moment(model: str, data: NDArray[np.float64], sigma: float | None) -> NDArray[np.float64]:
    """The site's ``M2`` for ``model`` (symmetric ``D x D``)."""
    if model == "stm":
        return stm_second_moment(data)
    return mog_second_moment(data, float(sigma or 0.0))


def whitened_third_moment(
    model: str, data: NDArray[np.float64], whitening: NDArray[np.float64], sigma: float | None
) -> NDArray[np.float64]:
    """The site's ``M3(W, W, W)`` for ``model`` (symmetric ``K x K x K``)."""
    if model == "stm":
        return stm_whitened_third_moment(data, whitening)
    return mog_whitened_third_moment(data, whitening, float(sigma or 0.0))


def moment_sensitivities(
    model: str, n_samples: int, n_features: int, sigma: float | None, neighbour: Neighbour | str
) -> tuple[float, float]:
    """``(Delta2, Delta3)``: L2 sensitivities of a site's ``M2`` and (unwhitened) ``M3``.

    ======  ==========================  ============================
    model   replace-one (default)       add-remove (``N`` public)
    ======  ==========================  ============================
    stm     ``sqrt(2)/N``, ``sqrt(2)/N``  ``1/N``, ``1/N``
    mog     ``sqrt(2)/N``, ``(2 + 6 D sigma^2)/N``  ``1/N``, ``(2 + 6 D sigma^2)/N``
    ======  ==========================  ============================

    The paper (JSTSP 2018 App. E) gives ``sqrt(2)/N`` for STM and ``1/N``,
    ``2/N + 6 D sigma^2 / N`` for MOG; see the module docstring for the
    derivations and why MOG's ``Delta2`` is ``sqrt(2)/N`` under replace-one.
    """
    relation = parse_neighbour(neighbour)
    n = float(n_samples)
    replace = relation is Neighbour.REPLACE_ONE
    delta2 = (math.sqrt(2.0) if replace else 1.0) / n
    if model == "stm":
        return delta2, delta2
    s2 = float(sigma or 0.0) ** 2
    return delta2, (2.0 + 6.0 * n_features * s2) / n


def whitened_sensitivity(delta3: float, whitening: NDArray[np.float64]) -> float:
    """``||W||_2^3 Delta3``: sensitivity of ``M3(W, W, W)`` given the public whitening ``W``."""
    norm = float(np.linalg.norm(np.asarray(whitening, dtype=np.float64), 2))
    return norm**3 * delta3
