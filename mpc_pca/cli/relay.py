"""``mpc-pca relay``: a neutral host that every party dials out to (issue 26; see ``docs/howto/relay.md``).

``mpc-pca relay --listen HOST:PORT --parties NAME,... --tls-dir DIR``
admits exactly the parties named (in rank order; issue 35: the layout is
the operator's, never a registrant's), listens on that address with the
certificate ``DIR/relay.pem`` (its name must be ``relay``, under the
consortium CA ``DIR/ca.pem``), hosts the rendezvous of one run (waiting
room, ``--join-window``) and forwards the parties' end-to-end protected
frames (:mod:`protocols.transport.relay`) until every party has hung up.
Parties join with ``mpc-pca party ... --relay HOST:PORT``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mpc_pca.cli.errors import errors_in_flag_terms
from mpc_pca.cli.options import EXIT_INPUT, EXIT_PROTOCOL
from mpc_pca.cli.party import add_verbosity, configure_logging
from protocols.errors import InputValidationError, ProtocolError

#: Default join window of the relay's rendezvous (seconds).
DEFAULT_JOIN_WINDOW = "10m"


def add_relay_parser(sub: Any) -> None:
    relay = sub.add_parser(
        "relay",
        help="forward the frames of parties that can only dial out (hosts the rendezvous; sees no content)",
        description="A relay for parties behind firewalls that allow outbound connections only: every party "
        "dials out to it (mpc-pca party --relay HOST:PORT); each pair of parties runs its own TLS 1.3 "
        "session through it, so the relay learns who talks to whom, when and how much, never the content.",
    )
    relay.add_argument("--listen", required=True, metavar="HOST:PORT", help="address the parties dial")
    relay.add_argument(
        "--parties", required=True, metavar="NAME,NAME,...",
        help="the run's parties in rank order (e.g. provider0,provider1,provider2,server,consumer): the relay "
        "admits exactly these; a registration with any other layout is refused and named",
    )  # fmt: skip
    relay.add_argument("--tls-dir", type=Path, default=None, help="DIR with ca.pem, relay.pem, relay.key")
    relay.add_argument("--ca", type=Path, default=None, help="consortium CA certificate (PEM)")
    relay.add_argument(
        "--cert", type=Path, default=None, help="the relay's certificate, naming 'relay' (PEM)"
    )
    relay.add_argument("--key", type=Path, default=None, help="the relay's private key (PEM)")
    relay.add_argument(
        "--join-window", default=DEFAULT_JOIN_WINDOW, metavar="DURATION",
        help=f"how long the rendezvous waits for every party: seconds or 90s, 30m, 2h (default {DEFAULT_JOIN_WINDOW})",
    )  # fmt: skip
    relay.add_argument(
        "--waiting-log-interval", type=float, default=30.0, metavar="SECONDS",
        help="seconds between two 'waiting room' lines (shown with -v; default 30)",
    )  # fmt: skip
    relay.add_argument(
        "--stall-timeout", type=float, default=600.0, metavar="SECONDS",
        help="drop (and name) a party that reads nothing the relay forwards to it for this long (default 600)",
    )  # fmt: skip
    add_verbosity(relay)


def relay_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run the relay for one run; return what it saw (bytes per pair, refusals)."""
    from protocols.runtime.runner import parse_duration
    from protocols.transport.relay import RELAY_NAME, RelayServer
    from protocols.transport.rendezvous import parse_endpoint
    from protocols.transport.tls import Credentials, server_context

    host, port = parse_endpoint(args.listen, "--listen", port_required=True)
    layout = parse_parties(args.parties)
    window = parse_duration(args.join_window, "--join-window")
    if not 0 < args.stall_timeout < float("inf"):
        raise InputValidationError(
            f"--stall-timeout {args.stall_timeout} must be a positive number of seconds"
        )
    if args.tls_dir is None and not (args.ca and args.cert and args.key):
        raise InputValidationError(
            "the relay needs TLS credentials naming it 'relay': --tls-dir DIR (ca.pem, relay.pem, relay.key) or "
            "--ca/--cert/--key; make them with `mpc-pca certs request --party relay` and `certs sign`"
        )
    base = Credentials.from_dir(args.tls_dir, RELAY_NAME) if args.tls_dir is not None else None
    creds = Credentials(
        args.ca or (base.ca if base else Path()),
        args.cert or (base.cert if base else Path()),
        args.key or (base.key if base else Path()),
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    relay = RelayServer(
        address, server_context(creds), window, layout=layout, log_interval=args.waiting_log_interval,
        stall_seconds=args.stall_timeout,
    )  # fmt: skip
    print(f"relay listening on {address} for {len(layout)} parties (join window {window:g} s)", flush=True)
    try:
        started = relay.wait()
    except KeyboardInterrupt:
        relay.close()
        raise
    if not started:
        raise ProtocolError(f"the run did not start: {relay.rendezvous.error}")
    return {
        "parties": relay.ranks,
        "forwarded_bytes": {f"{src}->{dst}": n for (src, dst), n in sorted(relay.forwarded.items())},
        "refused": list(relay.refused),
    }


def parse_parties(text: str) -> dict[str, int]:
    """``--parties``: comma-separated names in rank order -> ``{name: rank}``; InputValidationError otherwise."""
    from protocols.transport.relay import RELAY_NAME, check_layout

    names = [name.strip() for name in text.split(",")]
    if any(not name for name in names):
        raise InputValidationError(f"--parties {text!r} has an empty name; give NAME,NAME,... in rank order")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputValidationError(
            f"--parties {text[:200]!r} names {', '.join(map(repr, repeated))} more than once"
        )
    return check_layout({name: rank for rank, name in enumerate(names)}, RELAY_NAME)


def summary_lines(parties: dict[str, int], forwarded: dict[str, int]) -> list[str]:
    """What the relay prints when the run ends: the total, then the bytes of every pair that sent any.

    Parameters
    ----------
    parties : dict of str to int
        Every party's name and rank.
    forwarded : dict of str to int
        Bytes forwarded per ``"src->dst"`` pair (what :func:`relay_command` returns).

    Returns
    -------
    list of str
        ``relay done: W parties, N bytes forwarded``, then one line per pair in
        rank order of sender, then receiver (``  provider0 -> server  12,345 bytes``),
        pair names and byte counts aligned.

    Examples
    --------
    >>> print("\\n".join(summary_lines({"a": 0, "b": 1}, {"b->a": 7, "a->b": 1200})))
    relay done: 2 parties, 1,207 bytes forwarded
      a -> b  1,200 bytes
      b -> a      7 bytes
    """
    pairs = sorted(
        (tuple(key.split("->", 1)) for key in forwarded),
        key=lambda pair: (parties.get(pair[0], len(parties)), parties.get(pair[1], len(parties)), pair),
    )
    total = sum(forwarded.values())
    lines = [f"relay done: {len(parties)} parties, {total:,} bytes forwarded"]
    labels = [f"{src} -> {dst}" for src, dst in pairs]
    counts = [f"{forwarded[f'{src}->{dst}']:,}" for src, dst in pairs]
    label_width = max(map(len, labels), default=0)
    count_width = max(map(len, counts), default=0)
    lines += [
        f"  {label:<{label_width}}  {count:>{count_width}} bytes"
        for label, count in zip(labels, counts, strict=True)
    ]
    return lines


def relay_main(args: argparse.Namespace) -> int:
    configure_logging(args)
    try:
        with errors_in_flag_terms():
            seen = relay_command(args)
    except InputValidationError as exc:
        print(f"mpc-pca: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ProtocolError as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_PROTOCOL
    print("\n".join(summary_lines(seen["parties"], seen["forwarded_bytes"])))
    for text in seen["refused"]:
        print(f"relay refused: {text}")
    return EXIT_PROTOCOL if seen["refused"] else 0


__all__ = ["add_relay_parser", "parse_parties", "relay_command", "relay_main", "summary_lines"]
