"""Count the project files a provider enters from ``mpc-pca party``'s arguments to its first protocol message.

Runs one PPPCA run between ``mpc-pca party`` processes on loopback (wine, three
providers, ``--insecure`` plain links): ranks 1 .. M+1 as child processes,
provider 0 (which hosts the rendezvous) in this process under a profile hook.
From the call of ``party_command(args)`` until provider 0's role sends its
first message (:meth:`protocols.party.Party.send`), every call that passes from
one project file (``mpc_pca/``, ``protocols/``) into another is a move. The
report counts

* ``files``: the distinct project files entered;
* ``re_entries``: moves into a file entered before (a path that bounces
  between two modules shows here);
* ``moves``: every move between two project files.

Nothing is timed; the numbers depend only on the code's call structure, so
they compare layouts (``python tools/trace_party_path.py`` before and after a
change). ``--list`` prints the files in order of first entry, each with
the number of moves into it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (str(ROOT / "mpc_pca") + os.sep, str(ROOT / "protocols") + os.sep)


class PathTrace:
    """Record the moves between project files of the calling thread until the first ``Party.send``."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.moves = 0
        self.re_entries = 0
        self.entries: Counter[str] = Counter()
        self.done = False

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.done or frame.f_code.co_name == "<module>":  # imports are not the path
            return
        callee = frame.f_code.co_filename
        back = frame.f_back
        if not callee.startswith(PACKAGES) or back is None or back.f_code.co_name == "<module>":
            return  # outside the project, or code run while a module is imported
        if frame.f_code.co_name == "send" and callee.endswith(os.path.join("protocols", "party.py")):
            self.done = True  # the trace is complete; the run goes on unobserved
            sys.setprofile(None)
            return
        caller = back.f_code.co_filename
        if not self.order:
            self.order.append(callee)  # party_command itself
            return
        if caller == callee or not caller.startswith(PACKAGES):
            return
        self.moves += 1
        self.entries[callee] += 1
        if callee in self.order:
            self.re_entries += 1
        else:
            self.order.append(callee)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _write_parts(directory: Path, n_providers: int) -> list[Path]:
    from sklearn.datasets import load_wine

    rows = load_wine().data
    paths = []
    for i, block in enumerate(__import__("numpy").array_split(rows, n_providers)):
        path = directory / f"part{i}.csv"
        path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in block) + "\n")
        paths.append(path)
    return paths


def _party_args(rank: int, world: int, port: int, data: Path | None, out: Path) -> list[str]:
    args = [
        "party", "--protocol", "pppca-ss", "--rank", str(rank), "--world-size", str(world),
        "--master", f"127.0.0.1:{port}", "--insecure", "--no-header", "--n-components", "2",
        "--output", str(out), "--timeout", "120", "-q",
    ]  # fmt: skip
    return args + (["--data", str(data)] if data is not None else [])


def trace(n_providers: int = 3) -> tuple[PathTrace, float]:
    """Run the parties; return provider 0's trace and the seconds the whole run took."""
    from mpc_pca.cli import build_parser
    from mpc_pca.cli.party import party_command

    world = n_providers + 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trace-party-") as tmp:
        workdir = Path(tmp)
        parts = _write_parts(workdir, n_providers)
        port = _free_port()
        children = []
        for rank in range(1, world):
            data = parts[rank] if rank < n_providers else None
            argv = _party_args(rank, world, port, data, workdir / f"{rank}.json")
            children.append(
                subprocess.Popen([sys.executable, "-m", "mpc_pca", *argv], stderr=subprocess.DEVNULL)
            )
        args = build_parser().parse_args(_party_args(0, world, port, parts[0], workdir / "0.json"))
        path = PathTrace()
        sys.setprofile(path.hook)
        try:
            party_command(args)
        finally:
            sys.setprofile(None)
            for child in children:
                child.kill()
                child.wait()
    return path, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=3)
    parser.add_argument(
        "--list", action="store_true", help="print the files in order of first entry, each with its entries"
    )
    args = parser.parse_args(argv)
    path, _ = trace(args.providers)
    if not path.done:
        print("trace-party-path: the provider's role sent no message", file=sys.stderr)
        return 1
    summary = {"files": len(path.order), "re_entries": path.re_entries, "moves": path.moves}
    print(json.dumps(summary))
    if args.list:
        for name in path.order:
            print(f"  {path.entries[name]:4d}  {os.path.relpath(name, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
