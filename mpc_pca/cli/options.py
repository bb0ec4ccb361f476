"""Command-line plumbing shared by ``run``, ``party`` and ``plot``: exit codes, per-protocol
options, the data-reading options, and checked output files (written by :func:`mpc_pca.files.write_atomic`)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mpc_pca.cli.errors import command_line_flags, in_flag_terms
from mpc_pca.cli.flags import FLAGS, PRIVACY_DEFAULTS
from mpc_pca.data.inputs import ReadOptions
from mpc_pca.deployment import Deployment
from mpc_pca.validation import PrivacyLeakWarning
from protocols.errors import InputValidationError
from protocols.runtime.exits import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_PROTOCOL, EXIT_USAGE

#: What the exit codes of ``mpc-pca`` (:mod:`protocols.runtime.exits`) mean (listed in ``--help``).
EXIT_CODES_HELP = (
    f"exit codes: {EXIT_OK} success; {EXIT_INTERNAL} internal error (a bug: please report the traceback); "
    f"{EXIT_USAGE} usage error (malformed command line); {EXIT_INPUT} input error (bad data, options or "
    f"output path, found before any party starts); {EXIT_PROTOCOL} protocol failure (a party failed, timed "
    "out or sent bad data)"
)


#: ``pip install`` lines of the optional dependencies (extras of ``pyproject.toml``).
PLOTS_INSTALL = "pip install 'mpc-pca[plots]'"
STUDIES_INSTALL = "pip install 'mpc-pca[studies]'"
DASK_INSTALL = "pip install 'mpc-pca[dask]'"
#: torch's CPU build first: the public index resolves the ``torch`` extra's pin to the CUDA wheels.
CRYPTEN_INSTALL = (
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    " && pip install 'mpc-pca[torch]' && pip install --no-deps crypten==0.4.1"
)


def installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (a module set to ``None`` in ``sys.modules`` cannot)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or a module without a spec
        return False


def require_installed(what: str, modules: Sequence[str], install: str) -> None:
    """Refuse, before any work starts, a command whose optional dependencies are not installed.

    Parameters
    ----------
    what : str
        The command or option that needs them, e.g. ``"mpc-pca plot"``.
    modules : sequence of str
        The top-level modules it imports.
    install : str
        The ``pip install`` line that installs them.

    Raises
    ------
    InputValidationError
        Naming every missing module and the install line (exit 3, not an internal error).
    """
    missing = [module for module in modules if not installed(module)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise InputValidationError(
            f"{what} needs {' and '.join(missing)}, which {verb} not installed: {install}"
        )


def require_backend(backend: str | None) -> None:
    """Refuse a secure-sum backend whose optional dependencies are missing (``crypten``: torch and CrypTen)."""
    if backend == "crypten":
        require_installed("--backend crypten", ("torch", "crypten"), CRYPTEN_INSTALL)


def add_paillier_arguments(parser: argparse.ArgumentParser) -> None:
    """``--paillier-randomness`` and ``--paillier-workers`` (``run`` and ``party``; the paillier backend)."""
    from protocols.backends import DEFAULT_PAILLIER_RANDOMNESS, PAILLIER_RANDOMNESS

    parser.add_argument(
        "--paillier-randomness",
        choices=PAILLIER_RANDOMNESS,
        default=None,
        help=f"paillier backend: how encrypting parties make Paillier's randomness (default "
        f"{DEFAULT_PAILLIER_RANDOMNESS}: a table of powers of one n-th residue with full-length exponents, "
        "DCR alone as textbook r^n; fixed-base-short: half-length exponents, faster, "
        "adds the short-exponent assumption; offline: textbook r^n computed as a stock before encrypting; "
        "standard: textbook r^n while encrypting, the default of the Python API's PaillierBackend() "
        "and PPPCA(backend='paillier'))",
    )
    parser.add_argument(
        "--paillier-workers",
        type=int,
        default=None,
        metavar="N",
        help="paillier backend: cores each party encrypts and decrypts on (default: the CPUs it may use)",
    )


def paillier_backend_options(args: argparse.Namespace, backend: str | None) -> dict[str, Any]:
    """The paillier backend's constructor options from ``args`` (``{}`` for another backend).

    Raises
    ------
    InputValidationError
        If a ``--paillier-*`` option is given with another backend, or has an invalid value.
    """
    from protocols.backends import paillier_options

    randomness = getattr(args, "paillier_randomness", None)
    workers = getattr(args, "paillier_workers", None)
    if backend != "paillier":
        given = [
            flag
            for flag, value in (("--paillier-randomness", randomness), ("--paillier-workers", workers))
            if value is not None
        ]
        if given:
            raise InputValidationError(
                f"{' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} to the paillier backend, "
                f"not --backend {backend}"
            )
        return {}
    return paillier_options(randomness, workers, getattr(args, "key_bits", None))


def check_protocol_options(args: argparse.Namespace, protocol: Deployment) -> None:
    """Refuse every protocol-specific option the protocol does not use; fill in the defaults.

    The options a protocol uses and their defaults come from its protocol
    object (:attr:`~mpc_pca.deployment.Deployment.options`); the privacy options
    every DP result records get :data:`~mpc_pca.cli.flags.PRIVACY_DEFAULTS` when unused.
    """
    if getattr(args, "noise_seed", None) is not None and "epsilon" not in protocol.options:
        raise InputValidationError(
            f"--noise-seed does not apply to protocol {protocol.name!r}: it adds no noise"
        )
    for option, flag in FLAGS.items():
        value = getattr(args, option, None)
        if value not in (None, False) and option not in protocol.options:
            raise InputValidationError(f"{flag} does not apply to protocol {protocol.name!r}")
    if getattr(args, "transform_output", None) is not None and not protocol.projects_rows:
        raise InputValidationError(f"--transform-output does not apply to protocol {protocol.name!r}")
    for option, value in protocol.fixed.items():
        given = getattr(args, option, None)
        if given not in (None, value):
            raise InputValidationError(
                f"{protocol.name} uses the {value} {option}, not {FLAGS[option]} {given!r}"
            )
    for option, default in {**PRIVACY_DEFAULTS, **protocol.options}.items():
        if getattr(args, option, None) is None:
            setattr(args, option, default)


def add_read_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say how data files are read (``run`` and ``party``)."""
    group = parser.add_argument_group("reading data files (CSV, optionally .gz, or Parquet)")
    group.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the first row holds column names (--no-header: it is data); default: a header only if "
        "no cell of the first row is a number, reported on stderr",
    )
    group.add_argument("--delimiter", default=None, help="field separator (default: sniffed among , ; TAB |)")
    group.add_argument(
        "--encoding", default=None, help="text encoding, e.g. latin-1 (default UTF-8, BOM skipped)"
    )
    group.add_argument(
        "--columns",
        default=None,
        help="comma-separated column names to use, in this order (x0,x1,... for files without a header)",
    )
    group.add_argument(
        "--drop-na",
        action="store_true",
        help="drop rows with a missing cell (counted on stderr); default: refuse them, naming line and column",
    )


def read_options(args: argparse.Namespace) -> ReadOptions:
    columns = None
    if args.columns is not None:
        columns = tuple(c.strip() for c in args.columns.split(","))
        if not all(columns):
            raise InputValidationError(f"--columns has an empty name: {args.columns!r}")
    return ReadOptions(args.header, args.delimiter, args.encoding, columns, args.drop_na)


class OnceAction(argparse.Action):
    """Store the option's values; giving the option twice is a usage error."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(
                f"{option} given twice; list every file after one {option} (e.g. {option} h0.csv h1.csv h2.csv)"
            )
        setattr(namespace, self.dest, values)


def check_output(
    path: Path | None, flag: str, inputs: Iterable[str], force: bool, taken: Iterable[Path] = ()
) -> None:
    """Refuse, before any party starts, an output path that cannot or must not be written.

    Raises
    ------
    InputValidationError
        If ``path`` is one of the input files (by name, symlink or hard link)
        or another output, a directory,
        exists without ``--force``, or its directory is missing or not writable.
    """
    if path is None:
        return
    target = path.resolve()
    for spec in inputs:
        if spec.startswith(("builtin:", "synthetic:")):
            continue
        same = Path(spec).resolve() == target
        if not same and target.exists() and Path(spec).exists():
            same = os.path.samefile(spec, target)  # a hard link is the same file under another name
        if same:
            raise InputValidationError(f"{flag} {str(path)!r} is one of the input files; choose another path")
    for other in taken:
        if other is not None and other.resolve() == target:
            raise InputValidationError(f"{flag} {str(path)!r} is also another output; choose another path")
    if target.is_dir():
        raise InputValidationError(f"{flag} {str(path)!r} is a directory; give a file name")
    if target.exists() and not force:
        raise InputValidationError(f"{flag} {str(path)!r} exists; pass --force to overwrite it")
    parent = target.parent
    if not parent.is_dir():
        raise InputValidationError(f"{flag} {str(path)!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputValidationError(f"{flag} {str(path)!r}: directory {str(parent)!r} is not writable")


@contextlib.contextmanager
def warnings_once() -> Iterator[list[str]]:
    """Record a command's warnings; when it ends, print each distinct one once as ``mpc-pca: warning: ...``.

    Python's own format (category, source file and line) is replaced by one
    line per message on stderr, printed whether the command succeeds or fails;
    the settings it names are spelled as flags (:mod:`mpc_pca.cli.errors`).

    Yields
    ------
    list of str
        Filled when the block ends: the messages of the
        :class:`~mpc_pca.validation.PrivacyLeakWarning` causes (the release is
        not private), each once, in the order they were first raised.
    """
    leaks: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield leaks
        finally:
            seen: set[str] = set()
            for record in caught:
                text = in_flag_terms(" ".join(str(record.message).split()), command_line_flags())
                if text in seen:
                    continue
                seen.add(text)
                print(f"mpc-pca: warning: {text}", file=sys.stderr)
                if issubclass(record.category, PrivacyLeakWarning):
                    leaks.append(text)
