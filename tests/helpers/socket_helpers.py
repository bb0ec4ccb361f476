"""Run role functions as parties in threads of this process, linked by the socket transport."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from protocols.runtime.network import agree, open_links, run_role
from protocols.transport.rendezvous import listen
from protocols.transport.tls import Credentials


def free_port() -> int:
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return port


def run_socket_world(
    roles: Mapping[str, Callable[[Any], Any]],
    tls_dir: Path | None,
    *,
    timeout: float = 10.0,
    cap: int = 1 << 26,
    credentials: Mapping[str, Credentials] | None = None,
) -> dict[str, Any]:
    """Every party in a thread (rank = order of ``roles``); return ``{name: (output, report) or exception}``."""
    ranks = {name: i for i, name in enumerate(roles)}
    master = f"127.0.0.1:{free_port()}"
    results: dict[str, Any] = {}

    def party(name: str) -> None:
        try:
            creds = None
            if credentials is not None and name in credentials:
                creds = credentials[name]
            elif tls_dir is not None:
                creds = Credentials.from_dir(tls_dir, name)
            channel = open_links(
                name, ranks, master, credentials=creds, timeout=timeout, connect_timeout=timeout
            )
            agree(channel, {"name": name}, timeout)
            channel.set_message_cap(cap)
            results[name] = run_role(channel, roles[name])
        except Exception as exc:  # collected for the test to inspect
            results[name] = exc

    threads = [threading.Thread(target=party, args=(name,), daemon=True) for name in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * timeout)
    return results


def file_mode(path: Path) -> int:
    """The permission bits of ``path`` itself (a symbolic link is not followed)."""
    return stat.S_IMODE(os.lstat(path).st_mode)
