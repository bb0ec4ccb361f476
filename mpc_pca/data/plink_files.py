"""The three files of a PLINK 1 binary fileset (``.bed``, ``.bim``, ``.fam``), found and checked.

:func:`open_fileset` finds the ``.bim`` and ``.fam`` beside a ``.bed``
(same stem), reads both text files and checks the ``.bed``'s header and size
against them before any genotype is decoded; every refusal is an
:class:`~protocols.errors.InputValidationError` naming the file, the value and
the limit. Reading the genotypes is :mod:`mpc_pca.data.plink`'s.

The format (PLINK 1.9's documentation, "File formats"): a ``.bim`` line is
``chromosome  id  cM  position  allele_1  allele_2`` (whitespace separated), a
``.fam`` line is ``family  individual  father  mother  sex  phenotype``; a
``.bed`` starts with the bytes ``0x6c 0x1b`` and a mode byte, ``0x01`` for
SNP-major, then holds each SNP's calls in ``ceil(n / 4)`` bytes, so its size
is exactly ``3 + SNPs x ceil(individuals / 4)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

#: The first two bytes of every PLINK 1 ``.bed`` file.
BED_MAGIC = b"\x6c\x1b"
#: The third byte of a SNP-major ``.bed`` (``0x00`` is the old individual-major layout).
SNP_MAJOR = b"\x01"
#: How many repeated or differing names a message lists before "and N more".
SHOWN = 10


def listed(names: list[str], limit: int = SHOWN) -> str:
    """Up to ``limit`` names, then how many more.

    Examples
    --------
    >>> listed(["rs1", "rs2", "rs3"], limit=2)
    "['rs1', 'rs2'] and 1 more"
    """
    more = f" and {len(names) - limit:,} more" if len(names) > limit else ""
    return f"{names[:limit]}{more}"


@dataclass(frozen=True)
class Snps:
    """One site's SNPs in its ``.bim`` order: public metadata, what the sites compare to align.

    Attributes
    ----------
    source : str
        The ``.bim`` file (or the site's name) in messages.
    ids : tuple of str
        The SNP identifiers (column 2), unique within the file.
    chromosome : tuple of str
        Column 1, as written (``1``, ``X``, ``chr1`` are not translated).
    position : ndarray of int64
        The base-pair coordinate (column 4).
    allele_1, allele_2 : tuple of str
        Columns 5 and 6; a dosage counts ``allele_1``.
    """

    source: str
    ids: tuple[str, ...]
    chromosome: tuple[str, ...]
    position: NDArray[np.int64]
    allele_1: tuple[str, ...]
    allele_2: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Fileset:
    """A checked PLINK 1 fileset: the three paths, the SNPs and the individuals.

    Attributes
    ----------
    bed, bim, fam : Path
    snps : Snps
    families, samples : tuple of str
        The ``.fam``'s family and individual ids, one per genotype row.
    """

    bed: Path
    bim: Path
    fam: Path
    snps: Snps
    families: tuple[str, ...]
    samples: tuple[str, ...]


def _columns(path: Path, what: str, shared: tuple[int, ...]) -> list[list[str]]:
    """The six whitespace-separated columns of a ``.bim`` or ``.fam`` file, checked line by line.

    The ``shared`` columns (few distinct values: chromosomes, alleles) are read
    as categories, so a million lines hold a handful of strings, not a million.
    """
    import pandas as pd

    dtype = {c: "category" if c in shared else str for c in range(6)}
    try:
        frame = pd.read_csv(path, sep=r"\s+", header=None, dtype=dtype, na_filter=False)
    except pd.errors.EmptyDataError:
        raise InputValidationError(f"{path}: the file is empty; it must list at least one {what}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise InputValidationError(f"{path}: cannot read it as a PLINK text file ({exc})") from exc
    if frame.shape[1] != 6:
        raise InputValidationError(
            f"{path}: lines have {frame.shape[1]} fields; a PLINK {path.suffix} line has exactly 6"
        )
    short = np.flatnonzero((frame[5] == "").to_numpy())  # a short line leaves its last fields empty
    if short.size:
        raise InputValidationError(
            f"{path}: line {int(short[0]) + 1} has fewer than 6 fields; a PLINK {path.suffix} line has exactly 6"
        )
    return [frame[c].tolist() for c in range(6)]


def _repeated(values: list[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({v for v in values if v in seen or seen.add(v)})  # type: ignore[func-returns-value]


def read_bim(path: str | Path) -> Snps:
    """The SNPs of a ``.bim`` file.

    Raises
    ------
    InputValidationError
        For a missing or empty file, a line without 6 fields, a position that
        is not a non-negative integer, or a SNP id given twice (named).
    """
    path = Path(path)
    chromosome, ids, _cm, position, allele_1, allele_2 = _columns(path, "SNP", shared=(0, 2, 4, 5))
    repeated = _repeated(ids)
    if repeated:
        raise InputValidationError(
            f"{path}: {len(repeated):,} SNP id(s) repeated: {listed(repeated)}; each SNP id must be unique "
            "to align the sites by id (e.g. plink2 --set-all-var-ids @:#:$r:$a, or --rm-dup)"
        )
    try:
        positions = np.array([int(p) for p in position], dtype=np.int64)
    except ValueError:
        bad = next(i for i, p in enumerate(position) if not p.lstrip("-").isdigit())
        raise InputValidationError(
            f"{path}: line {bad + 1} has position {position[bad]!r}; column 4 must be an integer"
        ) from None
    if positions.size and positions.min() < 0:
        bad = int(np.argmin(positions))
        raise InputValidationError(
            f"{path}: line {bad + 1} has position {positions[bad]}; positions must be >= 0"
        )
    return Snps(str(path), tuple(ids), tuple(chromosome), positions, tuple(allele_1), tuple(allele_2))


def read_fam(path: str | Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The family and individual ids of a ``.fam`` file.

    Raises
    ------
    InputValidationError
        For a missing or empty file, a line without 6 fields, or an
        individual (family and individual id) listed twice.
    """
    path = Path(path)
    families, samples, *_ = _columns(path, "individual", shared=(2, 3, 4, 5))
    repeated = _repeated([f"{f} {s}" for f, s in zip(families, samples, strict=True)])
    if repeated:
        raise InputValidationError(
            f"{path}: {len(repeated):,} individual(s) (family id, individual id) listed twice: {listed(repeated)}"
        )
    return tuple(families), tuple(samples)


def bed_size(n_snps: int, n_samples: int) -> int:
    """The exact size in bytes of a SNP-major ``.bed`` of ``n_snps`` x ``n_samples``.

    Examples
    --------
    >>> bed_size(100, 37)  # 3 header bytes, then 10 bytes per SNP
    1003
    """
    return 3 + n_snps * -(-n_samples // 4)


def check_bed(bed: Path, n_snps: int, n_samples: int) -> None:
    """Refuse a ``.bed`` whose header is not PLINK 1 SNP-major or whose size disagrees with the counts.

    Raises
    ------
    InputValidationError
        Naming the bytes found, or the size found and the size the ``.bim``'s
        SNPs and the ``.fam``'s individuals need.
    """
    with open(bed, "rb") as handle:
        head = handle.read(3)
    if head[:2] != BED_MAGIC:
        raise InputValidationError(
            f"{bed}: starts with bytes {head[:2].hex(' ') or 'none'}, not 6c 1b: not a PLINK 1 .bed file "
            "(a PLINK 2 .pgen can be converted with plink2 --make-bed)"
        )
    if head[2:3] != SNP_MAJOR:
        raise InputValidationError(
            f"{bed}: mode byte {head[2:3].hex() or 'missing'}, not 01: only SNP-major .bed files are read "
            "(rewrite it with plink --make-bed)"
        )
    size, need = bed.stat().st_size, bed_size(n_snps, n_samples)
    if size != need:
        state = "truncated" if size < need else "longer than its .bim and .fam describe"
        per_snp = -(-n_samples // 4)
        raise InputValidationError(
            f"{bed}: {size:,} bytes, but its .bim lists {n_snps:,} SNPs and its .fam {n_samples:,} "
            f"individuals, which need 3 + {n_snps:,} x {per_snp:,} = {need:,} bytes: the file is {state} "
            "(or the .bim or .fam is not the one written with it)"
        )


def open_fileset(path: str | Path) -> Fileset:
    """Find, read and check the ``.bed``, ``.bim`` and ``.fam`` of one site.

    Parameters
    ----------
    path : str or Path
        The ``.bed`` file; its ``.bim`` and ``.fam`` have the same stem in the same directory.

    Raises
    ------
    InputValidationError
        For a missing file (named), what :func:`read_bim`, :func:`read_fam` and
        :func:`check_bed` refuse; nothing is decoded before these checks.
    """
    bed = Path(path)
    if bed.suffix.lower() != ".bed":
        raise InputValidationError(f"{bed}: a PLINK 1 fileset is named by its .bed file")
    bim, fam = bed.with_suffix(".bim"), bed.with_suffix(".fam")
    for file, role in ((bed, "genotypes"), (bim, "SNP list"), (fam, "individuals")):
        if not file.is_file():
            raise InputValidationError(
                f"{file} does not exist: the {role} of {bed.name} (PLINK 1 .bed, .bim and .fam with the same "
                "stem, in the same directory)"
            )
    snps = read_bim(bim)
    families, samples = read_fam(fam)
    check_bed(bed, len(snps), len(samples))
    return Fileset(bed, bim, fam, snps, families, samples)


__all__ = [
    "BED_MAGIC",
    "Fileset",
    "Snps",
    "bed_size",
    "check_bed",
    "listed",
    "open_fileset",
    "read_bim",
    "read_fam",
]
