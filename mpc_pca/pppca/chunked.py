"""Provider parts larger than memory: local statistics chunk by chunk, or on a Dask cluster.

A PPPCA provider only ever sends sums of its rows (Liu et al., AAAI 2020,
Alg. 2 steps 1 and 5), so it never needs all its rows in memory at once. A
:class:`ChunkedPart` reads a block of rows at a time and folds each block's
:class:`~mpc_pca.pppca.local_stats.LocalStatistics` into a running total with
the pairwise update of Chan, Golub and LeVeque (1979), which combines scatters
about local means without the cancellation of raw second moments.

Peak memory of :meth:`ChunkedPart.statistics` (``c`` rows per chunk, ``d``
features, 8-byte floats): the block as read (a Parquet row group of ``g``
rows, ``8 g d``, or a pandas frame of ``c`` rows) and the chunk as a float64
array (``8 c d``), plus the chunk's ``d x d`` Gram product (``8 d^2``, freed
once packed) and two packed triangles (``2 x 4 d(d+1)``): about
``8 (g + c) d + 16 d^2`` bytes plus the reader's buffers, independent of the
number of rows. Arrow's buffers are not small: for a 1e7 x 100 file in row
groups of ``g = c = 250,000`` the measured peak RSS above start is 0.89 GiB,
2.4 times the formula's 0.37 GiB
(``python -m benchmarks.bench_pppca --parquet-only``,
``benchmarks/results/parquet_memory.json``). Write Parquet files with row
groups of bounded size.

Parts
-----
:class:`ParquetPart`
    A Parquet file, one batch of rows at a time (``pyarrow``).
:class:`CSVPart`
    A CSV file with a header row, ``chunk_rows`` rows at a time (``pandas``).
:class:`DaskPart`
    A 2-D Dask array: each block's statistics are computed where the block
    lives, on whatever scheduler is active (e.g. a ``dask.distributed``
    client of the provider's own cluster), and reduced by a tree of merges;
    only the ``O(d^2)`` result comes back. Dask is optional
    (``pip install "mpc-pca[dask]"``).
:class:`PermutedPart`
    Another part with its columns in the agreed order (a provider whose file
    stores them in another order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.local_stats import LocalStatistics, column_peaks
from protocols.encoding import check_finite
from protocols.errors import InputValidationError, RingOverflowError

#: Rows per chunk when the caller does not say (about 80 MB at d = 100).
DEFAULT_CHUNK_ROWS = 100_000

T = TypeVar("T")
#: What :meth:`ChunkedPart.reduce_blocks` applies to one block: ``fn(block, first_row)``, where
#: ``first_row`` is the block's first row index, or ``None`` where the block sizes are not known.
BlockFunction = Callable[[NDArray[np.float64], "int | None"], T]


def reduce_chunks(
    chunks: Iterable[NDArray[np.float64]], fn: BlockFunction[T], merge: Callable[[T, T], T]
) -> T | None:
    """``merge`` of ``fn(chunk, first_row)`` over the chunks, in row order; ``None`` for no chunks.

    ``merge(total, value)`` may update ``total`` in place and return it: every
    ``total`` it receives is a value ``fn`` or ``merge`` made.
    """
    total: T | None = None
    start = 0
    for chunk in chunks:
        value = fn(chunk, start)
        total = value if total is None else merge(total, value)
        start += chunk.shape[0]
    return total


class ChunkedPart:
    """A provider's rows, read one block at a time. Subclasses implement :meth:`chunks`.

    Attributes
    ----------
    n_features : int
        ``d``, known without reading the rows.
    """

    n_features: int

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        """Yield the rows as C-contiguous float64 blocks of shape ``(c, d)``."""
        raise NotImplementedError

    def statistics(self) -> LocalStatistics:
        """Row count, column sums and scatter, accumulated chunk by chunk (module notes)."""
        total: LocalStatistics | None = None
        start = 0
        for chunk in self.chunks():
            stats = LocalStatistics.of(chunk)
            _check_chunk(chunk, stats, start, self)
            total = stats if total is None else total.merge(stats)
            start += chunk.shape[0]
        if total is None:
            raise InputValidationError(f"{self!r} holds no rows")
        return total

    def reduce_blocks(self, fn: BlockFunction[T], merge: Callable[[T, T], T]) -> T | None:
        """``merge`` of ``fn(block, first_row)`` over the blocks in row order (:func:`reduce_chunks`).

        Here the blocks are read on this host, one at a time; a :class:`DaskPart`
        runs ``fn`` where each block lives and merges up a tree, so only
        ``fn``'s results travel. ``fn`` and ``merge`` must then be picklable
        (module-level functions or :func:`functools.partial` of them).
        """
        return reduce_chunks(self.chunks(), fn, merge)

    def column_peaks(self) -> NDArray[np.float64]:
        """``max |x_j|`` per column, one more pass over the chunks (for the column exponents of
        :mod:`mpc_pca.pppca.scaling`); :meth:`statistics` carries them too, so a caller that
        has those needs no further pass."""
        peaks = np.zeros(self.n_features)
        for chunk in self.chunks():
            np.maximum(peaks, column_peaks(chunk), out=peaks)
        return peaks

    def projected_chunks(
        self, mean: NDArray[np.float64], transfer: NDArray[np.float64]
    ) -> Iterator[NDArray[np.float64]]:
        """``(X - mean) T`` one chunk at a time (Alg. 2 step 9): blocks of ``k`` columns."""
        for chunk in self.chunks():
            yield (chunk - mean) @ transfer

    def project(self, mean: NDArray[np.float64], transfer: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(X - mean) T`` chunk by chunk (Alg. 2 step 9); the result has ``k`` columns."""
        blocks = list(self.projected_chunks(mean, transfer))
        return np.vstack(blocks) if blocks else np.empty((0, transfer.shape[1]))


def _check_chunk(chunk: NDArray[np.float64], stats: LocalStatistics, start: int, part: ChunkedPart) -> None:
    if chunk.ndim != 2 or chunk.shape[1] != part.n_features:
        raise InputValidationError(
            f"{part!r} yielded a block of shape {chunk.shape}, expected (c, {part.n_features})"
        )
    if np.all(np.isfinite(stats.column_sums)) and np.all(np.isfinite(stats.scatter_triangle)):
        return
    check_finite(chunk, f"{part!r} rows {start}..{start + chunk.shape[0] - 1}")
    raise RingOverflowError(
        f"{part!r} holds values so large that its sums overflow float64; rescale the data"
    )


def _chunk_rows(chunk_rows: int | None) -> int:
    rows = DEFAULT_CHUNK_ROWS if chunk_rows is None else chunk_rows
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise InputValidationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return int(rows)


class ParquetPart(ChunkedPart):
    """Rows of a Parquet file, read ``chunk_rows`` at a time with ``pyarrow``.

    Parameters
    ----------
    path : str or Path
    columns : sequence of str, optional
        Feature columns, in order (all columns by default); all must be numeric.
    chunk_rows : int, optional
        Rows per block (default :data:`DEFAULT_CHUNK_ROWS`).
    """

    def __init__(
        self, path: str | Path, *, columns: Sequence[str] | None = None, chunk_rows: int | None = None
    ):
        import pyarrow.parquet as pq

        self.path = Path(path)
        if not self.path.is_file():
            raise InputValidationError(f"no Parquet file at {str(self.path)!r}")
        schema = pq.read_schema(self.path)
        names = list(schema.names) if columns is None else list(columns)
        missing = [c for c in names if c not in schema.names]
        if missing:
            raise InputValidationError(
                f"{str(self.path)!r} has no column(s) {missing}; it has {schema.names}"
            )
        if not names:
            raise InputValidationError(f"{str(self.path)!r}: no feature columns selected")
        self.columns = names
        self.n_features = len(names)
        self.chunk_rows = _chunk_rows(chunk_rows)

    def __repr__(self) -> str:
        return f"ParquetPart({str(self.path)!r}, d={self.n_features})"

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        import pyarrow.parquet as pq

        # One row group at a time, no pre-buffering, 1 MiB reads: Arrow then holds about
        # one row group (iter_batches with pre-buffering kept ~2x the file here).
        with pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20) as reader:
            for group in range(reader.num_row_groups):
                table = reader.read_row_group(group, columns=self.columns)
                for batch in table.to_batches(max_chunksize=self.chunk_rows):
                    yield self._block(batch)
                del table

    def _block(self, batch: Any) -> NDArray[np.float64]:
        """One Arrow record batch as a C-contiguous float64 ``(rows, d)`` array."""
        out = np.empty((batch.num_rows, self.n_features))
        for j in range(self.n_features):
            column = batch.column(j)
            if column.null_count:
                raise InputValidationError(f"{self!r}: column {self.columns[j]!r} has missing values")
            out[:, j] = column.to_numpy(zero_copy_only=False)
        return out


class CSVPart(ChunkedPart):
    """Rows of a CSV file with a header row, read ``chunk_rows`` at a time with ``pandas``."""

    def __init__(
        self, path: str | Path, *, columns: Sequence[str] | None = None, chunk_rows: int | None = None
    ):
        import pandas as pd

        self.path = Path(path)
        if not self.path.is_file():
            raise InputValidationError(f"no CSV file at {str(self.path)!r}")
        header = list(pd.read_csv(self.path, nrows=0).columns)
        names = header if columns is None else list(columns)
        missing = [c for c in names if c not in header]
        if missing or not names:
            raise InputValidationError(f"{str(self.path)!r}: column(s) {missing or names} not in {header}")
        self.columns = names
        self.n_features = len(names)
        self.chunk_rows = _chunk_rows(chunk_rows)

    def __repr__(self) -> str:
        return f"CSVPart({str(self.path)!r}, d={self.n_features})"

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        import pandas as pd

        with pd.read_csv(self.path, usecols=self.columns, chunksize=self.chunk_rows) as reader:
            for frame in reader:
                try:
                    block = frame[self.columns].to_numpy(dtype=np.float64)
                except (TypeError, ValueError) as exc:
                    raise InputValidationError(f"{self!r} has a non-numeric entry: {exc}") from exc
                yield np.ascontiguousarray(block)


class DaskPart(ChunkedPart):
    """A 2-D Dask array whose statistics are computed on its own scheduler.

    Parameters
    ----------
    array : dask.array.Array of shape (n, d)
        Chunked along rows (columns are rechunked to one block if needed).
    """

    def __init__(self, array: Any) -> None:
        if getattr(array, "ndim", None) != 2 or not hasattr(array, "to_delayed"):
            raise InputValidationError(f"DaskPart needs a 2-D dask array, got {type(array).__name__}")
        if array.numblocks[1] != 1:
            array = array.rechunk({1: -1})
        self.array = array.astype(np.float64)
        self.n_features = int(array.shape[1])

    def __repr__(self) -> str:
        return f"DaskPart(shape={self.array.shape}, blocks={self.array.numblocks[0]})"

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        for block in self.array.to_delayed().ravel():
            yield np.ascontiguousarray(block.compute())

    def reduce_blocks(self, fn: BlockFunction[T], merge: Callable[[T, T], T]) -> T | None:
        """``fn`` of each block where it lives, merged pairwise up a tree (one ``compute``)."""
        import dask

        sizes = self.array.chunks[0]
        known = all(np.isfinite(size) for size in sizes)
        starts = (
            np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
            if known
            else [None] * len(sizes)
        )
        blocks = self.array.to_delayed().ravel()
        level = [dask.delayed(fn)(block, start) for block, start in zip(blocks, starts, strict=True)]
        if not level:
            return None
        while len(level) > 1:
            merged = [dask.delayed(merge)(a, b) for a, b in zip(level[::2], level[1::2], strict=False)]
            level = merged + ([level[-1]] if len(level) % 2 else [])
        (total,) = dask.compute(level[0])
        return total

    def statistics(self) -> LocalStatistics:
        """Per-block statistics where the blocks live, merged pairwise up a tree (one ``compute``)."""
        total = self.reduce_blocks(_block_statistics, LocalStatistics.merge)
        if total is None or total.n_rows == 0:
            raise InputValidationError(f"{self!r} holds no rows")
        if not (np.all(np.isfinite(total.column_sums)) and np.all(np.isfinite(total.scatter_triangle))):
            raise InputValidationError(f"{self!r} holds NaN, infinite or overflowing values")
        return total

    def column_peaks(self) -> NDArray[np.float64]:
        """``max |x_j|`` per column, computed where the blocks live."""
        import dask.array as da

        return np.asarray(da.max(da.abs(self.array), axis=0).compute(), dtype=np.float64)

    def project(self, mean: NDArray[np.float64], transfer: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(((self.array - mean) @ transfer).compute())

    def projected_chunks(
        self, mean: NDArray[np.float64], transfer: NDArray[np.float64]
    ) -> Iterator[NDArray[np.float64]]:
        """``(X - mean) T`` block by block, each computed where its rows live."""
        for block in ((self.array - mean) @ transfer).to_delayed().ravel():
            yield np.asarray(block.compute(), dtype=np.float64)


def _block_statistics(block: NDArray[np.float64], first_row: int | None = None) -> LocalStatistics:
    if block.shape[0] == 0:
        return LocalStatistics(
            0,
            np.zeros(block.shape[1]),
            np.zeros(block.shape[1] * (block.shape[1] + 1) // 2),
            np.zeros(block.shape[1]),
        )
    return LocalStatistics.of(np.ascontiguousarray(block, dtype=np.float64))


class PermutedPart(ChunkedPart):
    """Another part's rows with their columns taken in another order: column ``j`` is ``part``'s ``order[j]``.

    A provider whose file stores the agreed columns in another order wraps its
    part in this (the deploy floor does, once the names are agreed). The
    statistics and peaks are the wrapped part's, permuted (no second pass over
    the rows); a projection is the wrapped part's with the mean and the
    transfer matrix put back in its own column order, so a part that projects
    where its rows live (a :class:`DaskPart`) still does.

    Parameters
    ----------
    part : ChunkedPart
        The rows in their own column order.
    order : sequence of int
        A permutation of ``0 .. d - 1``.

    Raises
    ------
    InputValidationError
        If ``order`` is not a permutation of the part's columns.
    """

    def __init__(self, part: ChunkedPart, order: Sequence[int]) -> None:
        index = np.asarray(list(order), dtype=np.intp)
        if index.shape != (part.n_features,) or sorted(index.tolist()) != list(range(part.n_features)):
            raise InputValidationError(
                f"column order {list(order)} is not a permutation of the part's {part.n_features} columns"
            )
        self.part = part
        self.order = index
        self.n_features = part.n_features
        names = getattr(part, "names", None)
        self.names = None if names is None else tuple(names[i] for i in index)
        self.notes = list(getattr(part, "notes", []))
        self._stats: LocalStatistics | None = None

    def __repr__(self) -> str:
        return f"{self.part!r} (columns reordered)"

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        for chunk in self.part.chunks():
            yield np.ascontiguousarray(chunk[:, self.order])

    def statistics(self) -> LocalStatistics:
        if self._stats is None:
            from protocols.triangle import from_upper_triangle, upper_triangle

            own = self.part.statistics()
            scatter = from_upper_triangle(own.scatter_triangle, own.n_features)
            self._stats = LocalStatistics(
                own.n_rows,
                np.ascontiguousarray(own.column_sums[self.order]),
                upper_triangle(np.ascontiguousarray(scatter[np.ix_(self.order, self.order)])),
            )
        return self._stats

    def column_peaks(self) -> NDArray[np.float64]:
        return np.asarray(self.part.column_peaks())[self.order]

    def reduce_blocks(self, fn: BlockFunction[T], merge: Callable[[T, T], T]) -> T | None:
        """The wrapped part's reduction (where its blocks live), each block's columns put in the agreed order."""
        return self.part.reduce_blocks(partial(_in_order, fn=fn, order=self.order), merge)

    def _own_order(
        self, mean: NDArray[np.float64], transfer: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        own_mean = np.empty_like(np.asarray(mean, dtype=np.float64))
        own_mean[self.order] = mean
        own_transfer = np.empty_like(np.asarray(transfer, dtype=np.float64))
        own_transfer[self.order] = transfer
        return own_mean, own_transfer

    def projected_chunks(
        self, mean: NDArray[np.float64], transfer: NDArray[np.float64]
    ) -> Iterator[NDArray[np.float64]]:
        yield from self.part.projected_chunks(*self._own_order(mean, transfer))

    def project(self, mean: NDArray[np.float64], transfer: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.part.project(*self._own_order(mean, transfer))


def _in_order(
    block: NDArray[np.float64], first_row: int | None, fn: BlockFunction[T], order: NDArray[np.intp]
) -> T:
    """``fn`` of a block with its columns taken in ``order`` (:meth:`PermutedPart.reduce_blocks`)."""
    return fn(np.ascontiguousarray(block[:, order]), first_row)
