"""A certified party that attacks a relayed run (used by tests/multiprocess/test_relay_attacks.py).

``python tests/helpers/relay_rogue.py MODE [mpc-pca party options]`` runs as
the party the options name (its real certificate, ``--tls-dir``), and:

* ``one-party-layout``: registers at the relay with a layout of itself
  alone, ``{name: 0}``; before issue 35 that became the run's layout (it
  registered first), the relay served it alone and ended.
* ``ciphertext-flood``: runs the normal PPPCA provider role; at its first
  secure sum it sends 200 MiB of bytes that are no TLS records to the
  consumer, in outer frames through the relay, whatever happens meanwhile
  (the consumer fails at the first frame and hangs up), then ends.

Just before the attack it writes ``rogue: attack at <unix time>`` to stderr.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from mpc_pca.cli import build_parser

MODES = ("one-party-layout", "ciphertext-flood")


def mark() -> None:
    print(f"rogue: attack at {time.time():.6f}", file=sys.stderr, flush=True)


def relay_spec(args: Any, name: str) -> Any:
    """The ``pppca-ss`` spec of ``name`` from ``mpc-pca party ... --relay HOST:PORT`` arguments."""
    from dataclasses import replace

    from tests.helpers.party_specs import pppca_spec

    args.master = "unused:1"  # a relayed party has no --master
    spec = pppca_spec(args, name)
    return replace(spec, links=replace(spec.links, relay=args.relay))


def one_party_layout(args: Any, name: str) -> None:
    from protocols.transport.relay import connect_relay
    from protocols.transport.tls import Credentials, client_context, server_context

    creds = Credentials.from_dir(args.tls_dir, name)
    mark()
    connect_relay(
        name, {name: 0}, args.relay, client_ctx=client_context(creds), server_ctx=server_context(creds),
        join_window=10.0, timeout=10.0,
    )  # fmt: skip
    print("rogue: the relay accepted the one-party layout", file=sys.stderr, flush=True)


def rogue_provider(args: Any, name: str, attack: Any) -> None:
    """The provider role; ``attack(channel)`` replaces its first secure sum, then the process ends."""
    from mpc_pca.deploy import run_party
    from mpc_pca.pppca.deployment import PPPCADeployment
    from protocols.backends import make_backend

    base = type(make_backend(args.backend))

    class Rogue(base):  # type: ignore[misc, valid-type]
        def secure_sum(self, party: Any, value: Any, **kwargs: Any) -> Any:
            mark()
            attack(party.channel)
            os._exit(9)

    run_party(relay_spec(args, name), deployment=PPPCADeployment("pppca-ss", lambda settings: Rogue()))


def ciphertext_flood(args: Any, name: str) -> None:
    from protocols.transport.relay import DATA, MAX_FRAME_BYTES

    def attack(channel: Any) -> None:
        conn = channel.streams["consumer"].conn
        garbage = bytes(range(256)) * (MAX_FRAME_BYTES // 256)
        try:
            for _ in range(800):  # 200 MiB, sent whatever the others do
                conn.send_frames(DATA, conn.ranks["consumer"], garbage)
        except OSError:
            pass

    rogue_provider(args, name, attack)


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}")
    args = build_parser().parse_args(["party", *argv])
    name = f"provider{args.rank}"
    try:
        if mode == "one-party-layout":
            one_party_layout(args, name)
        else:
            ciphertext_flood(args, name)
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
