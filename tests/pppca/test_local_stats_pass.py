"""The providers' one-pass local statistics (mpc_pca.pppca.local_stats): Gram matrix, column sums and
peaks read together in cache-sized blocks, with no n x d temporary: peaks (and so the agreed exponents)
bit-identical to the one-shot forms, the Gram matrix and sums within their rounding bound."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mpc_pca.pppca import local_stats
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.local_stats import (
    LocalStatistics,
    add_rank_one,
    column_peaks,
    gram_sums_and_peaks,
    sums_and_peaks,
)
from mpc_pca.pppca.preflight import preflight
from mpc_pca.pppca.scaling import agree_exponents, exponents_of_peaks, normalized, statistics_exponents
from protocols.backends import make_backend
from protocols.errors import InputValidationError
from protocols.triangle import from_upper_triangle, upper_triangle


def block_rows(d: int) -> int:
    return local_stats._scan_rows(d)


def one_shot(data: np.ndarray) -> LocalStatistics:
    """The statistics as computed before the blocked pass: one sum, one Gram product, one abs copy
    (the cancellation fallback as it was)."""
    n = data.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        sums = data.sum(axis=0)
        mean = sums / n
        scatter = upper_triangle(data.T @ data)
        add_rank_one(scatter, mean, -float(n))
        spread = np.abs(np.diag(from_upper_triangle(scatter, data.shape[1])))
        if (
            np.any(n * mean**2 > 1e8 * np.maximum(spread, np.finfo(float).tiny))
            and n > 1
            and np.all(np.isfinite(sums))
        ):
            scatter = upper_triangle(local_stats._centred_scatter(data, mean))
    return LocalStatistics(n, sums, scatter, np.max(np.abs(data), axis=0))


def assert_within_rounding(got: LocalStatistics, want: LocalStatistics, data: np.ndarray) -> None:
    """Peaks bit-identical; sums and scatter within a few ``n eps`` of the one-shot forms.

    Both forms round every partial sum: each sum is off by at most ``n eps sum_r |x_r|`` and each
    Gram entry by ``n eps sum_r |x_ri x_rj|``; the scatter ``G - s s^T / n`` then by at most
    ``4 n eps sqrt(G_ii G_jj)`` (Cauchy-Schwarz). A block added twice or left out is off by far more.
    """
    n = data.shape[0]
    eps = np.finfo(float).eps
    assert got.n_rows == want.n_rows
    assert got.column_peaks.tobytes() == want.column_peaks.tobytes()
    absolute = np.abs(data)
    np.testing.assert_array_less(
        np.abs(got.column_sums - want.column_sums), 2 * n * eps * absolute.sum(axis=0) + 1e-300
    )
    diagonal = np.einsum("ij,ij->j", data, data)
    scale = upper_triangle(np.sqrt(np.outer(diagonal, diagonal)))
    np.testing.assert_array_less(
        np.abs(got.scatter_triangle - want.scatter_triangle), 8 * n * eps * scale + 1e-300
    )


def assert_bit_identical(got: LocalStatistics, want: LocalStatistics) -> None:
    assert got.n_rows == want.n_rows
    for name in ("column_sums", "scatter_triangle", "column_peaks"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.tobytes() == b.tobytes(), name  # bytes: -0.0 and 0.0 differ too


@pytest.mark.parametrize("d", [1, 2, 3, 17, 100])
@pytest.mark.parametrize("extra", [-1, 0, 1, None])
def test_sums_and_peaks_equal_the_one_shot_forms_at_every_block_boundary(d, extra):
    rows = block_rows(d)
    n = 5 if extra is None else 2 * rows + extra
    rng = np.random.default_rng(d * 1000 + n)
    data = rng.normal(size=(n, d)) * rng.uniform(1e-3, 1e5, size=d) + rng.normal(size=d) * 1e4
    for view in (data, np.asfortranarray(data), data[::2], data[:, ::-1]):
        sums, peaks = sums_and_peaks(view)
        assert sums.tobytes() == view.sum(axis=0).tobytes()
        assert peaks.tobytes() == np.max(np.abs(view), axis=0).tobytes()
        assert column_peaks(view).tobytes() == peaks.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    data=arrays(
        np.float64,
        st.tuples(st.integers(1, 3000), st.integers(2, 6)),
        elements=st.sampled_from(
            [0.0, -0.0, 5e-324, -1e-310, 1e-300, -3e-7, 0.25, -0.5, 1.0, 7.0, -1e9, 3e200]
        ),
    )
)
def test_statistics_of_a_one_block_part_are_bit_identical_to_the_one_shot_computation(data):
    """At most 3,000 rows of at most 6 columns: one block of the fused pass, which is the one-shot form."""
    with np.errstate(over="ignore", invalid="ignore"):
        got = LocalStatistics.of(data)
        want = one_shot(data)
    if not np.all(np.isfinite(want.scatter_triangle)):
        return  # overflowing parts are rejected by the callers, whatever their bits
    assert_bit_identical(got, want)
    assert statistics_exponents(got).tolist() == exponents_of_peaks(np.max(np.abs(data), axis=0)).tolist()


def test_the_scatter_and_exponents_of_a_large_part_are_the_one_shot_ones_within_rounding():
    """50,000 rows: 20 blocks of the fused pass, the last one partial."""
    rng = np.random.default_rng(7)
    data = rng.normal(size=(50_000, 40)) * np.logspace(-6, 6, 40) + 3.0
    got = LocalStatistics.of(data)
    assert_within_rounding(got, one_shot(data), data)
    assert statistics_exponents(got).tolist() == exponents_of_peaks(np.max(np.abs(data), axis=0)).tolist()


@pytest.mark.parametrize("d", [1, 2, 3, 17, 100, 256, 257])
@pytest.mark.parametrize("extra", [-1, 0, 1, 63])
def test_the_fused_pass_covers_every_row_at_every_block_boundary(d, extra):
    """Gram matrix, sums and peaks of 2 blocks and a tail (rows ``2 B + extra``), against the one-shot forms;
    d = 257 takes the wide-row path, a Fortran-ordered copy and a strided view the unfused one."""
    rows = block_rows(d)
    n = 2 * rows + extra
    rng = np.random.default_rng(d * 1000 + n)
    data = rng.normal(size=(n, d)) * rng.uniform(1e-3, 1e5, size=d) + rng.normal(size=d) * 1e4
    data[n - 1, 0] = -1e9  # the extreme value in the tail: a tail left out of the peaks fails
    eps = np.finfo(float).eps
    for view in (data, np.asfortranarray(data), data[::2]):
        sums, peaks, gram = gram_sums_and_peaks(view)
        m = view.shape[0]
        assert peaks.tobytes() == np.max(np.abs(view), axis=0).tobytes()
        absolute = np.abs(view)
        np.testing.assert_array_less(np.abs(sums - view.sum(axis=0)), 2 * m * eps * absolute.sum(axis=0))
        np.testing.assert_array_less(np.abs(gram - view.T @ view), 2 * m * eps * (absolute.T @ absolute))
        np.testing.assert_array_equal(gram, gram.T)


def test_a_column_of_negative_zeros_sums_as_numpy_does_and_peaks_at_plus_zero():
    data = np.zeros((3 * block_rows(4) + 5, 4))
    data[:, 1] = -0.0
    data[7, 2] = -2.5
    sums, peaks = sums_and_peaks(data)
    assert sums.tobytes() == data.sum(axis=0).tobytes()
    assert peaks.tobytes() == np.array([0.0, 0.0, 2.5, 0.0]).tobytes()


def test_no_rows_give_zero_sums_and_peaks():
    sums, peaks = sums_and_peaks(np.empty((0, 3)))
    assert sums.tolist() == [0.0] * 3 and peaks.tolist() == [0.0] * 3


def test_the_pass_allocates_no_copy_of_the_rows():
    """Issue 28: peak memory above the data at most 5 % of the data (was +100 % for np.abs(X))."""
    data = np.random.default_rng(3).normal(size=(200_000, 60))  # 96 MB
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        LocalStatistics.of(data)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= 0.05 * data.nbytes, (
        f"peak {peak / 2**20:.1f} MiB above {data.nbytes / 2**20:.0f} MiB of rows"
    )


class ListPart(ChunkedPart):
    def __init__(self, blocks):
        self.blocks = blocks
        self.n_features = blocks[0].shape[1]
        self.passes = 0

    def chunks(self):
        self.passes += 1
        yield from self.blocks


def test_chunked_statistics_carry_the_peaks_and_preflight_reads_the_chunks_once():
    rng = np.random.default_rng(11)
    blocks = [rng.normal(size=(n, 5)) * [1e-3, 1, 10, 1e4, 0.5] for n in (300, 1200, 7)]
    part = ListPart(blocks)
    stats = part.statistics()
    pooled = np.vstack(blocks)
    assert stats.column_peaks.tobytes() == np.max(np.abs(pooled), axis=0).tobytes()
    assert part.column_peaks().tobytes() == stats.column_peaks.tobytes()
    part.passes = 0
    other = rng.normal(size=(50, 5))
    _, _, _, exponents = preflight([part, other], 2, make_backend("additive"))
    assert part.passes == 1  # statistics and exponents from one read of the chunks
    want = agree_exponents([exponents_of_peaks(np.max(np.abs(b), axis=0)).tolist() for b in (pooled, other)])
    assert exponents == want


def test_merge_and_normalization_keep_the_peaks():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(40, 3)), rng.normal(size=(9, 3)) * 100
    merged = LocalStatistics.of(a).merge(LocalStatistics.of(b))
    assert merged.column_peaks.tolist() == np.max(np.abs(np.vstack([a, b])), axis=0).tolist()
    scaled = normalized(merged, [2, -1, 7])
    assert scaled.column_peaks.tolist() == (merged.column_peaks * [0.25, 2.0, 2.0**-7]).tolist()


def test_statistics_without_peaks_are_refused_for_the_exponents():
    stats = LocalStatistics(2, np.zeros(2), np.zeros(3))
    with pytest.raises(InputValidationError, match="no column peaks"):
        statistics_exponents(stats)


def test_a_deployed_provider_computes_its_statistics_once(monkeypatch):
    """Announcement and role share one pass over the rows (it was made twice per provider)."""
    from mpc_pca.deploy import run_threads

    calls = []
    original = LocalStatistics.of.__func__

    def counted(cls, data):
        calls.append(data.shape)
        return original(cls, data)

    monkeypatch.setattr(LocalStatistics, "of", classmethod(counted))
    rng = np.random.default_rng(9)
    parts = [rng.normal(size=(40 + i, 4)) for i in range(3)]
    result = run_threads("pppca-ss", parts, {"n_components": 2})
    assert len(result["components"]) == 2
    assert sorted(calls) == sorted(p.shape for p in parts)


def per_row_rank_one(packed: np.ndarray, v: np.ndarray, weight: float) -> np.ndarray:
    """The per-row update add_rank_one replaced (one numpy call per row)."""
    offsets = np.concatenate([[0], np.cumsum(np.arange(v.shape[0], 0, -1))])
    scaled = weight * v
    for i in range(v.shape[0]):
        packed[offsets[i] : offsets[i + 1]] += scaled[i] * v[i:]
    return packed


@pytest.mark.parametrize("d", [1, 3, 100, 257, 600])
def test_rank_one_update_and_normalization_by_row_groups_are_bit_identical_to_the_row_loops(d):
    rng = np.random.default_rng(d)
    packed = rng.normal(size=d * (d + 1) // 2) * 1e3
    v = rng.normal(size=d) * rng.uniform(1e-3, 1e3, size=d)
    want = per_row_rank_one(packed.copy(), v, -123.456)
    assert add_rank_one(packed.copy(), v, -123.456).tobytes() == want.tobytes()
    exponents = rng.integers(-40, 40, size=d).tolist()
    stats = LocalStatistics(5, rng.normal(size=d), packed.copy())
    factor = np.ldexp(1.0, -np.asarray(exponents))
    offsets = np.concatenate([[0], np.cumsum(np.arange(d, 0, -1))])
    scaled = packed.copy()
    for i in range(d):
        scaled[offsets[i] : offsets[i + 1]] *= factor[i] * factor[i:]
    assert normalized(stats, exponents).scatter_triangle.tobytes() == scaled.tobytes()
