"""One party of a small multi-process test run (started by the torch/crypten tests).

``python tests/torch_worker.py TASK NAME MASTER WORKDIR [BACKEND]``; every
party of a run gets the same TASK, MASTER and WORKDIR. The parties are
``a0, a1, a2`` (contributors) and ``r`` (receiver), ranks 0-3; the launcher
hosts the store. Inputs are ``WORKDIR/<name>.npy``; each party writes
``WORKDIR/<name>.out.json``.

Tasks
-----
echo
    The role functions of :func:`echo_roles` (every message type, a large
    array, a run of sends): outputs and traffic report.
sum
    Two secure sums of the inputs with BACKEND; the receiver writes the sums.
reduce-leak
    CrypTen's ``reveal(dst=receiver)`` of a shared array (gloo ``reduce``);
    every party writes what its reduce buffer holds afterwards.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: Mirrors protocols.transport.torch_channel.DEFAULT_FRAME_BYTES (checked by the tests).
DEFAULT_FRAME_BYTES = 1 << 20
RANKS = {"a0": 0, "a1": 1, "a2": 2, "r": 3}
CONTRIBUTORS = ("a0", "a1", "a2")
RECEIVER = "r"


def echo_roles() -> dict[str, Any]:
    """Role functions exchanging every message type; usable in-process and as processes."""
    big = np.arange(300_000, dtype=np.float64).reshape(600, 500)

    def sender(party: Any) -> Any:
        me = party.name
        party.send(RECEIVER, {"from": me, "ints": [1, -(2**70)], "pi": 3.25, "none": None, "ok": True})
        party.send(RECEIVER, np.arange(6, dtype=np.int32).reshape(2, 3) * (1 + CONTRIBUTORS.index(me)))
        party.send(RECEIVER, b"\x00\xffraw")
        if me == "a0":
            party.send(RECEIVER, big)
        if me == "a1":  # fits the first frame with room to spare
            party.send(RECEIVER, np.full(60_000, 7, dtype=np.int64))
        if me == "a2":  # payloads (9 bytes of framing + n) of exactly one frame, and one byte more
            for n in (DEFAULT_FRAME_BYTES - 17, DEFAULT_FRAME_BYTES - 16):
                party.send(RECEIVER, bytes([n % 251]) * n)
        reply = party.recv(RECEIVER)
        return {"reply": reply}

    def receiver(party: Any) -> Any:
        got = {}
        for peer in CONTRIBUTORS:
            header = party.recv(peer)
            array = party.recv(peer)
            raw = party.recv(peer)
            got[peer] = {
                "header": header,
                "array": array.tolist(),
                "dtype": str(array.dtype),
                "raw": raw.hex(),
            }
        arr = party.recv("a0")
        got["big_ok"] = bool(np.array_equal(arr, big))
        got["mid_ok"] = bool(np.array_equal(party.recv("a1"), np.full(60_000, 7, dtype=np.int64)))
        got["edges"] = [
            (len(raw), raw == bytes([len(raw) % 251]) * len(raw))
            for raw in (party.recv("a2"), party.recv("a2"))
        ]
        for peer in CONTRIBUTORS:
            party.send(peer, f"thanks {peer}")
        return got

    roles = {name: sender for name in CONTRIBUTORS}
    roles[RECEIVER] = receiver
    return roles


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, int) and abs(value) > 2**53:
        return str(value)
    return value


def main() -> int:
    task, name, master, workdir = sys.argv[1:5]
    backend_name = sys.argv[5] if len(sys.argv) > 5 else "additive"
    workdir_path = Path(workdir)
    from protocols.runtime import gloo as torch_dist

    if task == "echo":
        role = echo_roles()[name]
    elif task == "sum":
        from protocols.backends import make_backend

        backend = make_backend(backend_name)
        value = np.load(workdir_path / f"{name}.npy", allow_pickle=False) if name != RECEIVER else None

        def role(party: Any) -> Any:
            sums = [
                backend.secure_sum(party, value, contributors=CONTRIBUTORS, receiver=RECEIVER)
                for _ in range(2)
            ]
            return None if sums[0] is None else [s.tolist() for s in sums]
    elif task == "reduce-leak":
        role = _reduce_leak_role(workdir_path)
    else:
        raise SystemExit(f"unknown task {task!r}")
    try:
        output, report = torch_dist.run_torch_party(
            role, name, RANKS, master, timeout=20, connect_timeout=30, host_store=False
        )
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        import os

        os._exit(2)
    out = {"output": _jsonable(output), "report": report.as_dict()}
    (workdir_path / f"{name}.out.json").write_text(json.dumps(out))
    return 0


def _reduce_leak_role(workdir: Path) -> Any:
    """What CrypTen's ``get_plain_text(dst=...)`` leaves at parties other than ``dst``."""

    def role(party: Any) -> Any:
        import torch
        import torch.distributed as dist

        from protocols.backends.crypten_compat import CrypTenGroupSession

        members = (*CONTRIBUTORS, RECEIVER)
        session = CrypTenGroupSession([RANKS[m] for m in members], RANKS[party.name], 20, party.name)
        with session.active() as crypten:
            value = None
            if party.name == "a0":
                value = torch.from_numpy(np.load(workdir / "a0.npy", allow_pickle=False))
            shape = torch.Size([int(n) for n in np.load(workdir / "shape.npy", allow_pickle=False)])
            shared = crypten.mpc.primitives.ArithmeticSharedTensor(value, size=shape, precision=0, src=0)
            # What CrypTen's DistributedCommunicator.reduce does, keeping the buffer it discards.
            buffer = shared.share.clone()
            dist.reduce(buffer, dst=RANKS[RECEIVER], group=session.group)
        return buffer.numpy()

    return role


if __name__ == "__main__":
    sys.exit(main())
