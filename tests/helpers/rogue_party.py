"""A certified PPPCA provider process that attacks the run from inside (used by test_insider_processes).

``python tests/helpers/rogue_party.py MODE [mpc-pca party options]`` runs the
normal provider role, with its real certificate, and misbehaves as ``MODE``
says. Just before the attack it writes ``rogue: attack at <unix time>`` to
stderr, so that a test can measure how long the honest parties took to end
after it.

In the protocol's first secure sum (the mean), instead of its share:

* ``status-flood``: a STATUS frame with a new phase label every 0.3 s, no data;
* ``false-waiting``: one STATUS saying it waits for ``provider0``, then silence;
* ``forged-abort``: an ABORT claiming that ``provider0`` sent forged shares;
* ``control-flood``: :data:`CONTROL_QUEUE_CAP` + 10 control frames to the server;
* ``data-flood``: 200 unsolicited data frames of 1 MiB to the consumer;
* ``malformed-body``: a correctly numbered data frame to ``provider0`` whose
  body is not the wire format.

In the second secure sum (the next phase), after an honest first one:

* ``replay-seed``: the 32-byte share seeds it sent in the first sum, again;
* ``replay-frame``: its first data frame to ``provider0``, byte for byte.

In its announcement (everything else honest):

* ``rows-10x``: ten times its row count; ``rows-2-60``: 2**60 rows;
* ``backend-bytes``: ``backend`` as bytes (``b"additive"``), not a str.

During set-up:

* ``bad-registration``: registers at the rendezvous with its name as a list;
* ``bad-hello``: sends a link ``HELLO`` whose name is a list.

After an attack in the protocol it sends nothing more until a peer reports a
failure or a link breaks (at most 30 s), then ends.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from mpc_pca.cli import build_parser
from mpc_pca.deploy import run_party
from mpc_pca.deployment import PublicSettings
from mpc_pca.pppca.deployment import PPPCADeployment
from protocols.backends import SecureSumBackend, make_backend
from tests.helpers.party_specs import pppca_spec

FIRST_SUM = ("status-flood", "false-waiting", "forged-abort", "control-flood", "data-flood", "malformed-body")
SECOND_SUM = ("replay-seed", "replay-frame")
ANNOUNCEMENT = ("rows-10x", "rows-2-60", "backend-bytes")
SETUP = ("bad-registration", "bad-hello")
MODES = FIRST_SUM + SECOND_SUM + ANNOUNCEMENT + SETUP
#: Unsolicited data frames of ``data-flood`` and the size of each (within the 1 MiB frame it is meant to be).
FLOOD_FRAMES, FLOOD_BYTES = 200, (1 << 20) - 16


def mark() -> None:
    print(f"rogue: attack at {time.time():.6f}", file=sys.stderr, flush=True)


def idle_until_stopped(channel: Any, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not (channel._aborts or channel._failed) and time.monotonic() < end:
        time.sleep(0.05)


def attack_first_sum(mode: str, channel: Any) -> None:
    from protocols.transport.socket_frames import ABORT, CONTROL_QUEUE_CAP, STATUS

    mark()
    if mode == "status-flood":
        for i in range(100):  # 30 s of phase announcements, far past any deadline
            if channel._aborts or channel._failed:
                break
            channel._broadcast(STATUS, {"phase": f"phase {i}", "waiting": None})
            time.sleep(0.3)
    elif mode == "false-waiting":
        channel._broadcast(STATUS, {"phase": "sum", "waiting": "provider0"})
    elif mode == "forged-abort":
        channel._broadcast(
            ABORT, {"reason": "party 'provider0' failed: 'provider0' (rank 0) sent forged shares"}
        )
    elif mode == "control-flood":
        for _ in range(CONTROL_QUEUE_CAP + 10):
            channel.send_control("server", {"settings": "again"})
    elif mode == "data-flood":
        frame = bytes(FLOOD_BYTES)
        for _ in range(FLOOD_FRAMES):
            if channel._aborts or channel._failed:
                break
            channel.send("consumer", frame)  # numbered frames: only the budget can refuse them
    elif mode == "malformed-body":
        channel._send_bytes("provider0", b"\xffnot a message")
    idle_until_stopped(channel)
    os._exit(9)


def rogue_backend(mode: str, name: str) -> SecureSumBackend:
    """A backend of class ``name`` whose secure sums attack as ``mode`` says."""
    from protocols.backends import additive
    from protocols.transport.socket_frames import DATA

    base = type(make_backend(name))
    real_split = additive.split_seeded
    seeds: list[Any] = []
    frames: list[list[bytes]] = []

    def recording_split(*args: Any, **kwargs: Any) -> Any:
        mine, drawn = real_split(*args, **kwargs)
        seeds.extend(drawn)
        return mine, drawn

    def replaying_split(*args: Any, **kwargs: Any) -> Any:
        mine, _ = real_split(*args, **kwargs)
        return mine, list(seeds)

    class Rogue(base):  # type: ignore[misc, valid-type]
        calls = 0

        def secure_sum(self, party: Any, value: Any, **kwargs: Any) -> Any:
            Rogue.calls += 1
            channel = party.channel
            if Rogue.calls == 1 and mode in FIRST_SUM:
                attack_first_sum(mode, channel)
            if Rogue.calls == 1 and mode == "replay-seed":
                additive.split_seeded = recording_split
            if Rogue.calls == 1 and mode == "replay-frame":
                stream = channel.streams["provider0"]
                original = stream.send_parts

                def send_parts(parts: Any) -> None:
                    frames.append([bytes(p) for p in parts])
                    original(parts)

                stream.send_parts = send_parts
            if Rogue.calls == 2 and mode == "replay-seed":
                mark()
                additive.split_seeded = replaying_split
            if Rogue.calls == 2 and mode == "replay-frame":
                mark()
                data = [f for f in frames if f[0][0] == DATA]
                channel.streams["provider0"].send_parts(data[0])  # sequence number 0 again
            return super().secure_sum(party, value, **kwargs)

    instance = make_backend(name)
    instance.__class__ = Rogue
    return instance


class RogueDeployment(PPPCADeployment):
    """PPPCA with the rogue backend, and the announcement ``mode`` asks for."""

    def __init__(self, mode: str, backend: str) -> None:
        super().__init__("pppca-ss", lambda settings: rogue_backend(mode, backend))
        self.mode = mode

    def configure(self, views: Any, n_providers: int) -> Any:
        if self.mode in ("rows-2-60", "backend-bytes"):
            # Its own schema would refuse its announcement and the abort would race the honest
            # parties' checks: an insider does not report itself, it waits to be named.
            time.sleep(3600)
        return super().configure(views, n_providers)

    def public(self, party: str, data: Any, settings: Mapping[str, Any]) -> PublicSettings:
        view = super().public(party, data, settings)
        if self.mode in ANNOUNCEMENT:
            mark()
        if self.mode == "rows-10x":
            view["n_rows"] = 10 * int(view["n_rows"])
        elif self.mode == "rows-2-60":
            view["n_rows"] = 2**60
        elif self.mode == "backend-bytes":
            view["backend"] = str(view["backend"]).encode()
        return view


def patch_setup(mode: str) -> None:
    """Make the set-up messages of ``mode`` malformed (a name that is a list)."""
    from protocols.transport import mesh
    from protocols.transport.rendezvous import joining

    if mode == "bad-registration":
        real = joining.send_message

        def registration(stream: Any, obj: Any, *args: Any) -> None:
            if isinstance(obj, dict) and "rank" in obj:
                mark()
                obj = {**obj, "name": [obj["name"]]}
            real(stream, obj, *args)

        joining.send_message = registration  # type: ignore[assignment]
    elif mode == "bad-hello":
        real_hello = mesh.send_message

        def hello(stream: Any, obj: Any, *args: Any) -> None:
            mark()
            real_hello(stream, {"name": [obj["name"]]}, *args)

        mesh.send_message = hello  # type: ignore[assignment]


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}")
    args = build_parser().parse_args(["party", *argv])
    patch_setup(mode)
    try:
        spec = pppca_spec(args, f"provider{args.rank}")
        run_party(spec, deployment=RogueDeployment(mode, args.backend))
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
