"""A provider's table as a :class:`~mpc_pca.pppca.chunked.ChunkedPart`: read in row chunks, never held whole.

A PPPCA provider given a data file (``mpc-pca party``) (``pppca-ss``,
``pppca-he``) never holds its table: :class:`TablePart` reads a CSV
(optionally compressed) or Parquet file ``chunk_rows`` rows at a time
through the one reader of a file, :class:`mpc_pca.data.tables.TableFile`,
which checks every block exactly as a table read whole is checked (the same
header guess, delimiter, encoding, ``columns`` selection and order, and
the same refusal of a missing, non-numeric or non-finite cell naming its
line (row) and column; only the counts in a missing cell's message are
those of the block it was found in, and the message says so).

Two passes over the file: the first (:meth:`TablePart.scan`) computes the
row count, column sums, scatter and column peaks that the provider
announces and sums; the second projects the rows block by block for the
consumer (:meth:`~mpc_pca.pppca.chunked.ChunkedPart.projected_chunks`).
Peak memory: a few copies of one block (``c`` rows of all ``D`` columns of
the file: text cells for a CSV, an Arrow batch and a pandas frame for
Parquet) plus the ``d x d`` statistics, ``O(c D + d^2)`` bytes whatever
the number of rows.

:func:`dask_table_part` reads the same file on an organisation's Dask
cluster instead (one task per Parquet row group or CSV block, checked by
the same :class:`~mpc_pca.data.tables.TableFile` where the block is read),
so that only the ``O(d^2)`` statistics and the projected rows come back to
the party.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.inputs import ReadOptions
from mpc_pca.data.tables import TableFile
from mpc_pca.pppca.chunked import ChunkedPart, DaskPart
from mpc_pca.pppca.local_stats import LocalStatistics
from protocols.errors import InputValidationError, RingOverflowError

#: Rows per block of a provider's file (``chunk_rows``): 64 MiB of text cells at D = 16.
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
        Header, delimiter, encoding, ``columns`` and ``drop_na``, as for
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
            raise InputValidationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
        self.file = TableFile(
            path, header=options.header, delimiter=options.delimiter, encoding=options.encoding,
            columns=options.columns, drop_na=options.drop_na, chunk_rows=rows,
        )  # fmt: skip
        self.path = self.file.path
        self.options = options
        self.chunk_rows = rows
        self.names = self.file.names
        self.notes = self.file.notes  # the same list: the first pass adds the rows dropped
        self.n_features = len(self.names)
        self._stats: LocalStatistics | None = None
        self._peaks: NDArray[np.float64] | None = None

    def __repr__(self) -> str:
        return f"TablePart({str(self.path)!r}, d={self.n_features}, chunk_rows={self.chunk_rows})"

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        return self.file.rows()

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
        for chunk in self.file.rows():
            stats = LocalStatistics.of(chunk)
            total = stats if total is None else total.merge(stats)
            assert stats.column_peaks is not None  # LocalStatistics.of reads them in the same pass
            np.maximum(peaks, stats.column_peaks, out=peaks)
        assert total is not None  # TableFile.rows refuses a file without a row kept
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


def _parquet_group(file: TableFile, group: int, first_row: int) -> Any:
    """One row group of a Parquet file, read and checked where a Dask worker runs this."""
    return file.row_group(group, first_row)


def _csv_block(frame: Any, index: int, file: TableFile) -> Any:
    """One block of a CSV file (text cells), checked where a Dask worker runs this.

    Line numbers are counted from the block's start (the message names the block).
    """
    cells = frame.to_numpy(dtype=object)
    first = 1
    if index == 0 and file.first_line > 1:
        cells, first = cells[file.first_line - 1 :], file.first_line
    kept, _dropped = file.check_cells(cells, first, source=f"{file.path} (block {index})")
    return file.select(kept)


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
        ``connect_timeout``: the most seconds the scheduler may take to
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
    file = part.file
    blocks = []
    if file.parquet:
        first = 1
        for group, size in enumerate(file.row_groups()):
            rows = np.nan if options.drop_na else size
            task = dask.delayed(_parquet_group)(file, group, first)
            blocks.append(da.from_delayed(task, shape=(rows, part.n_features), dtype=np.float64))
            first += size
    else:
        import dask.dataframe as dd

        compressed = not file.path.name.lower().endswith((".csv", ".tsv", ".txt"))
        arguments = {k: v for k, v in file.csv.items() if k not in ("engine",)}
        frame = dd.read_csv(str(file.path), blocksize=None if compressed else DASK_CSV_BLOCK, **arguments)
        for index, task in enumerate(frame.to_delayed()):
            block = dask.delayed(_csv_block)(task, index, file)
            blocks.append(da.from_delayed(block, shape=(np.nan, part.n_features), dtype=np.float64))
    return ClusterPart(da.concatenate(blocks, axis=0), part.names, part.notes)


__all__ = ["DEFAULT_STREAM_ROWS", "ClusterPart", "TablePart", "dask_table_part"]
