"""Phase progress on stderr for commands that run longer than a few seconds.

Every role announces its phases (``mean secure sum``, ``Gram secure sum``,
``eigensolve on shares``, ``projection``, ...) through
:meth:`protocols.party.Party.phase`, which logs them at INFO on the
``mpc_pca.protocol`` logger. :func:`phase_progress` watches those records
during ``mpc-pca run`` (parties in this process) and ``mpc-pca party`` (this
party) without changing what the log shows (``-v`` still adds them to the
log), and says on stderr which phase is running, once the command has run for
:data:`QUIET_SECONDS` seconds. Before any phase, the command's first line
(what it starts, e.g. ``pppca-ss: reading the data ...``) is written after
half a second (:data:`FIRST_LINE_SECONDS`), so that a run is never silent
while it reads its data, generates keys or waits for the other parties
(:meth:`PhaseProgress.announce`); a command refused on its arguments prints
only its error.

Iterative phases (the secure eigensolver's subspace or ladder iterations)
also report each step (:meth:`protocols.party.Party.iteration`, DEBUG
records on the same logger).

On a terminal (stderr is a TTY) the report is one line, rewritten in place
about once a second with the elapsed time and the phase, and ended when the
command ends; during an iterative phase the line ends with a bar and the
count, ``[########------------] 4/10``. Otherwise (a file, a pipe, a CI log)
it is one line per phase started after the first :data:`QUIET_SECONDS`, with
no control characters and no per-iteration lines:
``mpc-pca: progress: 4.2 s: Gram secure sum``. ``-q`` turns it off. Parties
started as separate processes (``run --transport processes``) forward their
phase and iteration records to the parent as text lines on their stderr
(:mod:`mpc_pca.deploy.phase_lines`), which logs them again on the same
logger, so they are reported the same way.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from protocols.party import ITERATION, PHASE_STARTED

#: Seconds a command runs before its phases are shown (its first line is shown at once).
QUIET_SECONDS = 1.0
#: Seconds a command runs before its first line (what it starts) is shown.
FIRST_LINE_SECONDS = 0.5
#: Seconds between two rewrites of the progress line on a terminal.
TICK_SECONDS = 1.0
#: Characters of the iteration bar on a terminal.
BAR_WIDTH = 20
PROTOCOL_LOGGER = "mpc_pca.protocol"


class PhaseProgress:
    """The phase report of one command (see the module notes).

    Parameters
    ----------
    stream : file
        Where to write (stderr).
    tty : bool
        Rewrite one line in place (a terminal) or write one line per phase.
    quiet_seconds : float
        Nothing is written before this many seconds.
    clock : callable
        Seconds, monotonic (``time.monotonic``).
    """

    def __init__(
        self,
        stream: TextIO,
        tty: bool,
        quiet_seconds: float = QUIET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = tty
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self.start = clock()
        self.phase: str | None = None
        self.first: str | None = None
        self.steps: tuple[int, int] | None = None
        self.shown: set[str] = set()
        self.visible = False
        self.line_open = False
        self.lock = threading.Lock()

    def announce(self, text: str) -> None:
        """What the command starts: written once the command has run :data:`FIRST_LINE_SECONDS`.

        A command that ends (or fails on its arguments) sooner prints nothing;
        one that runs longer shows this line before its first phase, quiet time
        or not.
        """
        with self.lock:
            self.first = text
            self._first_line()

    def _first_line(self) -> None:
        elapsed = self.clock() - self.start
        if self.first is None or elapsed < min(FIRST_LINE_SECONDS, self.quiet_seconds):
            return
        if self.tty:
            self.stream.write(f"\r\x1b[Kmpc-pca: {elapsed:5.1f} s: {self.first}")
            self.line_open = True
        else:
            self.stream.write(f"mpc-pca: progress: {elapsed:.1f} s: {self.first}\n")
        self.stream.flush()
        self.first = None
        self.visible = True

    def started(self, label: str) -> None:
        """A party started phase ``label``; report it if the command is past its quiet time."""
        with self.lock:
            self.phase = label
            self.steps = None
            self._report()

    def iteration(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` steps of an iterative phase are over; a terminal shows a bar.

        The steps belong to the running phase (``label`` names the loop, e.g.
        ``subspace iteration``); a line-mode report writes nothing for them.
        """
        with self.lock:
            if total < 1 or not 0 <= done <= total:
                return  # not a count this report can draw
            self.steps = (done, total)
            if self.tty:
                self._report()

    def tick(self) -> None:
        """Called periodically: show the report once the quiet time is over; refresh a terminal line."""
        with self.lock:
            self._report(tick=True)

    def finish(self) -> None:
        """End the report (close a terminal line)."""
        with self.lock:
            if self.line_open:
                self.stream.write("\n")
                self.stream.flush()
                self.line_open = False

    def _report(self, tick: bool = False) -> None:
        self._first_line()
        elapsed = self.clock() - self.start
        if elapsed < self.quiet_seconds or self.phase is None:
            return
        self.visible = True
        if self.tty:
            bar = ""
            if self.steps is not None:
                done, total = self.steps
                filled = BAR_WIDTH * done // total
                bar = f" [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total}"
            self.stream.write(f"\r\x1b[Kmpc-pca: {elapsed:5.1f} s: {self.phase}{bar}")
            self.line_open = True
            self.stream.flush()
        elif self.phase not in self.shown:
            self.shown.add(self.phase)
            self.stream.write(f"mpc-pca: progress: {elapsed:.1f} s: {self.phase}\n")
            self.stream.flush()


class _Watch(logging.Filter):
    """A filter on the protocol logger: feeds phase starts to the report, passes what the log would show."""

    def __init__(self, progress: PhaseProgress, shown_level: int) -> None:
        super().__init__()
        self.progress = progress
        self.shown_level = shown_level

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == PHASE_STARTED and len(args) == 2:
            self.progress.started(str(args[1]))
        elif (
            record.msg == ITERATION
            and len(args) == 4
            and isinstance(args[2], int)
            and isinstance(args[3], int)
        ):
            self.progress.iteration(str(args[1]), args[2], args[3])
        return record.levelno >= self.shown_level


@contextlib.contextmanager
def phase_progress(
    enabled: bool = True,
    stream: TextIO | None = None,
    tty: bool | None = None,
    quiet_seconds: float = QUIET_SECONDS,
    first_line: str | None = None,
) -> Iterator[PhaseProgress | None]:
    """Report the phases of the roles run inside the block (module notes); nothing if not ``enabled``.

    Parameters
    ----------
    enabled : bool, default=True
        ``False`` (``-q``) reports nothing.
    stream : file, optional
        Where to write (default: stderr).
    tty : bool, optional
        Terminal or line mode (default: whether ``stream`` is a TTY).
    quiet_seconds : float, default=:data:`QUIET_SECONDS`
        No phase is written before this many seconds.
    first_line : str, optional
        What the command starts, shown after :data:`FIRST_LINE_SECONDS` (:meth:`PhaseProgress.announce`).
    """
    if not enabled:
        yield None
        return
    out = sys.stderr if stream is None else stream
    terminal = bool(getattr(out, "isatty", lambda: False)()) if tty is None else tty
    progress = PhaseProgress(out, terminal, quiet_seconds)
    if first_line is not None:
        progress.announce(first_line)
    logger = logging.getLogger(PROTOCOL_LOGGER)
    level = logger.level
    watch = _Watch(progress, logger.getEffectiveLevel())
    logger.addFilter(watch)
    # DEBUG: the iteration records reach the filter, which passes on only what the log would show
    logger.setLevel(min(logging.DEBUG, logger.getEffectiveLevel()))
    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(0.25 if progress.first is not None or not terminal else TICK_SECONDS):
            progress.tick()

    thread = threading.Thread(target=ticker, name="mpc-pca-progress", daemon=True)
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()
        logger.removeFilter(watch)
        logger.setLevel(level)
        progress.finish()


__all__ = ["FIRST_LINE_SECONDS", "QUIET_SECONDS", "PhaseProgress", "phase_progress"]
