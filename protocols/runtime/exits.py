"""How a party process ends: the exit codes of ``mpc-pca`` and the one body that runs a party.

Every party process (``mpc-pca party``, a party of
:func:`mpc_pca.deploy.launch_local`, a party of
:func:`protocols.runtime.run_processes`) runs its work through
:func:`run_or_exit`: on failure it prints one line ``mpc-pca: error: ...``
(which the launcher reads back, :meth:`~protocols.runtime.launcher.ProcessOutcome.error_line`)
and ends the process at once with the failure's code, so that its links
close and its peers stop waiting for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TypeVar

from protocols.errors import InputValidationError, ProtocolError

#: Exit codes of ``mpc-pca`` and of every party process.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2  # argparse's own code for a malformed command line
EXIT_INPUT = 3
EXIT_PROTOCOL = 4
#: The start of the one line a failed party prints on stderr.
ERROR_PREFIX = "mpc-pca: error: "

T = TypeVar("T")


def exit_code(exc: BaseException) -> int:
    """The exit code of a process that failed with ``exc``.

    Examples
    --------
    >>> exit_code(InputValidationError("bad")), exit_code(ProtocolError("lost")), exit_code(KeyError("x"))
    (3, 4, 1)
    """
    if isinstance(exc, InputValidationError):
        return EXIT_INPUT
    if isinstance(exc, ProtocolError):
        return EXIT_PROTOCOL
    return EXIT_INTERNAL


def run_or_exit(body: Callable[[], T]) -> T:
    """Return ``body()``; on failure print why and end the process at once (:func:`os._exit`).

    An :class:`~protocols.errors.InputValidationError` or
    :class:`~protocols.errors.ProtocolError` prints
    ``mpc-pca: error: TYPE: MESSAGE``; any other exception (a bug) prints its
    traceback, then ``mpc-pca: error: internal error: TYPE: MESSAGE``. The
    process then exits with :func:`exit_code` without any teardown: its peers
    must see its links close.
    """
    try:
        return body()
    except (InputValidationError, ProtocolError) as exc:
        print(f"{ERROR_PREFIX}{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(exit_code(exc))
    except Exception as exc:  # a bug, not a protocol failure: keep the traceback
        import traceback

        traceback.print_exc()
        print(f"{ERROR_PREFIX}internal error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(EXIT_INTERNAL)


__all__ = [
    "ERROR_PREFIX",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_PROTOCOL",
    "EXIT_USAGE",
    "exit_code",
    "run_or_exit",
]
