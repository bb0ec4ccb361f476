"""A PPPCA provider process that misbehaves on purpose (used by tests/test_faults.py).

``python tests/faulty_party.py MODE [mpc-pca party options]`` runs the normal
provider role with a backend that, in the protocol's *second* secure sum (the
Gram matrix, after the mean was revealed), either

* ``die``: kills its own process with SIGKILL before sending anything, or
* ``bad-shape``: contributes an array with one entry too few, or
* ``stall``: stops responding (sleeps far longer than any timeout);

or, as its very first protocol message (first secure sum), writes raw frames
on its authenticated links (a malicious insider):

* ``oversized``: a data frame header announcing 1 TiB, then silence;
* ``truncated``: a header announcing 4096 bytes, 100 of them, then it exits.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from typing import Any

from mpc_pca.cli import build_parser
from mpc_pca.deploy import run_party
from mpc_pca.pppca.deployment import PPPCADeployment
from protocols.backends import SecureSumBackend, make_backend
from tests.helpers.party_specs import pppca_spec


def faulty_backend(mode: str, name: str) -> SecureSumBackend:
    """A backend of class ``name`` whose second secure sum misbehaves as ``mode`` says."""
    base = type(make_backend(name))

    class Faulty(base):  # type: ignore[misc, valid-type]
        calls = 0

        def secure_sum(self, party: Any, value: Any, **kwargs: Any) -> Any:
            Faulty.calls += 1
            if Faulty.calls == 1 and mode in ("oversized", "truncated"):
                _raw_frames(party, mode)
            if Faulty.calls == 2:
                if mode == "die":
                    os.kill(os.getpid(), signal.SIGKILL)
                if mode == "stall":
                    time.sleep(3600)
                if mode == "bad-shape":
                    return self._run(party, value[:-1], tuple(kwargs["contributors"]), kwargs["receiver"])
            return super().secure_sum(party, value, **kwargs)

    instance = make_backend(name)
    instance.__class__ = Faulty
    return instance


def _raw_frames(party: Any, mode: str) -> None:
    from protocols.transport.links import HEADER
    from protocols.transport.socket_frames import DATA

    for stream in party.channel.streams.values():
        if mode == "oversized":
            stream.send_parts([HEADER.pack(DATA, 1 << 40)])
        else:
            stream.send_parts([HEADER.pack(DATA, 4096), bytes(100)])
    if mode == "truncated":
        for stream in party.channel.streams.values():
            stream.sock.shutdown(socket.SHUT_WR)  # FIN after the partial frame, no TLS close_notify
        time.sleep(1.0)
        os._exit(3)
    time.sleep(3600)


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in ("die", "bad-shape", "stall", "oversized", "truncated"):
        raise SystemExit(f"unknown mode {mode!r}")
    args = build_parser().parse_args(["party", *argv])
    try:
        spec = pppca_spec(args, f"provider{args.rank}")
        run_party(
            spec, deployment=PPPCADeployment("pppca-ss", lambda settings: faulty_backend(mode, args.backend))
        )
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
