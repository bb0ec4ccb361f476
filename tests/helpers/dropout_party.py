"""A PPPCA provider process that is killed after dealing its seed shares, before its masked input.

``python tests/helpers/dropout_party.py [mpc-pca party options]`` runs ``mpc-pca party``
unchanged, except that at the moment the dropout-tolerant secure sum would send
this provider's masked input (:func:`protocols.backends.dropout.send_masked_input`,
after its keys and Shamir shares went to every other provider and theirs
arrived) it writes ``dropout_party: dealt, dying`` to stderr, gives its peers
one second to read what it sent, and sends itself ``SIGKILL``: no abort, no
``BYE``, its links simply close, as when an organisation's machine dies.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from mpc_pca.cli import main
from protocols.backends import dropout


def die(party: Any, receiver: str, message: Any) -> None:
    print("dropout_party: dealt, dying", file=sys.stderr, flush=True)
    time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    dropout.send_masked_input = die
    sys.exit(main(["party", *sys.argv[1:]]))
