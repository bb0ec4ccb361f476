"""Start the parties of one run as local OS processes and wait for all of them.

The launcher hosts the run's rendezvous store itself on a port the kernel
picks (port 0), so no fixed port is used and the store outlives any party: a
party that dies can not take the failure record down with it. Each party is a
command line (typically ``python -m mpc_pca.cli party ... --external-store``)
that connects to ``127.0.0.1:<port>``.

When one party fails, the others normally stop within moments (their links
close); the launcher still gives them ``timeout + grace`` seconds and then
kills the stragglers, so a launch always ends.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import ProtocolError

_ERROR_PREFIX = "mpc-pca: error: "
_POLL_SECONDS = 0.02


@dataclass
class ProcessOutcome:
    """How one party's process ended."""

    name: str
    returncode: int | None
    stderr: str
    seconds: float
    killed_by_launcher: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error_line(self) -> str:
        """The party's own error message, or a description of how it ended."""
        for line in reversed(self.stderr.splitlines()):
            if line.startswith(_ERROR_PREFIX):
                return line[len(_ERROR_PREFIX) :]
        if self.killed_by_launcher:
            return "did not stop in time and was killed by the launcher"
        if self.returncode is not None and self.returncode < 0:
            return f"was killed by signal {-self.returncode}"
        tail = self.stderr.strip().splitlines()[-1:] or ["no error output"]
        return f"exited with status {self.returncode}: {tail[0]}"


def host_store(world_size: int, timeout: float) -> tuple[Any, int]:
    """Start a TCPStore server on 127.0.0.1 (only) at a free port; return it and its port.

    Only the ``--backend crypten --insecure`` runs use it.
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


def launch(
    commands: Mapping[str, Sequence[str]],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    grace: float = 10.0,
    workdir: Path | None = None,
) -> dict[str, ProcessOutcome]:
    """Run one process per party and wait until all have ended.

    Parameters
    ----------
    commands : mapping of str to sequence of str
        Party name to its command line.
    timeout : float
        The parties' receive timeout; after the first failure the others get
        ``timeout + grace`` seconds to end by themselves before being killed.
    env : mapping, optional
        Environment of the children (defaults to this process's).
    workdir : Path, optional
        Where the children's stderr is captured (a temporary directory by default).
    """
    environment = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="mpc-pca-launch-", dir=workdir) as tmp:
        logs = {name: Path(tmp) / f"{name}.stderr" for name in commands}
        handles = {name: logs[name].open("wb") for name in commands}
        start = time.monotonic()
        procs = {}
        try:
            for name, command in commands.items():
                procs[name] = subprocess.Popen(
                    list(command), stdout=subprocess.DEVNULL, stderr=handles[name], env=environment
                )
            ended: dict[str, float] = {}
            killed: set[str] = set()
            kill_at = None
            while len(ended) < len(procs):
                for name, proc in procs.items():
                    if name not in ended and proc.poll() is not None:
                        ended[name] = time.monotonic() - start
                        if proc.returncode != 0 and kill_at is None:
                            kill_at = time.monotonic() + timeout + grace
                if kill_at is not None and time.monotonic() > kill_at:
                    for name, proc in procs.items():
                        if name not in ended:
                            proc.kill()
                            proc.wait()
                            killed.add(name)
                            ended[name] = time.monotonic() - start
                time.sleep(_POLL_SECONDS)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for handle in handles.values():
                handle.close()
        return {
            name: ProcessOutcome(
                name=name,
                returncode=procs[name].returncode,
                stderr=logs[name].read_text(errors="replace"),
                seconds=ended.get(name, float("nan")),
                killed_by_launcher=name in killed,
            )
            for name in commands
        }


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
