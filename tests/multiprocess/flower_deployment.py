"""Start a real Flower deployment on localhost (SuperLink, SuperNodes) and run the test app on it.

Flower's deployment engine in insecure local mode: one SuperLink and ``n``
SuperNodes as processes, every port found free at run time, then ``flwr run``
of ``tests/integrations/flower_app`` (FedAvg through
:class:`~mpc_pca.integrations.flower.SecureSumWorkflow`), whose ServerApp
writes its outcomes and final parameters as JSON. :func:`simulation` starts a
SuperLink with Flower's simulation runtime instead (the benchmark's 100-client rows).
The SuperLink keeps its state in memory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "integrations" / "flower_app"
BIN = Path(sys.executable).parent


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports the OS reports free now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def _environment(work: Path, link: int) -> dict[str, str]:
    """A Flower home in ``work`` whose default SuperLink connection is 127.0.0.1:``link`` (insecure)."""
    home = work / "flwr-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "local"\n[superlink.local]\naddress = "127.0.0.1:{link}"\ninsecure = true\n'
    )
    return {
        **os.environ,
        "FLWR_HOME": str(home),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


@contextmanager
def _processes(
    work: Path, env: dict[str, str]
) -> Iterator[Callable[[list[str], str], subprocess.Popen[bytes]]]:
    """A starter of logged processes (each in its own session), all stopped on exit."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(work / log, "wb") as out:
            proc = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _superlink(link: int, *more: str) -> list[str]:
    """The SuperLink command: insecure, state in memory (a database file was locked under load)."""
    return [
        str(BIN / "flower-superlink"),
        "--insecure",
        "--port",
        str(link),
        "--disable-runtime-dependency-installation",
        *more,
    ]


@contextmanager
def deployment(
    work: Path, behaviours: Sequence[str], extra_config: Sequence[str] | None = None
) -> Iterator[dict[str, Any]]:
    """A SuperLink and one SuperNode per entry of ``behaviours`` (node config ``partition-id``, ``behaviour``).

    ``extra_config[i]``, if given, is appended to node ``i``'s ``--node-config`` (e.g. its identity files).
    """
    extra = list(extra_config) if extra_config is not None else [""] * len(behaviours)
    link, *node_ports = free_ports(1 + len(behaviours))
    env = _environment(work, link)
    with _processes(work, env) as start:
        start(_superlink(link), "superlink.log")
        _wait_for_port(link, time.monotonic() + 30)
        nodes = [
            start(
                [
                    str(BIN / "flower-supernode"),
                    "--insecure",
                    "--superlink",
                    f"127.0.0.1:{link}",
                    "--port",
                    str(port),
                    "--node-config",
                    f'partition-id={i} behaviour="{behaviour}" {more}'.rstrip(),
                ],
                f"supernode{i}.log",
            )
            for i, (port, behaviour, more) in enumerate(zip(node_ports, behaviours, extra, strict=True))
        ]
        started = time.monotonic()  # every node imports Flower at once: the wait grows with their number
        for port in node_ports:
            _wait_for_port(port, started + 30 + 3 * len(node_ports))
        yield {"env": env, "nodes": nodes, "work": work}


@contextmanager
def simulation(work: Path) -> Iterator[dict[str, Any]]:
    """A SuperLink with Flower's simulation runtime (``--simulation``): ``flwr run`` then simulates the nodes.

    The number of simulated SuperNodes is given to ``flwr run`` (``--federation-config
    num-supernodes=N``); they are Ray actors in one process tree, not SuperNode processes.
    """
    (link,) = free_ports(1)
    env = _environment(work, link)
    with _processes(work, env) as start:
        start(_superlink(link, "--simulation"), "superlink.log")
        _wait_for_port(link, time.monotonic() + 30)
        yield {"env": env, "nodes": [], "work": work}


def flwr_run(
    app_source: Path,
    started: dict[str, Any],
    run_config: dict[str, Any],
    timeout: float,
    extra: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Copy ``app_source`` into the engine's work folder and ``flwr run`` it there with ``run_config`` overrides.

    ``started`` is what :func:`deployment` or :func:`simulation` yields; ``extra``
    are more ``flwr run`` options (e.g. the simulation's ``--federation-config``).
    """
    work: Path = started["work"]
    app = work / "app"
    shutil.copytree(app_source, app, ignore=shutil.ignore_patterns("__pycache__"))
    overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in run_config.items())
    return subprocess.run(
        [str(BIN / "flwr"), "run", str(app), "local", "--run-config", overrides, "--stream", *extra],
        env=started["env"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=work,
    )


def run_report(work: Path, run: subprocess.CompletedProcess[str]) -> str:
    """What to show when a run wrote no result: ``flwr run``'s output and the tail of every process log."""
    logs = "\n".join(f"== {p.name}\n{p.read_text()[-3000:]}" for p in sorted(work.glob("*.log")))
    return f"{run.stdout[-4000:]}\n{run.stderr[-2000:]}\n{logs}"


def run_app(dep: dict[str, Any], config: dict[str, Any], timeout: float = 240) -> dict[str, Any]:
    """``flwr run`` the test app with ``config`` overrides; the ServerApp's JSON output."""
    out = dep["work"] / "result.json"
    run = flwr_run(APP, dep, {**config, "out": str(out)}, timeout)
    if not out.exists():
        raise AssertionError(f"the app wrote no result\n{run_report(dep['work'], run)}")
    return json.loads(out.read_text())
