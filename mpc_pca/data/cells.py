"""The rules of a table's cells, the same for every reader: format, header, numbers, missing values.

Nothing is silently dropped, reordered or misread:

* **Header.** ``header=True/False`` forces it; by default the first row is a
  header only if *no* cell of it parses as a number (so a first data row
  holding ``NA`` or a typo such as ``2.O`` is data, and then an error), and the
  guess is reported in the notes.
* **Delimiter.** Sniffed among ``, ; TAB |`` from the first lines unless given.
* **Encoding.** UTF-8 with or without a byte-order mark by default; any other
  (``latin-1``, ``cp1252``, ...) by name. A file that is not valid in the
  encoding is refused with the byte's position, never decoded wrongly.
* **Compression.** ``.gz``, ``.bz2``, ``.xz``, ``.zip`` by extension (pandas).
* **Missing cells** (empty, ``NA``, ``NaN``, ``null``, ...) are an error
  naming the line and column, or, with ``drop_na``, their rows are dropped
  and counted in the notes. A cell that is not a number is an error naming
  line, column and the cell.
* **Parquet** (``.parquet``, ``.pq``) through pyarrow: numeric columns only.

Parsing is pandas' ``read_csv`` (every cell read as text first, so that
nothing is guessed); only the numeric conversion and the error messages are
this module's. The one reader of a file, which applies these rules to every
block it reads, is :class:`mpc_pca.data.tables.TableFile`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

if TYPE_CHECKING:  # pandas is imported where a file is read: a party's start-up does not pay for it
    import pandas as pd

#: Cell texts read as a missing value (compared after stripping blanks).
MISSING_TOKENS = frozenset(
    {"", "NA", "N/A", "n/a", "NaN", "nan", "NAN", "-nan", "null", "NULL", "None", "#N/A", "<NA>", "?"}
)
DELIMITERS = ",;\t|"
_SNIFF_CHARS = 64 * 1024


def default_names(n_columns: int) -> tuple[str, ...]:
    """Names of the columns of a file without a header: ``x0, x1, ...`` (scikit-learn's style)."""
    return tuple(f"x{j}" for j in range(n_columns))


def csv_format(path: Path, encoding: str | None, delimiter: str | None) -> tuple[str, str]:
    """The encoding (UTF-8 with an optional byte-order mark by default) and the delimiter (sniffed)."""
    encoding = encoding or "utf-8-sig"
    try:
        "".encode(encoding)
    except LookupError as exc:
        raise InputValidationError(f"unknown encoding {encoding!r} (encoding={encoding!r})") from exc
    if delimiter is None:
        delimiter = sniff_delimiter(path, encoding)
    elif len(delimiter) != 1:
        raise InputValidationError(f"delimiter={delimiter!r} is invalid; it must be one character")
    return encoding, delimiter


def csv_arguments(delimiter: str, encoding: str) -> dict[str, Any]:
    """``pandas.read_csv`` arguments that read every cell as text (nothing guessed)."""
    return {
        "sep": delimiter,
        "header": None,
        "dtype": str,
        "keep_default_na": False,
        "na_filter": False,
        "encoding": encoding,
        "compression": "infer",
        "skip_blank_lines": True,
        "engine": "c",
    }


@contextmanager
def csv_errors(path: Path, encoding: str) -> Iterator[None]:
    """Turn pandas' reading errors of ``path`` into :class:`InputValidationError` naming the problem."""
    import pandas as pd

    try:
        yield
    except UnicodeError as exc:  # UnicodeDecodeError, or a codec's own (utf-16: no BOM)
        raise _decode_error(path, encoding, exc) from exc
    except pd.errors.EmptyDataError as exc:
        raise InputValidationError(f"data file {str(path)!r} holds no data rows") from exc
    except pd.errors.ParserError as exc:
        raise InputValidationError(f"{path}: rows have different numbers of fields ({exc})") from exc
    except (OSError, EOFError) as exc:
        raise InputValidationError(f"{path}: cannot read it ({exc})") from exc


def take_header(
    path: Path, cells: NDArray[np.object_], header: bool | None
) -> tuple[tuple[str, ...], int, list[str]]:
    """The column names, the line of the first data row and the notes, from the first rows' cells.

    ``header=None`` takes the first row as the header only if no cell of it is a number.
    """
    notes: list[str] = []
    if header is None:
        header = cells.shape[0] > 0 and not any(_parses(c) for c in cells[0])
        if header:
            notes.append(
                f"{path}: first row taken as the header (no cell of it is a number; "
                "header=False to read it as data)"
            )
        else:
            notes.append(f"{path}: no header (a cell of the first row is a number; header=True to force)")
    if header:
        return tuple(str(c).strip() for c in cells[0]), 2, notes
    return default_names(cells.shape[1]), 1, notes


def _parses(cell: object) -> bool:
    text = str(cell).strip()
    if text in MISSING_TOKENS:
        return False
    try:
        _cell_float(text)
    except ValueError:
        return False
    return True


def _cell_float(text: str) -> float:
    """A CSV cell as a float, without the Python-literal extras ``float()`` accepts.

    Python's ``float("1_5")`` is 15.0 (digit grouping in source code); in a
    data file an underscore is a typo or a foreign format, so it is refused.
    """
    if "_" in text:
        raise ValueError(f"underscore in {text!r}")
    return float(text)


def sniff_delimiter(path: Path, encoding: str) -> str:
    """The delimiter of the first lines (``,`` if nothing else is consistent)."""
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding=encoding, newline="") as handle:
            sample = handle.read(_SNIFF_CHARS)
    except UnicodeError as exc:  # UnicodeDecodeError, or a codec's own (utf-16: no BOM)
        raise _decode_error(path, encoding, exc) from exc
    except (OSError, EOFError) as exc:
        raise InputValidationError(f"{path}: cannot read it ({exc})") from exc
    lines = [line for line in sample.splitlines()[:-1] or sample.splitlines() if line.strip()][:50]
    if not lines:
        return ","
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
    except csv.Error:
        counts = {d: lines[0].count(d) for d in DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","


def _decode_error(path: Path, encoding: str, exc: UnicodeError) -> InputValidationError:
    shown = "utf-8" if encoding == "utf-8-sig" else encoding
    if not isinstance(exc, UnicodeDecodeError):  # e.g. utf-16 on a file without a byte-order mark
        return InputValidationError(
            f"{path}: cannot be read as {shown} ({exc}); pass the file's encoding, e.g. encoding='utf-8'"
        )
    return InputValidationError(
        f"{path}: byte 0x{exc.object[exc.start]:02x} at position {exc.start} is not valid {shown}; "
        "pass the file's encoding, e.g. encoding='latin-1'"
    )


def parse_cells(
    path: Path | str, names: tuple[str, ...], cells: NDArray[np.object_], first_line: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Cells read as text into floats (``NaN`` where missing) and the mask of missing cells.

    Raises
    ------
    InputValidationError
        For a cell that is not a number, naming its line (``first_line`` is
        the line of ``cells[0]``), column and text.
    """
    text = np.vectorize(lambda c: str(c).strip(), otypes=[object])(cells)
    missing = np.vectorize(lambda c: c in MISSING_TOKENS, otypes=[bool])(text)
    values = np.full(text.shape, np.nan)
    for (r, c), cell in np.ndenumerate(text):
        if missing[r, c]:
            continue
        try:
            values[r, c] = _cell_float(cell)
        except ValueError:
            grouping = " (an underscore is not accepted in a number)" if "_" in cell else ""
            raise InputValidationError(
                f"{path}: line {first_line + r}, column {c + 1} ({names[c]!r}) is not a number: "
                f"{cell!r}{grouping}"
            ) from None
    return values, missing


def check_block(
    path: Path | str,
    names: tuple[str, ...],
    values: NDArray[np.float64],
    missing: NDArray[np.bool_],
    first_line: int,
    drop_na: bool,
    where: str = "line",
    block: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Refuse (or, with ``drop_na``, drop) rows with missing cells; refuse non-finite values.

    The same checks for a whole table and for one block of a table read in
    chunks (:class:`mpc_pca.data.tables.TableFile`): ``first_line`` is the line (or
    row, ``where="row"``) number of ``values[0]`` in the file, and ``block``
    says that the counts of missing cells in the message are the block's.

    Returns
    -------
    values : ndarray
        The rows kept.
    dropped : ndarray of int
        The line (row) numbers of the rows dropped for a missing cell.

    Raises
    ------
    InputValidationError
        Naming the line (row) and column of the first missing cell (without
        ``drop_na``) or of the first non-finite value.
    """
    dropped = np.zeros(0, dtype=np.int64)
    if missing.any():
        bad_rows = np.flatnonzero(missing.any(axis=1))
        if not drop_na:
            last = first_line + values.shape[0] - 1
            scope = f" of {where}s {first_line}..{last}, the block read" if block else ""
            r = int(bad_rows[0])
            c = int(np.flatnonzero(missing[r])[0])
            raise InputValidationError(
                f"{path}: {where} {first_line + r}, column {c + 1} ({names[c]!r}) is missing "
                f"({int(missing.sum())} missing cell(s) in {bad_rows.size} row(s){scope}); "
                "pass drop_na=True to drop such rows"
            )
        dropped = (first_line + bad_rows).astype(np.int64)
        values = values[~missing.any(axis=1)]
        first_kept = np.flatnonzero(~missing.any(axis=1))
    else:
        first_kept = None
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        line = first_line + (r if first_kept is None else int(first_kept[r]))
        raise InputValidationError(
            f"{path}: {where} {line}, column {c + 1} ({names[c]!r}) holds the non-finite value "
            f"{values[r, c]}; only finite numbers are accepted"
        )
    return values, dropped


def dropped_note(
    path: Path | str,
    dropped: Sequence[int] | NDArray[np.int64],
    where: str = "line",
    count: int | None = None,
) -> str:
    """The note of rows dropped for a missing cell.

    ``dropped`` holds their line (row) numbers, or the first eleven of them
    when ``count`` gives how many rows were dropped in all.
    """
    count = len(dropped) if count is None else count
    shown = ", ".join(str(int(r)) for r in dropped[:10]) + (" ..." if count > 10 else "")
    return f"{path}: dropped {count} row(s) with missing values ({where}s {shown})"


def numeric_columns(path: Path | str, frame: pd.DataFrame) -> tuple[str, ...]:
    """The names of a Parquet file's columns (a frame of its rows), refusing a non-numeric column."""
    import pandas as pd

    names = tuple(str(c) for c in frame.columns)
    for name, dtype in zip(names, frame.dtypes, strict=True):
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)):
            raise InputValidationError(f"{path}: column {name!r} has type {dtype}, not a number")
    return names


__all__ = [
    "DELIMITERS",
    "MISSING_TOKENS",
    "check_block",
    "csv_arguments",
    "csv_errors",
    "csv_format",
    "default_names",
    "dropped_note",
    "numeric_columns",
    "parse_cells",
    "sniff_delimiter",
    "take_header",
]
