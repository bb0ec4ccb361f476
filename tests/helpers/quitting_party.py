"""A PPPCA party process killed at a named point of the end of a run (tests/multiprocess/test_all_or_nothing.py).

``python tests/helpers/quitting_party.py MODE [mpc-pca party options]`` runs
the normal ``mpc-pca party`` command, except that the process kills itself
with SIGKILL

* ``die-projecting``: just before its first message to the consumer, i.e.
  as a provider enters the projection phase (the server's and the other
  providers' roles are then over or nearly so);
* ``stall-projecting``: instead of dying there, stops responding (sleeps
  far longer than any deadline; the launcher ends it);
* ``die-before-confirming``: once its role has returned, just before the
  final confirmation round (``SocketChannel.close`` sends the ``BYE``
  frames; over gloo, ``TorchChannel.close``): everything it was to send has
  been sent. Over sockets it first waits (up to its phase deadline) for the
  ``BYE`` of every peer, so that it dies only once every other party's role
  is over: without that wait, a party still in its role on a loaded machine
  sees the closed link there and fails in its role ("closed the
  connection"), not in the confirmation round the test is about.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

MODES = ("die-projecting", "stall-projecting", "die-before-confirming")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(mode: str, gloo: bool = False) -> None:
    """Patch this process's channel class so that it dies at the point ``mode`` names.

    ``gloo``: the crypten backend's channel (torch.distributed) instead of the socket channel.
    """
    from mpc_pca.roles import CONSUMER

    if gloo:
        from protocols.transport.torch_channel import TorchChannel as Channel
    else:
        from protocols.transport.socket_channel import SocketChannel as Channel  # type: ignore[assignment]

    if mode in ("die-projecting", "stall-projecting"):
        send = Channel.send

        def send_or_die(self: Any, to: str, obj: Any) -> None:
            if to == CONSUMER:
                if mode == "stall-projecting":
                    time.sleep(3600)
                _die()
            send(self, to, obj)

        Channel.send = send_or_die  # type: ignore[method-assign]
    else:

        def close_or_die(self: Any, *args: Any) -> None:
            if not gloo:  # wait until every peer has confirmed (its role is over), then never confirm
                deadline = time.monotonic() + self.timeout
                with self._cond:
                    while not set(self.peers) <= self._bye and time.monotonic() < deadline:
                        self._cond.wait(0.1)
            _die()

        Channel.close = close_or_die  # type: ignore[method-assign]


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; choose one of {MODES}")
    install(mode, gloo="crypten" in argv)
    from mpc_pca.cli.app import main as cli_main

    return int(cli_main(["party", *argv]) or 0)


if __name__ == "__main__":
    sys.exit(main())
