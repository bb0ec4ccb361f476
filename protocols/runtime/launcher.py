"""Start the parties of one run as local OS processes and wait for all of them.

The launcher hosts the run's rendezvous store itself on a port the kernel
picks (port 0), so no fixed port is used and the store outlives any party: a
party that dies can not take the failure record down with it. Each party is a
command line (typically ``python -m mpc_pca.cli party ...``, told that the
rendezvous is hosted outside it) that connects to ``127.0.0.1:<port>``, or a
:class:`PythonEntry`: the same entry point called in a child of a fork server
that imported the given modules once, so the parties of a run do not each
pay the interpreter's and the packages' start-up (issue 15). The fork server (:mod:`multiprocessing`'s
``forkserver``: a clean single-threaded process started on first use, never
this launcher forking itself with its threads) lives as long as the launcher
process and serves later launches too.

When one party fails, the others normally stop within moments (their links
close); the launcher still gives them ``timeout + grace`` seconds and then
kills the stragglers, so a launch always ends.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime.exits import ERROR_PREFIX

_POLL_SECONDS = 0.02
#: Lines a party writes to its stderr for its launcher (progress), not for a person: they start
#: with this and are never taken for the party's error message.
FORWARD_PREFIX = "mpc-pca-forward\t"


@dataclass
class ProcessOutcome:
    """How one party's process ended."""

    name: str
    returncode: int | None
    stderr: str
    seconds: float
    killed_by_launcher: bool = False
    #: Peak resident set size of the process in bytes: the largest ``VmHWM`` (Linux ``/proc``) read
    #: while it ran, sampled at every poll of the launcher (every 20 ms), so growth in its last
    #: moments may be missed; ``None`` where ``/proc`` is not available. (``ru_maxrss`` is not used:
    #: on Linux a child's keeps the launcher's own resident size from before its ``exec``.)
    peak_rss_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error_line(self) -> str:
        """The party's own error message, or a description of how it ended."""
        for line in reversed(self.stderr.splitlines()):
            if line.startswith(ERROR_PREFIX):
                return line[len(ERROR_PREFIX) :]
        if self.killed_by_launcher:
            return "did not stop in time and was killed by the launcher"
        if self.returncode is not None and self.returncode < 0:
            return f"was killed by signal {-self.returncode}"
        own = [line for line in self.stderr.strip().splitlines() if not line.startswith(FORWARD_PREFIX)]
        tail = own[-1:] or ["no error output"]
        return f"exited with status {self.returncode}: {tail[0]}"


@dataclass(frozen=True)
class PythonEntry:
    """A party run as ``module.function(argv)`` (returning its exit code) in a forked child."""

    module: str
    function: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class PythonCall:
    """A party run as ``target(*args)`` (returning its exit code) in a child process.

    ``target`` and ``args`` are pickled by this launcher to its own child (never
    bytes from a peer), so ``target`` must be a module-level function or a
    :func:`functools.partial` of one. ``start_method`` is ``"forkserver"`` (a
    child of the preloaded fork server, the default) or ``"spawn"`` (a new
    interpreter, e.g. for parties that initialise torch/gloo).
    """

    target: Callable[..., int]
    args: tuple[Any, ...] = ()
    start_method: str = "forkserver"


def _run_entry(entry: PythonEntry | PythonCall, stderr_path: str, environment: dict[str, str]) -> None:
    """Body of a forked party: stderr to its log, stdout discarded, the run's environment, then the call.

    Variables read only when a module is first imported (e.g. thread counts of
    numeric libraries) keep the values the fork server started with.
    """
    log = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    os.environ.clear()
    os.environ.update(environment)
    try:
        if isinstance(entry, PythonCall):
            code = entry.target(*entry.args)
        else:
            code = getattr(importlib.import_module(entry.module), entry.function)(list(entry.argv))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def start_fork_server(preload: Sequence[str]) -> None:
    """Start the fork server now (if not running) so that its imports overlap the caller's work.

    Idempotent; ``preload`` takes effect only if this call starts the server.
    """
    import multiprocessing.forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
    multiprocessing.forkserver.ensure_running()


def _high_water_rss(pid: int) -> int | None:
    """``VmHWM`` of a running process from ``/proc`` (Linux), in bytes; ``None`` if it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024  # "VmHWM:   123456 kB"
    except (OSError, ValueError, IndexError):
        return None
    return None


class _ForkedParty:
    """The :class:`subprocess.Popen` calls :func:`launch` uses, for a fork-server child."""

    def __init__(
        self, entry: PythonEntry | PythonCall, stderr_path: Path, environment: dict[str, str]
    ) -> None:
        method = entry.start_method if isinstance(entry, PythonCall) else "forkserver"
        if method not in ("forkserver", "spawn"):
            raise InputValidationError(f"start_method must be 'forkserver' or 'spawn', got {method!r}")
        context: Any = multiprocessing.get_context(method)
        self._process = context.Process(
            target=_run_entry, args=(entry, str(stderr_path), environment), daemon=False
        )
        self._process.start()

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def poll(self) -> int | None:
        return self._process.exitcode

    def kill(self) -> None:
        self._process.kill()

    def wait(self) -> int | None:
        self._process.join()
        return self._process.exitcode


def host_store(world_size: int, timeout: float) -> tuple[Any, int]:
    """Start a TCPStore server on 127.0.0.1 (only) at a free port; return it and its port.

    Only runs of the ``crypten`` backend (``insecure=True``) use it.
    """
    from protocols.transport.torch_store import store_server

    store = store_server("127.0.0.1", 0, world_size, timeout)
    return store, int(store.port)


def recorded_failure(store: Any) -> str | None:
    """The first failure a party recorded in the store, if any."""
    try:
        if store.check(["mpc/abort"]):
            return store.get("mpc/abort").decode("utf-8", "replace")
    except (RuntimeError, OSError):
        return None
    return None


class _LineTail:
    """The complete lines appended to a party's captured stderr since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def new_lines(self) -> list[str]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return []
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in lines]


def _forward(tails: Mapping[str, _LineTail], on_line: Callable[[str, str], object] | None) -> None:
    """Hand every new forwarded line of every party to ``on_line``."""
    if on_line is None:
        return
    for name, tail in tails.items():
        for line in tail.new_lines():
            if line.startswith(FORWARD_PREFIX):
                on_line(name, line[len(FORWARD_PREFIX) :])


def _needs_fork_server(command: Sequence[str] | PythonEntry | PythonCall) -> bool:
    """Whether the party ``command`` starts is a child of the fork server."""
    return isinstance(command, PythonEntry) or (
        isinstance(command, PythonCall) and command.start_method == "forkserver"
    )


def _start(
    command: Sequence[str] | PythonEntry | PythonCall,
    log: Path,
    handle: IO[bytes],
    environment: dict[str, str],
) -> Any:
    """Start one party, its stderr captured in ``log`` (opened as ``handle``); a ``Popen``-like handle."""
    if isinstance(command, (PythonEntry, PythonCall)):
        return _ForkedParty(command, log, environment)
    return subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=handle, env=environment)


@dataclass
class _Watch:
    """The parties of one launch while they run: when each ended, which were killed, their peak RSS."""

    start: float
    procs: dict[str, Any] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)
    killed: set[str] = field(default_factory=set)
    peak_rss: dict[str, int] = field(default_factory=dict)
    #: When the stragglers are killed: ``timeout + grace`` seconds after the first failure.
    kill_at: float | None = None

    def all_ended(self) -> bool:
        return len(self.ended) >= len(self.procs)

    def poll(self, patience: float) -> None:
        """Sample every running party's RSS and note which ended; the first failure sets :attr:`kill_at`."""
        for name, proc in self.procs.items():
            if name in self.ended:
                continue
            pid = getattr(proc, "pid", None)
            rss = None if pid is None else _high_water_rss(pid)
            if rss is not None:
                self.peak_rss[name] = max(rss, self.peak_rss.get(name, 0))
            if proc.poll() is not None:
                self.ended[name] = time.monotonic() - self.start
                if proc.returncode != 0 and self.kill_at is None:
                    self.kill_at = time.monotonic() + patience

    def kill_if_overdue(self) -> None:
        """Past :attr:`kill_at`, kill every party still running."""
        if self.kill_at is None or time.monotonic() <= self.kill_at:
            return
        for name, proc in self.procs.items():
            if name not in self.ended:
                proc.kill()
                proc.wait()
                self.killed.add(name)
                self.ended[name] = time.monotonic() - self.start

    def outcome(self, name: str, log: Path) -> ProcessOutcome:
        """How party ``name`` ended, its captured stderr read from ``log``."""
        return ProcessOutcome(
            name=name,
            returncode=self.procs[name].returncode,
            stderr=log.read_text(errors="replace"),
            seconds=self.ended.get(name, float("nan")),
            killed_by_launcher=name in self.killed,
            peak_rss_bytes=self.peak_rss.get(name),
        )


def launch(
    commands: Mapping[str, Sequence[str] | PythonEntry | PythonCall],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    grace: float = 10.0,
    workdir: Path | None = None,
    preload: Sequence[str] = (),
    on_line: Callable[[str, str], object] | None = None,
) -> dict[str, ProcessOutcome]:
    """Run one process per party and wait until all have ended.

    Parameters
    ----------
    commands : mapping of str to (sequence of str, PythonEntry or PythonCall)
        Party name to its command line, to the entry point to call in a
        child of the fork server, or to the callable to call in a child.
    timeout : float
        The parties' receive timeout; after the first failure the others get
        ``timeout + grace`` seconds to end by themselves before being killed.
    env : mapping, optional
        Environment of the children (defaults to this process's).
    workdir : Path, optional
        Where the children's stderr is captured (a temporary directory by default).
    preload : sequence of str
        Modules the fork server imports once before forking :class:`PythonEntry`
        parties (used only when the fork server starts).
    on_line : callable, optional
        Called as ``on_line(party, line)`` with every complete line a party
        writes to its stderr that starts with :data:`FORWARD_PREFIX` (the
        prefix removed), while the parties run: text only, read from the
        captured stderr at every poll.
    """
    environment = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="mpc-pca-launch-", dir=workdir) as tmp:
        logs = {name: Path(tmp) / f"{name}.stderr" for name in commands}
        handles = {name: logs[name].open("wb") for name in commands}
        watch = _Watch(start=time.monotonic())
        if any(_needs_fork_server(command) for command in commands.values()):
            start_fork_server(preload)
        try:
            for name, command in commands.items():
                watch.procs[name] = _start(command, logs[name], handles[name], environment)
            tails = {name: _LineTail(logs[name]) for name in commands} if on_line is not None else {}
            while not watch.all_ended():
                watch.poll(timeout + grace)
                watch.kill_if_overdue()
                _forward(tails, on_line)
                time.sleep(_POLL_SECONDS)
            _forward(tails, on_line)
        finally:
            for proc in watch.procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for handle in handles.values():
                handle.close()
        return {name: watch.outcome(name, logs[name]) for name in commands}


def raise_on_failure(outcomes: Mapping[str, ProcessOutcome], store: Any = None) -> None:
    """Raise :class:`ProtocolError` naming the root cause if any party failed."""
    failed = [o for o in outcomes.values() if not o.ok]
    if not failed:
        return
    root = None if store is None else recorded_failure(store)
    lines = [f"{o.name}: {o.error_line()}" for o in failed]
    head = root if root is not None else lines[0]
    details = "".join(f"\n  {line}" for line in lines)
    raise ProtocolError(f"the run failed: {head}{details}")
