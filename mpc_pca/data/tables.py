"""Read one provider's table (CSV, gzip, any encoding, Parquet) into named float64 columns.

How a cell is read (header, delimiter, encoding, compression, missing and
non-numeric cells) is :mod:`mpc_pca.data.cells`'s rules.

:class:`TableFile` is the one reader of a file: it opens it, reads its
rows once and yields them in checked blocks, the whole file as one block
(:func:`read_table`) or ``chunk_rows`` rows at a time
(:class:`mpc_pca.data.streaming.TablePart`, whose memory does not grow with
the file), with the same checks and messages either way; only the counts in
a missing cell's message are those of the block it was found in (and the
message says so).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.cells import (
    check_block,
    csv_arguments,
    csv_errors,
    csv_format,
    default_names,
    dropped_note,
    numeric_columns,
    parse_cells,
    take_header,
)
from protocols.errors import InputValidationError

if TYPE_CHECKING:  # pandas is imported where a file is read: a party's start-up does not pay for it
    import pandas as pd

PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class Table:
    """One provider's data: ordered column names and an ``(n, d)`` float64 matrix."""

    source: str
    names: tuple[str, ...]
    values: NDArray[np.float64]
    #: What was inferred or dropped (header guessed, rows dropped), for the user's terminal.
    notes: list[str] = field(default_factory=list)

    def select(self, columns: Sequence[str]) -> Table:
        """The columns named in ``columns``, in that order."""
        index = column_index(self.source, self.names, columns)
        return Table(self.source, tuple(columns), self.values[:, index], list(self.notes))


def column_index(source: str, names: Sequence[str], columns: Sequence[str]) -> list[int]:
    """The positions of ``columns`` (the ``columns`` setting) among a table's ``names``.

    Raises
    ------
    InputValidationError
        For a name the table does not have, or a name given twice.
    """
    position = {name: i for i, name in reversed(list(enumerate(names)))}  # first position, as list.index
    missing = [c for c in columns if c not in position]
    if missing:
        raise InputValidationError(
            f"{source}: columns={list(columns)} names {missing} that it does not have; its columns are {list(names)}"
        )
    if len(set(columns)) != len(columns):
        raise InputValidationError(f"columns={list(columns)} repeats a name")
    return [position[c] for c in columns]


def is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(PARQUET_SUFFIXES)


def read_table(
    path: str | Path,
    *,
    header: bool | None = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    drop_na: bool = False,
) -> Table:
    """Read a CSV (optionally compressed) or Parquet file into a :class:`Table`.

    Parameters
    ----------
    path : str or Path
    header : bool, optional
        Whether the first row holds column names; ``None`` guesses (see module).
    delimiter : str, optional
        Field separator; sniffed if omitted.
    encoding : str, optional
        Text encoding; UTF-8 (a byte-order mark is skipped) if omitted.
    drop_na : bool, default=False
        Drop rows with a missing cell (counted in the notes) instead of refusing them.

    Raises
    ------
    InputValidationError
        Missing or unreadable file, undecodable bytes, rows of different
        lengths, a non-numeric or missing cell (with its line and column), a
        non-finite value, or no data rows.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "h.csv")
    ...     _ = open(p, "w").write("age;bmi\\n50;22.5\\n61;30.1\\n")
    ...     t = read_table(p)
    >>> t.names, t.values.tolist(), t.notes
    (('age', 'bmi'), [[50.0, 22.5], [61.0, 30.1]], ['...h.csv: first row taken as the header (no cell of it is a number; header=False to read it as data)'])
    """
    return TableFile(path, header=header, delimiter=delimiter, encoding=encoding, drop_na=drop_na).read()


#: One block of a file's rows, checked: the rows kept (every column of the file), the line (or
#: Parquet row) numbers of the rows dropped for a missing cell, and the number of rows read.
Block = tuple[NDArray[np.float64], NDArray[np.int64], int]


class TableFile:
    """A CSV (optionally compressed) or Parquet file opened for reading; its rows in checked blocks.

    Opened to be read whole (``chunk_rows=None``), the file is read at once
    here; opened to be read ``chunk_rows`` rows at a time, only its Parquet
    schema or its CSV's format (encoding, delimiter) and first row are. The
    header is guessed unless given, and the guess reported in :attr:`notes`.
    :meth:`rows` then yields the rows in blocks (one for a whole read),
    refusing a missing (unless ``drop_na``), non-numeric or non-finite cell
    naming its line (row) and column, whatever the block size.

    Parameters
    ----------
    path : str or Path
    header, delimiter, encoding, drop_na
        As for :func:`read_table`.
    columns : sequence of str, optional
        The columns :meth:`rows` yields, in this order; every
        column of the file is checked.
    chunk_rows : int, optional
        Rows per block; ``None`` reads the whole file as one block.

    Attributes
    ----------
    path : Path
    parquet : bool
        Whether the file is read as Parquet (by its name).
    all_names : tuple of str
        Every column's name, in the file's order.
    names : tuple of str
        The selected columns' names, in order.
    notes : list of str
        What was inferred (the header) and, after a first complete pass, dropped.
    first_line : int
        The line of a CSV's first data row (2 after a header row).
    csv : dict
        The ``pandas.read_csv`` arguments of a CSV (:func:`~mpc_pca.data.cells.csv_arguments`).

    Raises
    ------
    InputValidationError
        For a missing file, an unknown encoding, a malformed delimiter, what
        the file (read whole) or its first row or schema (read in chunks)
        shows, or a ``columns`` name the file does not have.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        header: bool | None = None,
        delimiter: str | None = None,
        encoding: str | None = None,
        columns: Sequence[str] | None = None,
        drop_na: bool = False,
        chunk_rows: int | None = None,
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InputValidationError(f"data file {str(self.path)!r} does not exist")
        self.drop_na = drop_na
        self.chunk_rows = chunk_rows
        self.parquet = is_parquet(self.path)
        self.notes: list[str] = []
        self.csv: dict[str, Any] = {}
        self.first_line = 1
        self._whole: Any = None  # a whole read's rows (a frame, or a CSV's cells), until rows() takes them
        self._counted = False
        self.all_names = self._open_parquet() if self.parquet else self._open_csv(header, delimiter, encoding)
        self.index = None if columns is None else column_index(str(self.path), self.all_names, columns)
        self.names = self.all_names if columns is None else tuple(columns)

    def _open_parquet(self) -> tuple[str, ...]:
        if self.chunk_rows is None:
            frame = self._whole = self._read_parquet()
            n_rows = frame.shape[0]
        else:
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
        return names

    def _read_parquet(self) -> pd.DataFrame:
        import pandas as pd

        try:
            return pd.read_parquet(self.path)
        except (OSError, ValueError, ImportError) as exc:
            raise InputValidationError(f"{self.path}: cannot read it as Parquet ({exc})") from exc

    def _open_csv(self, header: bool | None, delimiter: str | None, encoding: str | None) -> tuple[str, ...]:
        encoding, delimiter = csv_format(self.path, encoding, delimiter)
        self.csv = csv_arguments(delimiter, encoding)
        cells = self._read_csv(1 if self.chunk_rows else None)
        names, self.first_line, notes = take_header(self.path, cells, header)
        self.notes += notes
        if self.chunk_rows is None:
            self._whole = cells
        return names

    def _read_csv(self, nrows: int | None) -> NDArray[np.object_]:
        import pandas as pd

        with csv_errors(self.path, self.csv["encoding"]):
            frame = pd.read_csv(self.path, nrows=nrows, **self.csv)
        return frame.to_numpy(dtype=object)

    def read(self) -> Table:
        """The whole file (its selected columns) as a :class:`Table` (opened with ``chunk_rows=None``)."""
        (values,) = self.rows()  # one block; rows() refuses a file without a row kept
        return Table(str(self.path), self.names, values, self.notes)

    def rows(self) -> Iterator[NDArray[np.float64]]:
        """The selected columns of the rows kept, one C-contiguous block at a time, then the file's checks.

        After the last block: a file without data rows, or whose every row
        was dropped, is refused; the first complete pass adds the note of
        the rows dropped.
        """
        read, count, kept_any = 0, 0, False
        shown: list[int] = []
        for kept, dropped, n in self.blocks():
            read += n
            count += dropped.size
            shown += [int(r) for r in dropped[: 11 - len(shown)]]
            if kept.shape[0]:
                kept_any = True
                yield self.select(kept)
        if read == 0:
            raise InputValidationError(f"data file {str(self.path)!r} holds no data rows")
        if count and not self._counted:
            self.notes.append(dropped_note(self.path, shown, "row" if self.parquet else "line", count))
        self._counted = True
        if not kept_any:
            raise InputValidationError(f"{self.path}: every row has a missing value; nothing is left")

    def select(self, block: NDArray[np.float64]) -> NDArray[np.float64]:
        """The selected columns of a block of every column, C-contiguous."""
        return np.ascontiguousarray(block if self.index is None else block[:, self.index])

    def blocks(self) -> Iterator[Block]:
        """Every block of all the file's columns, checked (one block for a whole read)."""
        if self.chunk_rows is None:
            whole, self._whole = self._whole, None
            if self.parquet:
                frame = self._read_parquet() if whole is None else whole
                yield *self.check_frame(frame, 1, block=False), frame.shape[0]
            else:
                cells = (self._read_csv(None) if whole is None else whole)[self.first_line - 1 :]
                yield *self.check_cells(cells, self.first_line, block=False), cells.shape[0]
        else:
            yield from (
                self._parquet_blocks(self.chunk_rows) if self.parquet else self._csv_blocks(self.chunk_rows)
            )

    def _parquet_blocks(self, chunk_rows: int) -> Iterator[Block]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        row = 1
        # No pre-buffering and 1 MiB reads: Arrow holds about one batch, not one row group.
        with pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20) as reader:
            schema = reader.schema_arrow
            for batch in reader.iter_batches(batch_size=chunk_rows, use_pandas_metadata=True):
                frame = pa.Table.from_batches([batch], schema=schema).to_pandas()
                kept, dropped = self.check_frame(frame, row)
                row += batch.num_rows
                yield kept, dropped, batch.num_rows

    def _csv_blocks(self, chunk_rows: int) -> Iterator[Block]:
        import pandas as pd

        line = 1
        with (
            csv_errors(self.path, self.csv["encoding"]),
            pd.read_csv(self.path, chunksize=chunk_rows, **self.csv) as reader,
        ):
            for frame in reader:
                cells = frame.to_numpy(dtype=object)
                if line < self.first_line:  # the header row
                    cells, line = cells[self.first_line - 1 :], self.first_line
                kept, dropped = self.check_cells(cells, line)
                line += cells.shape[0]
                yield kept, dropped, cells.shape[0]

    def row_groups(self) -> list[int]:
        """The number of rows of each row group of a Parquet file."""
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path) as reader:
            return [reader.metadata.row_group(g).num_rows for g in range(reader.num_row_groups)]

    def row_group(self, group: int, first_row: int) -> NDArray[np.float64]:
        """The selected columns of one row group of a Parquet file, checked (a Dask task runs this)."""
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20) as reader:
            frame = reader.read_row_group(group, use_pandas_metadata=True).to_pandas()
        kept, _dropped = self.check_frame(frame, first_row)
        return self.select(kept)

    def check_frame(
        self, frame: pd.DataFrame, first_row: int, block: bool = True
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Rows of a Parquet file (a frame of every column, the first at row ``first_row``), checked."""
        if tuple(str(c) for c in frame.columns) != self.all_names:
            raise InputValidationError(
                f"{self.path}: a block has columns {list(frame.columns)}, expected {list(self.all_names)}"
            )
        missing = frame.isna().to_numpy()
        values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
        return check_block(self.path, self.all_names, values, missing, first_row, self.drop_na, "row", block)

    def check_cells(
        self, cells: NDArray[np.object_], first_line: int, block: bool = True, source: str | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Rows of a CSV file (text cells of every column, the first at line ``first_line``), parsed and checked.

        ``source`` names the rows in the messages (default: the file's path).
        """
        where = self.path if source is None else source
        if cells.shape[1] != len(self.all_names):
            raise InputValidationError(
                f"{where}: rows have different numbers of fields (line {first_line} on: {cells.shape[1]}, "
                f"the first row: {len(self.all_names)})"
            )
        values, missing = parse_cells(where, self.all_names, cells, first_line)
        return check_block(where, self.all_names, values, missing, first_line, self.drop_na, block=block)


def table_from_array(source: str, values: NDArray[np.float64], names: Sequence[str] | None = None) -> Table:
    """A :class:`Table` of an in-memory matrix (e.g. a built-in data set)."""
    names = default_names(values.shape[1]) if names is None else tuple(str(n) for n in names)
    return Table(source, tuple(names), np.ascontiguousarray(values, dtype=np.float64), [])


__all__ = ["Block", "Table", "TableFile", "column_index", "is_parquet", "read_table", "table_from_array"]
