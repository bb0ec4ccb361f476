"""A consortium CA and one key + certificate per party (``mpc-pca certs``).

For organisations without a PKI of their own: :func:`write_credentials` makes
an ECDSA P-256 CA and, for each party name, an ECDSA P-256 key and a
certificate whose ``subjectAltName`` (DNS) and common name are the party name,
valid for both TLS client and server authentication. Files:

``ca.pem``
    The CA certificate: every party needs it (it is the only trust anchor).
``ca.key``
    The CA's private key (mode 0600): keep it with whoever admits parties;
    never ship it to a party.
``NAME.pem``, ``NAME.key``
    Party ``NAME``'s certificate and private key (mode 0600): give each party
    only its own pair.

Certificates from an existing CA work the same way, as long as they carry the
party name in a SAN DNS entry (or the common name).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from protocols.errors import InputValidationError

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,62}$")
DEFAULT_DAYS = 30


def check_party_names(names: Sequence[str]) -> list[str]:
    """Party names usable in a certificate: DNS labels, unique, not ``ca``."""
    out = [str(n).strip() for n in names]
    for name in out:
        if not _NAME.match(name):
            raise InputValidationError(
                f"party name {name!r} cannot go in a certificate: use a letter followed by up to 62 "
                "letters, digits or hyphens"
            )
        if name == "ca":
            raise InputValidationError("'ca' is reserved for the CA's own files")
    if not out or len(set(out)) != len(out):
        raise InputValidationError(f"party names must be a non-empty list without repeats, got {out}")
    return out


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_ca(common_name: str, days: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA key and certificate (path length 0: it signs party certificates only)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def make_party(
    name: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, days: int
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A party key and a certificate naming ``name`` (SAN DNS + CN), signed by the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def write_credentials(
    names: Sequence[str], out: str | Path, *, days: int = DEFAULT_DAYS, ca_name: str = "mpc-pca consortium CA"
) -> dict[str, Path]:
    """Make a CA and a key + certificate per party under ``out``; return the files written.

    Refuses to overwrite an existing ``ca.pem`` (a second CA would silently
    split the consortium).
    """
    parties = check_party_names(names)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
        raise InputValidationError(f"certificate lifetime must be 1 .. 3650 days, got {days!r}")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    if (root / "ca.pem").exists():
        raise InputValidationError(f"{root / 'ca.pem'} already exists; choose an empty --out directory")
    ca_key, ca_cert = make_ca(ca_name, days)
    files = {"ca": root / "ca.pem", "ca.key": root / "ca.key"}
    files["ca"].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_private(files["ca.key"], _key_pem(ca_key))
    for name in parties:
        key, cert = make_party(name, ca_key, ca_cert, days)
        files[f"{name}.pem"] = root / f"{name}.pem"
        files[f"{name}.key"] = root / f"{name}.key"
        files[f"{name}.pem"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_private(files[f"{name}.key"], _key_pem(key))
    return files


__all__ = ["check_party_names", "make_ca", "make_party", "write_credentials"]
