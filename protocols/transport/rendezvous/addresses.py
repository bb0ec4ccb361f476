"""Addresses of the socket transport: ``HOST:PORT`` options, the local interface, listening sockets.

A party listens on a fixed ``HOST:PORT`` when given one (``listen``; port 0
still lets the kernel pick) and registers the address the others must dial:
its ``advertise`` address when given (a NAT port forward, a firewall's
public address), else the one it listens on (:func:`parse_endpoint`,
:func:`local_address_towards`, :func:`listen`).
"""

from __future__ import annotations

import socket

from protocols.errors import InputValidationError
from protocols.transport.rendezvous.messages import MAX_NAME_CHARS


def parse_address(address: str) -> tuple[str, int]:
    """Split ``ADDR:PORT`` (``[v6addr]:PORT`` for IPv6) into host and port (port 0 allowed)."""
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host:
        raise InputValidationError(f"address {address!r} must look like ADDR:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise InputValidationError(f"port {port_text!r} in {address!r} is not an integer") from None
    if not 0 <= port < 65536:
        raise InputValidationError(f"port {port} in {address!r} is out of range 0 .. 65535")
    return host, port


def parse_endpoint(text: str, name: str, *, port_required: bool) -> tuple[str, int]:
    """``HOST``, ``HOST:PORT`` or ``[v6addr]:PORT`` of a setting such as ``listen`` or ``advertise``.

    Parameters
    ----------
    text : str
        The setting's value. A bare IPv6 address (more than one ``:``, no
        brackets) is a host without a port.
    name : str
        The setting (``advertise``, ``dask_scheduler``) or what the value is,
        for messages: ``"{name} {text!r} has no port"``.
    port_required : bool
        Require a port in 1 .. 65535 (an advertised address); otherwise a
        missing port is 0 (the kernel picks) and 0 is allowed.

    Raises
    ------
    InputValidationError
        Naming the setting and its value.
    """
    value = text.strip()
    bracketed = value.startswith("[")
    if not bracketed and value.count(":") != 1:
        host, port = value, None  # a host name, an IPv4 address or a bare IPv6 address
    elif bracketed and value.endswith("]"):
        host, port = value[1:-1], None
    else:
        try:
            host, port = parse_address(value)
        except InputValidationError as exc:
            raise InputValidationError(f"{name} {text!r}: {exc}") from None
    if not host or any(c.isspace() for c in host) or len(host) > MAX_NAME_CHARS:
        raise InputValidationError(
            f"{name} {text!r} is not HOST:PORT (the host is empty, too long or has spaces)"
        )
    if port is None:
        if port_required:
            raise InputValidationError(f"{name} {text!r} has no port; give HOST:PORT (IPv6: [ADDR]:PORT)")
        port = 0
    if port_required and port == 0:
        raise InputValidationError(
            f"{name} {text!r}: port 0 cannot be dialled; give the port the others reach"
        )
    return host, port


def local_address_towards(host: str) -> str:
    """The address of this host's interface that routes to ``host`` (no packet is sent)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((host, 9))
            return probe.getsockname()[0]
        except OSError:
            return host


def listen(host: str, port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (that interface only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise InputValidationError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(64)
    return sock


__all__ = ["listen", "local_address_towards", "parse_address", "parse_endpoint"]
