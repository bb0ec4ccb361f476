"""TLS 1.3 contexts for the links between parties, and the party-name check.

Every link is mutually authenticated: both ends present a certificate issued
by the consortium CA (and only that CA is trusted, not the system store), the
protocol version is TLS 1.3 or newer, and the certificate of the peer must
carry the *party name* the protocol expects at that end of the link (in a
``subjectAltName`` DNS entry, or the common name when the certificate has no
SAN). The handshake and record layer are the standard library's :mod:`ssl`
(OpenSSL); nothing cryptographic is home-made here.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import InputValidationError, ProtocolError


class AuthenticationError(ProtocolError):
    """A peer could not prove the identity the protocol expects (TLS or name check failed)."""


@dataclass(frozen=True)
class Credentials:
    """Where a party's TLS material lives.

    Attributes
    ----------
    ca : Path
        PEM file with the consortium CA certificate(s): the only trust anchors.
    cert : Path
        PEM file with this party's certificate (and any intermediates).
    key : Path
        PEM file with this party's private key.
    """

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def from_dir(cls, directory: str | Path, name: str) -> Credentials:
        """``DIR/ca.pem``, ``DIR/NAME.pem`` and ``DIR/NAME.key`` (the layout ``mpc-pca certs`` writes)."""
        root = Path(directory)
        return cls(root / "ca.pem", root / f"{name}.pem", root / f"{name}.key")

    def check(self) -> None:
        """Refuse missing files, naming the first one that is missing."""
        for label, path in (("CA certificate", self.ca), ("certificate", self.cert), ("key", self.key)):
            if not Path(path).is_file():
                raise InputValidationError(f"TLS {label} file {str(path)!r} does not exist")


def _context(creds: Credentials, purpose: int) -> ssl.SSLContext:
    creds.check()
    ctx = ssl.SSLContext(purpose)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.check_hostname = False  # party names are checked by check_peer_name, both ways
    ctx.options |= ssl.OP_NO_TICKET | ssl.OP_NO_COMPRESSION
    try:
        ctx.load_verify_locations(cafile=str(creds.ca))
        ctx.load_cert_chain(certfile=str(creds.cert), keyfile=str(creds.key))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise InputValidationError(
            f"cannot load TLS credentials (ca {creds.ca}, cert {creds.cert}, key {creds.key}): {exc}"
        ) from None
    return ctx


def server_context(creds: Credentials) -> ssl.SSLContext:
    """Context of the accepting end of a link: it also demands a client certificate."""
    ctx = _context(creds, ssl.PROTOCOL_TLS_SERVER)
    ctx.num_tickets = 0
    return ctx


def client_context(creds: Credentials) -> ssl.SSLContext:
    """Context of the dialling end of a link."""
    return _context(creds, ssl.PROTOCOL_TLS_CLIENT)


def certificate_names(cert: dict[str, Any]) -> list[str]:
    """Names a decoded peer certificate (``getpeercert()``) speaks for.

    The DNS entries of ``subjectAltName`` when there are any (RFC 6125), the
    common name(s) of the subject otherwise.
    """
    sans = [value for kind, value in cert.get("subjectAltName", ()) if kind == "DNS"]
    if sans:
        return sans
    return [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"]


def check_peer_name(cert: dict[str, Any] | None, expected: str, *, me: str, where: str) -> None:
    """Raise :class:`AuthenticationError` unless ``cert`` names party ``expected``.

    Parameters
    ----------
    cert : dict or None
        The verified peer certificate (``SSLObject.getpeercert()``).
    expected : str
        The party name the protocol has at the other end of this link.
    me, where : str
        This party's name and a description of the link, for the message.
    """
    if not cert:
        raise AuthenticationError(f"{me!r}: authentication failed for {where}: no certificate presented")
    names = certificate_names(cert)
    if expected not in names:
        raise AuthenticationError(
            f"{me!r}: authentication failed for {where}: expected party {expected!r}, but the "
            f"certificate is issued to {names}"
        )


__all__ = [
    "AuthenticationError",
    "Credentials",
    "certificate_names",
    "check_peer_name",
    "client_context",
    "server_context",
]
