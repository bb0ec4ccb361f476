"""Moments and sensitivities of the single topic model and the spherical Gaussian mixture (capeAGN)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mpc_pca.dp.moments import (
    ShortDocumentsWarning,
    check_documents,
    check_sigma,
    mog_second_moment,
    mog_whitened_third_moment,
    moment_sensitivities,
    stm_second_moment,
    stm_whitened_third_moment,
    whitened_sensitivity,
)
from mpc_pca.dp.tensors import multilinear
from protocols.errors import InputValidationError


def brute_force_stm(documents, d):
    """Average over documents of the mean over ordered pairs / triples of distinct positions."""
    m2, m3 = np.zeros((d, d)), np.zeros((d, d, d))
    eye = np.eye(d)
    for doc in documents:
        words = eye[doc]
        pairs = list(itertools.permutations(range(len(doc)), 2))
        triples = list(itertools.permutations(range(len(doc)), 3))
        m2 += sum(np.outer(words[i], words[j]) for i, j in pairs) / len(pairs)
        m3 += sum(np.einsum("i,j,l->ijl", words[i], words[j], words[m]) for i, j, m in triples) / len(triples)
    return m2 / len(documents), m3 / len(documents)


def counts_of(documents, d):
    return np.array([np.bincount(doc, minlength=d) for doc in documents], dtype=np.float64)


def test_stm_moments_equal_the_distinct_position_average():
    rng = np.random.default_rng(0)
    d = 6
    documents = [rng.integers(0, d, size=n) for n in (3, 4, 5, 7)] + [np.array([2, 2, 2, 2])]
    m2, m3 = brute_force_stm(documents, d)
    counts = counts_of(documents, d)
    np.testing.assert_allclose(stm_second_moment(counts), m2, atol=1e-15)
    np.testing.assert_allclose(stm_whitened_third_moment(counts, np.eye(d)), m3, atol=1e-15)
    w = rng.normal(size=(d, 3))
    np.testing.assert_allclose(stm_whitened_third_moment(counts, w), multilinear(m3, w, w, w), atol=1e-13)


def test_short_documents_are_kept_counted_in_n_and_contribute_zero():
    """Documents of < 3 words stay (unchanged, counted in N) and add nothing: the moments scale by the usable share."""
    rng = np.random.default_rng(2)
    d = 5
    usable = counts_of([rng.integers(0, d, size=n) for n in (3, 4, 6, 9)], d)
    short = np.array([[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 1, 0]], dtype=np.float64)
    both = np.vstack([usable, short])
    with pytest.warns(ShortDocumentsWarning, match=r"part 3: 3 of 7 documents have fewer than 3 words"):
        checked = check_documents(both, 3, warn=True)
    np.testing.assert_array_equal(checked, both)
    share = usable.shape[0] / both.shape[0]
    np.testing.assert_allclose(stm_second_moment(both), share * stm_second_moment(usable), atol=1e-15)
    w = rng.normal(size=(d, 2))
    np.testing.assert_allclose(
        stm_whitened_third_moment(both, w), share * stm_whitened_third_moment(usable, w), atol=1e-14
    )
    # the sensitivity bound holds with a short document among the neighbours (its contribution is zero)
    other = both.copy()
    other[0] = [0, 0, 0, 0, 0]
    assert np.linalg.norm(stm_second_moment(both) - stm_second_moment(other)) <= math.sqrt(2) / both.shape[0]


def test_mog_moments_match_their_definition():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(9, 4)) / 3
    sigma = 0.3
    mean = x.mean(axis=0)
    m3 = np.einsum("ni,nj,nl->ijl", x, x, x) / 9
    for e in np.eye(4):
        m3 -= sigma**2 * (
            np.einsum("i,j,l->ijl", mean, e, e)
            + np.einsum("i,j,l->ijl", e, mean, e)
            + np.einsum("i,j,l->ijl", e, e, mean)
        )
    np.testing.assert_allclose(mog_second_moment(x, sigma), x.T @ x / 9 - sigma**2 * np.eye(4), atol=1e-15)
    np.testing.assert_allclose(mog_whitened_third_moment(x, np.eye(4), sigma), m3, atol=1e-15)
    w = rng.normal(size=(4, 2))
    np.testing.assert_allclose(mog_whitened_third_moment(x, w, sigma), multilinear(m3, w, w, w), atol=1e-14)


def test_stm_population_moments_are_the_mixture_moments():
    rng = np.random.default_rng(2)
    topics = rng.dirichlet(np.full(5, 0.5), size=2)
    weights = np.array([0.3, 0.7])
    labels = rng.choice(2, size=200_000, p=weights)
    counts = np.stack([rng.multinomial(6, topics[h]) for h in labels[:20_000]]).astype(float)
    m2 = (topics.T * weights) @ topics
    m3 = np.einsum("k,ki,kj,kl->ijl", weights, topics, topics, topics)
    assert np.abs(stm_second_moment(counts) - m2).max() < 0.01
    assert np.abs(stm_whitened_third_moment(counts, np.eye(5)) - m3).max() < 0.01


def test_replacing_one_row_moves_the_moments_by_at_most_the_sensitivity():
    rng = np.random.default_rng(3)
    d, n = 6, 5
    delta2, delta3 = moment_sensitivities("stm", n, d, None, "replace-one")
    assert delta2 == delta3 == pytest.approx(math.sqrt(2) / n)
    base = counts_of([rng.integers(0, d, size=4) for _ in range(n)], d)
    worst2 = worst3 = 0.0
    for trial in range(300):
        other = base.copy()
        other[0] = np.bincount(rng.integers(0, d, size=rng.integers(3, 8)), minlength=d)
        if trial == 0:  # disjoint vocabularies: the extreme case
            base[0], other[0] = 0, 0
            base[0, :3], other[0, 3:] = 1, 1
        worst2 = max(worst2, np.linalg.norm(stm_second_moment(base) - stm_second_moment(other)))
        eye = np.eye(d)
        change = stm_whitened_third_moment(base, eye) - stm_whitened_third_moment(other, eye)
        worst3 = max(worst3, np.linalg.norm(change))
    assert worst2 <= delta2 + 1e-12 and worst3 <= delta3 + 1e-12
    sigma = 0.2
    d2, d3 = moment_sensitivities("mog", n, d, sigma, "replace-one")
    assert (d2, d3) == pytest.approx((math.sqrt(2) / n, (2 + 6 * d * sigma**2) / n))
    assert moment_sensitivities("mog", n, d, sigma, "add-remove")[0] == pytest.approx(1 / n)
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = x.copy()
    y[0] = -x[0]  # antipodal replacement maximises ||x^(x)3 - x'^(x)3||
    eye = np.eye(d)
    change = mog_whitened_third_moment(x, eye, sigma) - mog_whitened_third_moment(y, eye, sigma)
    assert 1 / n < np.linalg.norm(change) <= d3
    w = rng.normal(size=(d, 2))
    assert np.linalg.norm(multilinear(change, w, w, w)) <= whitened_sensitivity(d3, w)


def test_document_and_sigma_checks_name_the_value_and_limit():
    with pytest.raises(
        InputValidationError, match=r"none of its 2 documents has 3 words \(the longest has 2\)"
    ):
        check_documents(np.array([[1.0, 1.0], [0.0, 1.0]]), 0)
    with pytest.raises(InputValidationError, match=r"row 0 column 1 holds 0.5"):
        check_documents(np.array([[3.0, 0.5]]), 0)
    with pytest.raises(InputValidationError, match=r"part 2 has n_features = 1"):
        check_documents(np.array([[3.0], [4.0]]), 2)
    with pytest.raises(InputValidationError, match="model='mog' needs sigma"):
        check_sigma("mog", None)
    with pytest.raises(InputValidationError, match=r"sigma=-1.0 must be a finite number >= 0"):
        check_sigma("mog", -1.0)
