"""A consortium CA and one key + certificate per party (``mpc-pca certs``).

For organisations without a PKI of their own: :func:`write_credentials` makes
an ECDSA P-256 CA and, for each party name, an ECDSA P-256 key and a
certificate whose ``subjectAltName`` (DNS) and common name are the party name,
valid for both TLS client and server authentication. Files:

``ca.pem``
    The CA certificate (mode 0644): every party needs it (it is the only
    trust anchor).
``ca.key``
    The CA's private key (mode 0600): keep it with whoever admits parties;
    never ship it to a party.
``NAME.pem``, ``NAME.key``
    Party ``NAME``'s certificate (0644) and private key (0600): give each
    party only its own pair.

The modes are set explicitly, whatever the process's umask. Every file is
created new (``O_CREAT | O_EXCL | O_NOFOLLOW``): an existing file, or a
symbolic link planted where a key will go, is refused, never reused or
written through. A directory that does not exist yet is created with mode
0755; an existing one must not be a symbolic link nor writable by other
users (who could replace the trust anchor). Everything is checked before the
first file is written.

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
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
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


#: Modes of the files written, set explicitly whatever the umask.
KEY_MODE = 0o600
CERT_MODE = 0o644
DIRECTORY_MODE = 0o755


def create_new_file(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a file that must not exist yet, with exactly ``mode``.

    ``O_EXCL`` refuses an existing file and ``O_NOFOLLOW`` a symbolic link
    (even a dangling one) in its place; ``fchmod`` sets the mode the umask
    would otherwise have reduced or widened.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise InputValidationError(f"{path} already exists; refusing to overwrite or reuse it") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def prepare_directory(root: Path) -> None:
    """Create ``root`` (mode 0755) or check that an existing one is safe to write keys into."""
    if root.is_symlink():
        raise InputValidationError(f"{root} is a symbolic link; give the real directory")
    if not root.exists():
        root.mkdir(parents=True)
        os.chmod(root, DIRECTORY_MODE)
        return
    if not root.is_dir():
        raise InputValidationError(f"{root} exists and is not a directory")
    if os.stat(root).st_mode & 0o002:
        raise InputValidationError(
            f"{root} is writable by every user (mode {os.stat(root).st_mode & 0o777:04o}), who could replace "
            "the CA certificate; use a directory only you can write"
        )


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """``key`` as unencrypted PKCS#8 PEM (the file is protected by its mode, 0600)."""
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
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def check_days(days: object) -> int:
    """A certificate lifetime in days: an integer 1 .. 3650 (else :class:`InputValidationError`)."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
        raise InputValidationError(f"certificate lifetime must be 1 .. 3650 days, got {days!r}")
    return days


def party_certificate(
    name: str,
    public_key: CertificatePublicKeyTypes,
    ca_key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey,
    ca_cert: x509.Certificate,
    days: int,
) -> x509.Certificate:
    """The certificate of party ``name`` for ``public_key``, signed by the CA.

    Subject ``CN=name`` and ``subjectAltName`` DNS ``name`` (the name
    :func:`protocols.transport.tls.check_peer_name` checks), basicConstraints
    CA=false (critical), extended key usage TLS server and client, the CA's
    key identifier; valid from five minutes ago for ``days`` days. Every
    certificate this project issues, one-shot or from a request, is this one.
    """
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
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


def make_party(
    name: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, days: int
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A party key and a certificate naming ``name`` (SAN DNS + CN), signed by the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key, party_certificate(name, key.public_key(), ca_key, ca_cert, days)


def write_credentials(
    names: Sequence[str], out: str | Path, *, days: int = DEFAULT_DAYS, ca_name: str = "mpc-pca consortium CA"
) -> dict[str, Path]:
    """Make a CA and a key + certificate per party under ``out``; return the files written.

    Refuses, before writing anything, if any of the files exists already
    (a second CA would silently split the consortium; a reused key file is
    not a fresh key) or is a symbolic link; see the module docstring for the
    modes and the directory checks.
    """
    parties = check_party_names(names)
    check_days(days)
    root = Path(out)
    files = {"ca": root / "ca.pem", "ca.key": root / "ca.key"}
    for name in parties:
        files[f"{name}.pem"] = root / f"{name}.pem"
        files[f"{name}.key"] = root / f"{name}.key"
    present = [str(path) for path in files.values() if os.path.lexists(path)]
    if present:
        verb = "already exists" if len(present) == 1 else "already exist"
        raise InputValidationError(
            f"{', '.join(present)} {verb}; choose an empty directory for out (nothing was written)"
        )
    prepare_directory(root)
    ca_key, ca_cert = make_ca(ca_name, days)
    create_new_file(files["ca"], ca_cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    create_new_file(files["ca.key"], key_pem(ca_key), KEY_MODE)
    for name in parties:
        key, cert = make_party(name, ca_key, ca_cert, days)
        create_new_file(files[f"{name}.pem"], cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
        create_new_file(files[f"{name}.key"], key_pem(key), KEY_MODE)
    return files


__all__ = [
    "check_days",
    "check_party_names",
    "create_new_file",
    "key_pem",
    "make_ca",
    "make_party",
    "party_certificate",
    "prepare_directory",
    "write_credentials",
]
