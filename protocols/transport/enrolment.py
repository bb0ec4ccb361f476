"""Enrolment without moving keys: a party requests, the consortium CA signs.

Three steps, each on its own side (``mpc-pca certs init-ca | request | sign``):

1. :func:`init_ca` (the CA, once): ``ca.key`` (0600) and ``ca.pem`` (0644).
2. :func:`make_request` (each organisation): its own ECDSA P-256 key
   ``NAME.key`` (0600) and a certificate signing request ``NAME.csr``
   (subject ``CN=NAME``, ``subjectAltName`` DNS ``NAME``). The key never
   leaves the organisation; only the CSR goes to the CA.
3. :func:`sign_request` (the CA, per CSR): checks the CSR (see
   :func:`read_request`), shows the party name and the SHA-256 fingerprint
   of the requested public key for confirmation, and issues the same
   certificate :func:`~protocols.transport.certs.write_credentials` would
   (:func:`~protocols.transport.certs.party_certificate`). It reads the CA's
   two files and the CSR, never a party's key.

The fingerprint is the SHA-256 of the DER ``SubjectPublicKeyInfo``, in
lowercase hex: what ``openssl pkey -pubout -outform DER | openssl dgst
-sha256`` prints, so each side can compare it over another channel (a phone
call) before the CA signs. Files are written as in
:mod:`protocols.transport.certs`: new files only, explicit modes, no
symbolic link followed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtensionOID, NameOID

from protocols.errors import InputValidationError
from protocols.transport.certs import (
    CERT_MODE,
    KEY_MODE,
    check_days,
    check_party_names,
    create_new_file,
    key_pem,
    make_ca,
    party_certificate,
    prepare_directory,
)

#: Default lifetime of a CA made by :func:`init_ca` (a party certificate: 30 days).
CA_DAYS = 365
#: Elliptic curves accepted in a request (RSA: at least :data:`MIN_RSA_BITS` bits; also Ed25519, Ed448).
CURVES = ("secp256r1", "secp384r1", "secp521r1")
MIN_RSA_BITS = 2048


@dataclass(frozen=True)
class Request:
    """A checked certificate signing request.

    Attributes
    ----------
    name : str
        The party name it asks for (its common name, and its only SAN DNS entry if any).
    public_key : CertificatePublicKeyTypes
        The requested public key; the CSR's signature verifies under it.
    fingerprint : str
        SHA-256 of the DER SubjectPublicKeyInfo, lowercase hex.
    key_type : str
        E.g. ``"ECDSA secp256r1"``, for the confirmation prompt.
    """

    name: str
    public_key: CertificatePublicKeyTypes
    fingerprint: str
    key_type: str

    def describe(self) -> str:
        """The lines the CA confirms: party name, key type, fingerprint."""
        return (
            f"party name:  {self.name}\n"
            f"public key:  {self.key_type}\n"
            f"SHA-256 of the public key: {self.fingerprint}"
        )


def public_key_fingerprint(public_key: CertificatePublicKeyTypes) -> str:
    """SHA-256 of the DER SubjectPublicKeyInfo of ``public_key``, lowercase hex."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _absent(paths: list[Path]) -> None:
    present = [str(path) for path in paths if os.path.lexists(path)]
    if present:
        verb = "already exists" if len(present) == 1 else "already exist"
        raise InputValidationError(
            f"{', '.join(present)} {verb}; refusing to overwrite or reuse (nothing was written)"
        )


def init_ca(
    out: str | Path, *, days: int = CA_DAYS, ca_name: str = "mpc-pca consortium CA"
) -> dict[str, Path]:
    """Make the consortium CA under ``out``: ``ca.pem`` (0644) and ``ca.key`` (0600); return them.

    Parameters
    ----------
    out : str or Path
        Directory (created 0755 if missing; an existing one must be safe, see
        :func:`~protocols.transport.certs.prepare_directory`).
    days : int
        Lifetime of the CA certificate, 1 .. 3650 days.
    ca_name : str
        Common name of the CA.

    Returns
    -------
    dict of str to Path
        ``{"ca": ca.pem, "ca.key": ca.key}``.
    """
    check_days(days)
    root = Path(out)
    files = {"ca": root / "ca.pem", "ca.key": root / "ca.key"}
    _absent(list(files.values()))
    prepare_directory(root)
    key, cert = make_ca(ca_name, days)
    create_new_file(files["ca"], cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    create_new_file(files["ca.key"], key_pem(key), KEY_MODE)
    return files


def make_request(name: str, out: str | Path) -> tuple[dict[str, Path], str]:
    """Make party ``name``'s own key and a CSR for it under ``out``.

    Parameters
    ----------
    name : str
        The party name (checked by :func:`~protocols.transport.certs.check_party_names`).
    out : str or Path
        Directory for ``NAME.key`` (0600) and ``NAME.csr`` (0644); neither may exist.

    Returns
    -------
    files : dict of str to Path
        ``{"key": NAME.key, "csr": NAME.csr}``.
    fingerprint : str
        SHA-256 of the public key (to tell the CA over another channel).
    """
    (party,) = check_party_names([name])
    root = Path(out)
    files = {"key": root / f"{party}.key", "csr": root / f"{party}.csr"}
    _absent(list(files.values()))
    prepare_directory(root)
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, party)]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(party)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    create_new_file(files["key"], key_pem(key), KEY_MODE)
    create_new_file(files["csr"], csr.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    return files, public_key_fingerprint(key.public_key())


def _key_type(key: CertificatePublicKeyTypes, where: str) -> str:
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in CURVES:
            raise InputValidationError(
                f"{where}: elliptic curve {key.curve.name} is not one of {', '.join(CURVES)}"
            )
        return f"ECDSA {key.curve.name}"
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise InputValidationError(
                f"{where}: RSA key of {key.key_size} bits; at least {MIN_RSA_BITS} needed"
            )
        return f"RSA {key.key_size}"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    if isinstance(key, ed448.Ed448PublicKey):
        return "Ed448"
    raise InputValidationError(f"{where}: unsupported public key type {type(key).__name__}")


def _load_csr(data: bytes, where: str) -> x509.CertificateSigningRequest:
    """The CSR in ``data`` (PEM if it has a PEM header, else DER)."""
    try:
        return x509.load_pem_x509_csr(data) if b"-----BEGIN" in data else x509.load_der_x509_csr(data)
    except ValueError as exc:
        raise InputValidationError(f"{where} is not a certificate signing request: {exc}") from None


def _check_signature(csr: x509.CertificateSigningRequest, where: str) -> None:
    """Refuse a CSR whose signature does not verify under its own public key."""
    try:
        valid = csr.is_signature_valid
    except (InvalidSignature, UnsupportedAlgorithm, ValueError, TypeError):
        valid = False
    if not valid:
        raise InputValidationError(
            f"{where}: the signature does not verify under the CSR's own public key (the request was altered, "
            "or was not made with this key); refusing to sign"
        )


def _subject_name(
    csr: x509.CertificateSigningRequest, where: str
) -> tuple[str, list[x509.Extension[x509.ExtensionType]]]:
    """The party name of a subject that is exactly ``CN=<party name>``, and the CSR's extensions."""
    try:
        attributes, extensions = list(csr.subject), list(csr.extensions)
    except ValueError as exc:
        raise InputValidationError(f"{where}: malformed subject or extensions: {exc}") from None
    if len(attributes) != 1 or attributes[0].oid != NameOID.COMMON_NAME:
        raise InputValidationError(
            f"{where}: the subject must be exactly CN=<party name>, got {csr.subject.rfc4514_string()!r}"
        )
    name = str(attributes[0].value)
    try:
        check_party_names([name])
    except InputValidationError as exc:
        raise InputValidationError(f"{where}: {exc}") from None
    if name != name.strip():
        raise InputValidationError(f"{where}: party name {name!r} has surrounding spaces")
    return name, extensions


def _check_extension(extension: x509.Extension[x509.ExtensionType], name: str, where: str) -> None:
    """Accept only a ``subjectAltName`` that is exactly ``DNS:<name>``; refuse any other extension."""
    if extension.oid == ExtensionOID.SUBJECT_ALTERNATIVE_NAME:
        san = extension.value
        assert isinstance(san, x509.SubjectAlternativeName)
        entries = [
            entry.value if isinstance(entry, x509.DNSName) else f"{type(entry).__name__}:{entry.value}"
            for entry in san
        ]
        if entries != [name]:
            raise InputValidationError(
                f"{where}: subjectAltName must be exactly DNS:{name} (the common name), got {entries}"
            )
    elif extension.oid == ExtensionOID.BASIC_CONSTRAINTS:
        value = extension.value
        assert isinstance(value, x509.BasicConstraints)
        rights = "asks for CA rights (basicConstraints CA=true)" if value.ca else "carries basicConstraints"
        raise InputValidationError(
            f"{where} for {name!r} {rights}; only subjectAltName is accepted in a request, refusing to sign"
        )
    else:
        label = getattr(extension.oid, "_name", None) or extension.oid.dotted_string
        raise InputValidationError(
            f"{where} for {name!r} asks for extension {label} ({extension.oid.dotted_string}); only "
            "subjectAltName is accepted in a request (the CA sets the rest), refusing to sign"
        )


def read_request(data: bytes, where: str = "the CSR") -> Request:
    """Parse and check a PEM (or DER) certificate signing request.

    Refused, with a message naming the value: a CSR that does not parse,
    whose signature does not verify under its own public key (it was altered,
    or its sender does not hold the key), whose subject is not exactly one
    common name that is a valid party name, whose ``subjectAltName`` is
    anything but that one name, that carries any other extension (in
    particular basicConstraints, i.e. CA rights), or whose key is weak.

    Parameters
    ----------
    data : bytes
        The CSR file's content.
    where : str
        How to name the CSR in messages (its path).

    Returns
    -------
    Request
    """
    csr = _load_csr(data, where)
    try:
        public_key = csr.public_key()
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise InputValidationError(f"{where}: unreadable public key: {exc}") from None
    key_type = _key_type(public_key, where)
    _check_signature(csr, where)
    name, extensions = _subject_name(csr, where)
    for extension in extensions:
        _check_extension(extension, name, where)
    return Request(name, public_key, public_key_fingerprint(public_key), key_type)


def _load_ca(ca_dir: Path) -> tuple[ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, x509.Certificate]:
    cert_path, key_path = ca_dir / "ca.pem", ca_dir / "ca.key"
    for path in (cert_path, key_path):
        if not path.is_file():
            raise InputValidationError(
                f"{path} does not exist; make the CA in {ca_dir} first (init_ca, or `mpc-pca certs init-ca`)"
            )
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise InputValidationError(f"cannot read the CA in {ca_dir}: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise InputValidationError(f"{key_path}: the CA key must be ECDSA or RSA, got {type(key).__name__}")
    if key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ):
        raise InputValidationError(f"{key_path} is not the key of {cert_path}")
    try:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is None or not constraints.ca:
        raise InputValidationError(f"{cert_path} is not a CA certificate (no basicConstraints CA=true)")
    return key, cert


def sign_request(
    ca_dir: str | Path,
    csr: str | Path,
    out: str | Path,
    *,
    days: int = 30,
    confirm: Callable[[Request], bool] | None = None,
) -> Request:
    """Issue the certificate a checked CSR asks for, signed by the CA in ``ca_dir``.

    Reads only ``ca_dir/ca.pem``, ``ca_dir/ca.key`` and ``csr``. The output
    file is checked before anything is asked and written new (0644).

    Parameters
    ----------
    ca_dir : str or Path
        The CA's directory (``ca.pem``, ``ca.key``, as :func:`init_ca` writes).
    csr : str or Path
        The party's request (checked by :func:`read_request`).
    out : str or Path
        The certificate file to write; it must not exist.
    days : int
        Lifetime, 1 .. 3650 days, and not beyond the CA certificate's.
    confirm : callable, optional
        Shown the checked :class:`Request`; signs only if it returns true.

    Returns
    -------
    Request
        What was signed.
    """
    check_days(days)
    target, source = Path(out), Path(csr)
    _absent([target])
    if not target.parent.is_dir():
        raise InputValidationError(f"directory {target.parent} of {target} does not exist")
    if not source.is_file():
        raise InputValidationError(f"CSR file {source} does not exist")
    request = read_request(source.read_bytes(), str(source))
    ca_key, ca_cert = _load_ca(Path(ca_dir))
    if dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=days) > ca_cert.not_valid_after_utc:
        raise InputValidationError(
            f"days={days}: a certificate for {days} days would outlive the CA certificate (valid until "
            f"{ca_cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC); choose fewer days"
        )
    if confirm is not None and not confirm(request):
        raise InputValidationError(f"not confirmed; no certificate was issued for {request.name!r}")
    cert = party_certificate(request.name, request.public_key, ca_key, ca_cert, days)
    create_new_file(target, cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    return request


__all__ = [
    "CA_DAYS",
    "Request",
    "init_ca",
    "make_request",
    "public_key_fingerprint",
    "read_request",
    "sign_request",
]
