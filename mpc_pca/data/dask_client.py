"""Connect to a provider's Dask scheduler (``dask_scheduler``) within ``connect_timeout``.

``distributed.Client(address, timeout=...)`` bounds the TCP connection but not
the handshake after it: a listener that accepts and never answers held a
party for minutes, and a listener that answers with other bytes (or an
address such as ``::::``) raised whatever the decoder hit (``ValueError``,
``MemoryError`` "Unable to allocate 3.07 EiB"). Here the address is checked
first, the client is made in a helper thread the party waits for at most the
timeout, and every failure becomes one :class:`InputValidationError` that
names the address.
"""

from __future__ import annotations

import threading
from typing import Any

from mpc_pca.validation import check_positive
from protocols.errors import InputValidationError
from protocols.transport.rendezvous import parse_endpoint

#: Seconds ``connect_timeout`` defaults to (the party command's default).
DEFAULT_CONNECT_TIMEOUT = 60.0


def scheduler_address(scheduler: str) -> str:
    """``tcp://HOST:PORT`` of ``HOST:PORT``, ``[v6]:PORT`` or ``tcp://HOST:PORT``; refused naming the value.

    Examples
    --------
    >>> scheduler_address("10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> scheduler_address("::::")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: dask_scheduler '::::' has no port; give HOST:PORT (IPv6: [ADDR]:PORT)
    """
    text = scheduler.strip()
    bare = text[len("tcp://") :] if text.startswith("tcp://") else text
    try:
        host, port = parse_endpoint(bare, "dask_scheduler", port_required=True)
    except InputValidationError as exc:  # name the value as given, scheme included
        raise InputValidationError(str(exc).replace(repr(bare), repr(scheduler), 1)) from None
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def connect_scheduler(scheduler: str, timeout: float | None = None) -> Any:
    """A ``distributed.Client`` of ``scheduler`` (made the default), or an error within ``timeout`` seconds.

    Only a client that connected becomes the process's Dask scheduler: a
    failed or late connection leaves the Dask configuration as it was.

    Parameters
    ----------
    scheduler : str
        The ``dask_scheduler`` setting's value.
    timeout : float, optional
        ``connect_timeout`` (default :data:`DEFAULT_CONNECT_TIMEOUT`).

    Raises
    ------
    InputValidationError
        Naming the address: a malformed one, no answer within ``timeout``, or
        an answer that is not a Dask scheduler's.
    """
    limit = DEFAULT_CONNECT_TIMEOUT if timeout is None else check_positive(timeout, "connect_timeout")
    address = scheduler_address(scheduler)
    from distributed import Client

    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            # Not ``set_as_default``: distributed sets the process's scheduler before it
            # connects and never restores it when the connection fails, or when it succeeds
            # after the party gave up waiting.
            outcome["client"] = Client(address, timeout=limit, set_as_default=False)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="dask-connect", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise InputValidationError(
            f"the Dask scheduler at dask_scheduler {scheduler!r} did not answer within connect_timeout="
            f"{limit:g} s (the connection was accepted, no Dask handshake followed)"
        )
    if "error" in outcome:
        exc = outcome["error"]
        raise InputValidationError(
            f"cannot use the Dask scheduler at dask_scheduler {scheduler!r} within connect_timeout={limit:g} s: "
            f"{type(exc).__name__}: {str(exc)[:200]} (is a Dask scheduler listening there?)"
        )
    client = outcome["client"]
    import dask

    dask.config.set(scheduler=client)  # the party's Dask computations run on this cluster
    return client
