"""A provider's table read in row chunks, with the checks of :func:`mpc_pca.data.inputs.load_table`.

``mpc-pca party --data FILE`` of a PPPCA provider (``pppca-ss``,
``pppca-he``) never holds its table: :class:`TablePart` reads a CSV
(optionally compressed) ``chunk_rows`` rows at a time with pandas, or a
Parquet file one batch of ``chunk_rows`` rows at a time with pyarrow, and
checks each block with the very functions that check a table read whole
(:mod:`mpc_pca.data.tables`): the same header guess, delimiter, encoding,
``--columns`` selection and order, and the same refusal of a missing,
non-numeric or non-finite cell naming its line (row) and column. Only the
counts in a missing cell's message are those of the block it was found in
(and the message says so).

Two passes over the file: the first (:meth:`TablePart.scan`) computes the
row count, column sums, scatter and column peaks that the provider
announces and sums; the second projects the rows block by block for the
consumer (:meth:`~mpc_pca.pppca.chunked.ChunkedPart.projected_chunks`).
Peak memory: a few copies of one block (``c`` rows of all ``D`` columns of
the file: text cells for a CSV, an Arrow batch and a pandas frame for
Parquet) plus the ``d x d`` statistics, ``O(c D + d^2)`` bytes whatever
the number of rows.

:func:`dask_table_part` reads the same file on an organisation's Dask
cluster instead (one task per Parquet row group or CSV block, checked with
the same functions where the block is read), so that only the ``O(d^2)``
statistics and the projected rows come back to the party.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.inputs import ReadOptions
from mpc_pca.data.tables import (
    check_block,
    column_index,
    csv_arguments,
    csv_errors,
    csv_format,
    dropped_note,
    is_parquet,
    numeric_columns,
    parse_cells,
    take_header,
)
from mpc_pca.pppca.chunked import ChunkedPart, DaskPart
from mpc_pca.pppca.local_stats import LocalStatistics
from protocols.errors import InputValidationError, RingOverflowError

#: Rows per block of ``mpc-pca party --data`` (``--chunk-rows``): 64 MiB of text cells at D = 16.
DEFAULT_STREAM_ROWS = 65_536
#: Bytes per Dask task of a CSV file read on a cluster.
DASK_CSV_BLOCK = 64 << 20


class TablePart(ChunkedPart):
    """A CSV or Parquet file's rows, read and checked ``chunk_rows`` at a time.

    Parameters
    ----------
    path : str or Path
        A CSV (optionally ``.gz``, ``.bz2``, ``.xz``, ``.zip``) or Parquet file.
    options : ReadOptions
        Header, delimiter, encoding, ``--columns`` and ``--drop-na``, as for
        :func:`~mpc_pca.data.inputs.load_table`.
    chunk_rows : int, optional
        Rows per block (default :data:`DEFAULT_STREAM_ROWS`).

    Attributes
    ----------
    names : tuple of str
        The selected columns' names, in order.
    notes : list of str
        What was inferred (the header) and, after :meth:`scan`, dropped.

    Raises
    ------
    InputValidationError
        As :func:`~mpc_pca.data.inputs.load_table` does, for what the file's
        first rows or schema show; the rows themselves are checked by :meth:`scan`.
    """

    def __init__(self, path: str | Path, options: ReadOptions, chunk_rows: int | None = None) -> None:
        rows = DEFAULT_STREAM_ROWS if chunk_rows is None else chunk_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise InputValidationError(f"--chunk-rows must be a positive integer, got {chunk_rows!r}")
        self.path = Path(path)
        if not self.path.is_file():
            raise InputValidationError(f"data file {str(self.path)!r} does not exist")
        self.options = options
        self.chunk_rows = rows
        self.parquet = is_parquet(self.path)
        self.notes: list[str] = []
        self._csv: dict[str, Any] = {}
        self._first_line = 1
        if self.parquet:
            self.all_names, self.n_rows_in_file = self._open_parquet()
        else:
            self.all_names = self._open_csv()
        columns = options.columns
        self.index = None if columns is None else column_index(str(self.path), self.all_names, columns)
        self.names = self.all_names if columns is None else tuple(columns)
        self.n_features = len(self.names)
        self._stats: LocalStatistics | None = None
        self._peaks: NDArray[np.float64] | None = None

    def __repr__(self) -> str:
        return f"TablePart({str(self.path)!r}, d={self.n_features}, chunk_rows={self.chunk_rows})"

    def _open_parquet(self) -> tuple[tuple[str, ...], int]:
        import pyarrow.parquet as pq

        try:
            with pq.ParquetFile(self.path) as reader:
                frame = reader.schema_arrow.empty_table().to_pandas()
                n_rows = int(reader.metadata.num_rows)
        except (OSError, ValueError, ImportError) as exc:
            raise InputValidationError(f"{self.path}: cannot read it as Parquet ({exc})") from exc
        names = numeric_columns(self.path, frame)
        if n_rows == 0:
            raise InputValidationError(f"data file {str(self.path)!r} holds no data rows")
        return names, n_rows

    def _open_csv(self) -> tuple[str, ...]:
        import pandas as pd

        encoding, delimiter = csv_format(self.path, self.options.encoding, self.options.delimiter)
        self._csv = csv_arguments(delimiter, encoding)
        with csv_errors(self.path, encoding):
            first = pd.read_csv(self.path, nrows=1, **self._csv)
        names, self._first_line, notes = take_header(
            self.path, first.to_numpy(dtype=object), self.options.header
        )
        self.notes += notes
        return names

    def blocks(self) -> Iterator[tuple[NDArray[np.float64], NDArray[np.int64], int]]:
        """Every block of all the file's columns, checked: ``(rows kept, lines dropped, rows read)``."""
        yield from self._parquet_blocks() if self.parquet else self._csv_blocks()

    def _parquet_blocks(self) -> Iterator[tuple[NDArray[np.float64], NDArray[np.int64], int]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        row = 1
        # No pre-buffering and 1 MiB reads: Arrow holds about one batch, not one row group.
        with pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20) as reader:
            schema = reader.schema_arrow
            for batch in reader.iter_batches(batch_size=self.chunk_rows, use_pandas_metadata=True):
                frame = pa.Table.from_batches([batch], schema=schema).to_pandas()
                kept, dropped = _frame_block(self.path, self.all_names, frame, row, self.options.drop_na)
                row += batch.num_rows
                yield kept, dropped, batch.num_rows

    def _csv_blocks(self) -> Iterator[tuple[NDArray[np.float64], NDArray[np.int64], int]]:
        import pandas as pd

        line = 1
        with (
            csv_errors(self.path, self._csv["encoding"]),
            pd.read_csv(self.path, chunksize=self.chunk_rows, **self._csv) as reader,
        ):
            for frame in reader:
                cells = frame.to_numpy(dtype=object)
                if line < self._first_line:  # the header row
                    cells, line = cells[self._first_line - 1 :], self._first_line
                kept, dropped = _cells_block(self.path, self.all_names, cells, line, self.options.drop_na)
                line += cells.shape[0]
                yield kept, dropped, cells.shape[0]

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        for kept, _dropped, _read in self.blocks():
            if kept.shape[0]:
                yield self._select(kept)

    def _select(self, block: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.ascontiguousarray(block if self.index is None else block[:, self.index])

    def scan(self) -> LocalStatistics:
        """Read the file once: check every row; the statistics, column peaks and notes.

        Raises
        ------
        InputValidationError
            For the first missing (without ``drop_na``), non-numeric or
            non-finite cell, naming its line (row) and column; for a file
            without data rows.
        RingOverflowError
            If the rows' sums overflow float64.
        """
        total: LocalStatistics | None = None
        peaks = np.zeros(self.n_features)
        read, n_dropped = 0, 0
        shown: list[int] = []
        for kept, dropped, n in self.blocks():
            read += n
            n_dropped += dropped.size
            shown += [int(r) for r in dropped[: 11 - len(shown)]]
            if not kept.shape[0]:
                continue
            chunk = self._select(kept)
            stats = LocalStatistics.of(chunk)
            total = stats if total is None else total.merge(stats)
            assert stats.column_peaks is not None  # LocalStatistics.of reads them in the same pass
            np.maximum(peaks, stats.column_peaks, out=peaks)
        where = "row" if self.parquet else "line"
        if read == 0:
            raise InputValidationError(f"data file {str(self.path)!r} holds no data rows")
        if n_dropped:
            self.notes.append(dropped_note(self.path, shown, where, n_dropped))
        if total is None:
            raise InputValidationError(f"{self.path}: every row has a missing value; nothing is left")
        if not (np.all(np.isfinite(total.column_sums)) and np.all(np.isfinite(total.scatter_triangle))):
            raise RingOverflowError(
                f"{self.path} holds values so large (max |x| = {np.max(peaks):.3g}) that its sums "
                "overflow float64; rescale the data"
            )
        self._stats, self._peaks = total, peaks
        return total

    def statistics(self) -> LocalStatistics:
        """Row count, column sums and scatter of the rows kept (from :meth:`scan`)."""
        return self.scan() if self._stats is None else self._stats

    def column_peaks(self) -> NDArray[np.float64]:
        """``max |x_j|`` per selected column (from :meth:`scan`)."""
        if self._peaks is None:
            self.scan()
        assert self._peaks is not None
        return self._peaks


def _frame_block(
    path: Path, names: tuple[str, ...], frame: Any, first_row: int, drop_na: bool
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One Parquet block (a pandas frame of every column), checked as a whole file's rows are."""
    if tuple(str(c) for c in frame.columns) != names:
        raise InputValidationError(
            f"{path}: a block has columns {list(frame.columns)}, expected {list(names)}"
        )
    missing = frame.isna().to_numpy()
    values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    return check_block(path, names, values, missing, first_row, drop_na, where="row", block=True)


def _cells_block(
    path: Path | str, names: tuple[str, ...], cells: NDArray[np.object_], first_line: int, drop_na: bool
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One CSV block (text cells), parsed and checked as a whole file's cells are."""
    if cells.shape[1] != len(names):
        raise InputValidationError(
            f"{path}: rows have different numbers of fields (line {first_line} on: {cells.shape[1]}, "
            f"the first row: {len(names)})"
        )
    values, missing = parse_cells(path, names, cells, first_line)
    return check_block(path, names, values, missing, first_line, drop_na, block=True)


def _parquet_group(path: str, group: int, first_row: int, names: tuple[str, ...], part: TablePart) -> Any:
    """One row group of a Parquet file, read and checked where a Dask worker runs this."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20) as reader:
        frame = reader.read_row_group(group, use_pandas_metadata=True).to_pandas()
    kept, _dropped = _frame_block(Path(path), names, frame, first_row, part.options.drop_na)
    return part._select(kept)


def _csv_block(frame: Any, index: int, part: TablePart) -> Any:
    """One block of a CSV file (text cells), checked where a Dask worker runs this.

    Line numbers are counted from the block's start (the message names the block).
    """
    cells = frame.to_numpy(dtype=object)
    first = 1
    if index == 0 and part._first_line > 1:
        cells, first = cells[part._first_line - 1 :], part._first_line
    kept, _dropped = _cells_block(
        f"{part.path} (block {index})", part.all_names, cells, first, part.options.drop_na
    )
    return part._select(kept)


class ClusterPart(DaskPart):
    """A :class:`~mpc_pca.pppca.chunked.DaskPart` that computes its statistics and peaks once.

    Attributes
    ----------
    names : tuple of str
        The selected columns' names, in order.
    notes : list of str
        What was inferred from the file's first row (the header).
    """

    def __init__(self, array: Any, names: tuple[str, ...], notes: list[str]) -> None:
        super().__init__(array)
        self.names = names
        self.notes = notes
        self._stats: LocalStatistics | None = None
        self._peaks: NDArray[np.float64] | None = None

    def statistics(self) -> LocalStatistics:
        if self._stats is None:
            self._stats = super().statistics()
        return self._stats

    def column_peaks(self) -> NDArray[np.float64]:
        """``max |x_j|`` per column: from the statistics' own pass (no further one on the cluster)."""
        if self._peaks is None:
            peaks = self.statistics().column_peaks
            self._peaks = super().column_peaks() if peaks is None else peaks
        return self._peaks


def dask_table_part(
    path: str | Path,
    options: ReadOptions,
    scheduler: str,
    chunk_rows: int | None = None,
    timeout: float | None = None,
) -> ClusterPart:
    """The rows of ``path`` as a :class:`~mpc_pca.pppca.chunked.DaskPart` on the cluster at ``scheduler``.

    The file must be readable at the same path by the cluster's workers. The
    party reads only the Parquet schema or the CSV's first row; the workers
    read and check the rows (one task per Parquet row group, or per
    :data:`DASK_CSV_BLOCK` bytes of an uncompressed CSV), and the statistics
    are reduced on the cluster.

    Parameters
    ----------
    path : str or Path
    options : ReadOptions
    scheduler : str
        ``HOST:PORT`` (or ``tcp://HOST:PORT``) of the organisation's Dask scheduler.
    chunk_rows : int, optional
        Unused by the cluster's tasks (kept for the party's local checks).
    timeout : float, optional
        ``--connect-timeout``: the most seconds the scheduler may take to
        answer (:func:`mpc_pca.data.dask_client.connect_scheduler`).

    Raises
    ------
    InputValidationError
        Naming the address, if it is malformed or no Dask scheduler answers
        there within ``timeout``; or as :class:`TablePart` does.
    """
    import dask
    import dask.array as da

    from mpc_pca.data.dask_client import connect_scheduler, scheduler_address

    scheduler_address(scheduler)  # a malformed address is refused before the file is read
    part = TablePart(Path(path).resolve(), options, chunk_rows)
    connect_scheduler(scheduler, timeout)
    blocks = []
    if part.parquet:
        import pyarrow.parquet as pq

        with pq.ParquetFile(part.path) as reader:
            sizes = [reader.metadata.row_group(g).num_rows for g in range(reader.num_row_groups)]
        first = 1
        for group, size in enumerate(sizes):
            rows = np.nan if options.drop_na else size
            task = dask.delayed(_parquet_group)(str(part.path), group, first, part.all_names, part)
            blocks.append(da.from_delayed(task, shape=(rows, part.n_features), dtype=np.float64))
            first += size
    else:
        import dask.dataframe as dd

        compressed = not part.path.name.lower().endswith((".csv", ".tsv", ".txt"))
        arguments = {k: v for k, v in part._csv.items() if k not in ("engine",)}
        frame = dd.read_csv(str(part.path), blocksize=None if compressed else DASK_CSV_BLOCK, **arguments)
        for index, task in enumerate(frame.to_delayed()):
            block = dask.delayed(_csv_block)(task, index, part)
            blocks.append(da.from_delayed(block, shape=(np.nan, part.n_features), dtype=np.float64))
    return ClusterPart(da.concatenate(blocks, axis=0), part.names, part.notes)


__all__ = ["DEFAULT_STREAM_ROWS", "ClusterPart", "TablePart", "dask_table_part"]
