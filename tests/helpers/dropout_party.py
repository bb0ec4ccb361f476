"""Rehearse a dropout or an equivocating server: ``mpc-pca party`` with one step of the sum replaced.

``python tests/helpers/dropout_party.py [--die-at PHASE] [--equivocate NAMES] [mpc-pca party options]``
runs ``mpc-pca party`` unchanged except for what the first option asks. It is
a test helper, off unless this script is run: nothing a peer sends can
trigger it.

``--die-at PHASE`` (default ``input``): at that point of a provider's
dropout-tolerant secure sum (:mod:`protocols.backends.dropout`) the process
writes ``dropout_party: dying at PHASE`` to stderr, gives its peers one second
to read what it sent, and sends itself ``SIGKILL``: no abort, no ``BYE``, its
links simply close, as when an organisation's machine dies. Phases, in order:

``keys``
    half-way through sending its keys and Shamir shares (some peers got them);
``input``
    after its keys and shares, right before its masked input;
``agreement``
    after its masked input, on receiving the survivor set, before confirming it;
``unmasking``
    after confirming the survivor set, before its unmasking answer;
``after``
    after the sum (its last masked contribution), when the run goes on;
``stall:SECONDS``
    half-way through sending its keys and shares, it stops itself with
    ``SIGSTOP`` and a child process sends it ``SIGCONT`` SECONDS later (a
    stalled machine that comes back);
``gram``
    when it computes its Gram-matrix contribution (before the one masked input
    that carries it in dropout mode; after the first sum in the two-sum protocol
    before issue 35, where a drop there ended the run).

``--equivocate NAMES`` (the server): in every dropout-tolerant sum, the
providers in the comma-separated ``NAMES`` are told that only they survived,
the others that everybody did; the server takes any unmasking answer (an
attacker's server keeps whatever it is given).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from mpc_pca.cli import main
from protocols.backends import dropout

PHASES = ("keys", "input", "agreement", "unmasking", "after", "gram")


def die(phase: str) -> None:
    print(f"dropout_party: dying at {phase}", file=sys.stderr, flush=True)
    time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def stall(seconds: float) -> None:
    """Stop this process (``SIGSTOP``) until a child sends ``SIGCONT`` ``seconds`` later."""
    print(f"dropout_party: stalling for {seconds} s", file=sys.stderr, flush=True)
    wake = f"import os, signal, time; time.sleep({seconds}); os.kill({os.getpid()}, signal.SIGCONT)"
    subprocess.Popen([sys.executable, "-c", wake])
    os.kill(os.getpid(), signal.SIGSTOP)
    print("dropout_party: resumed", file=sys.stderr, flush=True)


def rehearse_drop(phase: str) -> None:
    """Replace the sum's step at ``phase`` (one of :data:`PHASES`) with :func:`die`."""
    if phase.startswith("stall:"):
        send, sent, seconds = dropout._send_or_gone, [], float(phase.removeprefix("stall:"))

        def stalling(party: Any, peer: str, message: Any) -> bool:
            if isinstance(message, dict) and set(message) == {"pk", "b", "s"}:
                sent.append(peer)
                if len(sent) == 3:  # two providers got its keys, two will give up on them
                    stall(seconds)
            return send(party, peer, message)

        dropout._send_or_gone = stalling
        return
    if phase not in PHASES:
        raise SystemExit(f"dropout_party: --die-at must be one of {PHASES}, got {phase!r}")
    if phase == "keys":
        send = dropout._send_or_gone
        sent = []

        def keys(party: Any, peer: str, message: Any) -> bool:
            if isinstance(message, dict) and set(message) == {"pk", "b", "s"}:
                sent.append(peer)
                if len(sent) == 2:
                    die(phase)
            return send(party, peer, message)

        dropout._send_or_gone = keys
    elif phase == "input":
        dropout.send_masked_input = lambda party, receiver, message: die(phase)
    elif phase == "agreement":
        dropout.confirm_survivors = lambda *args, **kwargs: die(phase)  # type: ignore[assignment]
    elif phase == "unmasking":
        dropout.unmasking_response = lambda *args, **kwargs: die(phase)  # type: ignore[assignment]
    elif phase == "gram":
        from mpc_pca.pppca import local_stats

        local_stats.LocalStatistics.centred_gram_triangle = lambda *args: die(phase)  # type: ignore[assignment,method-assign]
        try:
            from mpc_pca.pppca import dropout_payload
        except ImportError:  # the two-sum protocol before issue 35
            return
        dropout_payload.payload = lambda *args: die(phase)  # type: ignore[assignment]
    else:
        sum_once = dropout.dropout_sum

        def after(*args: Any, **kwargs: Any) -> Any:
            result = sum_once(*args, **kwargs)
            die(phase)
            return result

        dropout.dropout_sum = after  # type: ignore[assignment]


def equivocate(told_alone: list[str]) -> None:
    """Make this (server) process tell ``told_alone`` that only they survived."""
    send = dropout._send_or_gone

    def equivocating(party: Any, peer: str, message: Any) -> bool:
        if isinstance(message, dict) and "survivors" in message and peer in told_alone:
            message = {**message, "survivors": sorted(told_alone)}
            if "peers" in message:
                message["peers"] = {s: message["peers"][s] for s in sorted(told_alone)}
        return send(party, peer, message)

    dropout._send_or_gone = equivocating
    dropout._check_answer = lambda message, *_: message


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--equivocate"]:
        equivocate(args[1].split(","))
        args = args[2:]
    else:
        phase = "input"
        if args[:1] == ["--die-at"]:
            phase, args = args[1], args[2:]
        rehearse_drop(phase)
    sys.exit(main(["party", *args]))
