"""One party of a small relayed world, as a process (used by tests/multiprocess/test_relay_attacks.py).

``python tests/helpers/relay_world.py NAME RELAY TLS_DIR TIMEOUT`` joins the
world ``a0, a1, a2, r`` (ranks 0-3) through the relay at ``RELAY`` and runs
its role: ``a0`` sends 64 MiB to ``a1``, then one message to ``a2`` and to
``r``, which wait for it; ``a1`` is the rogue: once its links are up it
stops reading its connection to the relay (and sends nothing). ``a0``
writes ``sending at <unix time>`` to stderr before its large send. An
error ends the process with status 4 and ``mpc-pca: error: TYPE: MESSAGE``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

RANKS = {"a0": 0, "a1": 1, "a2": 2, "r": 3}
BIG = np.zeros(8 << 20, dtype=np.float64)  # 64 MiB: more than the relay queues and the sockets hold


def roles() -> dict[str, Any]:
    def a0(party: Any) -> str:
        print(f"sending at {time.time():.6f}", file=sys.stderr, flush=True)
        party.send("a1", BIG)
        party.send("a2", b"go")
        party.send("r", b"go")
        return "sent"

    def rogue(party: Any) -> None:
        conn = party.channel.streams["a0"].conn
        conn.stream.recv_into = lambda view: time.sleep(3600)  # its demultiplexer reads nothing more
        time.sleep(20)  # well past every honest party's end
        os._exit(9)

    return {"a0": a0, "a1": rogue, "a2": lambda party: party.recv("a0"), "r": lambda party: party.recv("a0")}


def join_relayed(
    name: str, ranks: dict[str, int], relay: str, tls: Path, timeout: float, connect_timeout: float, cap: int
) -> Any:
    """``name``'s channel of a relayed world, its settings agreed (a failure is told to the others)."""
    from protocols.runtime.network import agree, fail, open_links
    from protocols.transport.tls import Credentials

    channel = open_links(
        name, ranks, "unused:1", credentials=Credentials.from_dir(tls, name), timeout=timeout,
        connect_timeout=connect_timeout, relay=relay,
    )  # fmt: skip
    try:
        agree(channel, {"name": name}, timeout)
    except BaseException as exc:
        fail(channel, exc)
        raise
    channel.set_message_cap(cap)
    return channel


def main() -> int:
    from protocols.runtime.network import run_role

    name, relay, tls, timeout = sys.argv[1], sys.argv[2], Path(sys.argv[3]), float(sys.argv[4])
    try:
        channel = join_relayed(name, RANKS, relay, tls, timeout, 60.0, 1 << 27)
        run_role(channel, roles()[name])
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
