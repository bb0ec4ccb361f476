"""Node identities of the Flower secure sum: consortium certificates that sign each node's key material.

The consortium's CA (``mpc-pca certs``: :mod:`protocols.transport.certs`,
:mod:`protocols.transport.enrolment`) gives every party a key and an X.509
certificate naming it (``CN``). A SuperNode configured with its certificate,
key and the CA signs, in stage ``keys``, the bytes of :func:`signed_bytes`:
the round, its Flower node id, both X25519 public keys and the digest of the
plan (:meth:`SumPlan.digest`, which also carries the round). Before a client
encrypts any share to a peer it checks (:func:`check_peers`) the peer's
certificate (issued by the CA, in its validity period, one ``CN``), the
signature under that certificate's key, and that no certificate name signs
for two node ids of the round.

How node id and name are bound: the node itself binds them, by signing its
node id with its certificate's key; no server-provided table is trusted. A
server that relays a key bundle under another node id, a substituted key, an
old round's signature or a certificate of another CA fails the signature or
the chain; one consortium member under two node ids (to hold two shares of
every secret, a Sybil towards the threshold) is refused as a repeated name.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import NameOID

from protocols.errors import InputValidationError, ProtocolError

_SIGNATURE_CONTEXT = b"mpc-pca flower key bundle v1"

SigningKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey


def signed_bytes(round: int, node: str, mask_pk: bytes, enc_pk: bytes, plan_digest: bytes) -> bytes:
    """What a node signs in stage ``keys`` (every field length-prefixed, after a fixed context string)."""
    fields = [_SIGNATURE_CONTEXT, str(round).encode(), node.encode(), mask_pk, enc_pk, plan_digest]
    return b"".join(len(f).to_bytes(4, "big") + f for f in fields)


def certificate_name(cert: x509.Certificate) -> str:
    """The certificate's single ``CN`` (the party name the consortium CA certified).

    Raises
    ------
    ProtocolError
        If the subject does not hold exactly one common name.
    """
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(names) != 1 or not isinstance(names[0].value, str) or not names[0].value:
        raise ProtocolError("the certificate does not name exactly one party (one CN)")
    return names[0].value


def _check_issued(cert: x509.Certificate, ca: x509.Certificate) -> None:
    """Raise :class:`ProtocolError` unless ``ca`` signed ``cert`` and ``cert`` is valid now and not a CA."""
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature) as exc:
        raise ProtocolError(
            f"the certificate was not issued by the consortium CA ({exc or 'bad signature'})"
        ) from exc
    now = dt.datetime.now(dt.timezone.utc)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise ProtocolError("the certificate is outside its validity period")
    try:
        if cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            raise ProtocolError("the certificate is a CA certificate, not a party's")
    except x509.ExtensionNotFound:
        pass


def _verify(cert: x509.Certificate, signature: bytes, data: bytes) -> None:
    key = cert.public_key()
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        else:
            raise ProtocolError(f"the certificate's key type {type(key).__name__} cannot sign key material")
    except InvalidSignature as exc:
        raise ProtocolError("the signature over its keys, node id, round and plan does not verify") from exc


@dataclass(frozen=True)
class NodeIdentity:
    """A node's consortium certificate, its private key and the consortium CA.

    Attributes
    ----------
    certificate : x509.Certificate
        This node's certificate (issued by ``ca``).
    key : SigningKey
        The certificate's private key (EC, Ed25519 or RSA).
    ca : x509.Certificate
        The consortium CA every peer's certificate must be issued by.
    """

    certificate: x509.Certificate
    key: SigningKey
    ca: x509.Certificate

    def __post_init__(self) -> None:
        """Check that the key is the certificate's and the CA issued the certificate."""
        public = self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        if public != self.certificate.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        ):
            raise InputValidationError("the node's private key does not belong to its certificate")
        try:
            _check_issued(self.certificate, self.ca)
            certificate_name(self.certificate)
        except ProtocolError as exc:
            raise InputValidationError(f"the node's own certificate: {exc}") from exc

    @classmethod
    def load(cls, cert: str | Path, key: str | Path, ca: str | Path) -> NodeIdentity:
        """Read PEM files (as written by ``mpc-pca certs``).

        Raises
        ------
        InputValidationError
            Naming the file that is missing or unreadable, or a key that is not the certificate's.
        """
        try:
            certificate = x509.load_pem_x509_certificate(Path(cert).read_bytes())
            ca_cert = x509.load_pem_x509_certificate(Path(ca).read_bytes())
            private = serialization.load_pem_private_key(Path(key).read_bytes(), password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise InputValidationError(f"cannot load the node identity ({cert}, {key}, {ca}): {exc}") from exc
        if not isinstance(
            private, (ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey, rsa.RSAPrivateKey)
        ):
            raise InputValidationError(f"{key}: the key type {type(private).__name__} is not supported")
        return cls(certificate, private, ca_cert)

    @property
    def name(self) -> str:
        """This node's party name (its certificate's CN)."""
        return certificate_name(self.certificate)

    @property
    def certificate_der(self) -> bytes:
        """This node's certificate, DER-encoded (as sent in stage ``keys``)."""
        return self.certificate.public_bytes(serialization.Encoding.DER)

    def sign(self, data: bytes) -> bytes:
        """Sign ``data`` (:func:`signed_bytes`) with the certificate's key."""
        if isinstance(self.key, ec.EllipticCurvePrivateKey):
            return self.key.sign(data, ec.ECDSA(hashes.SHA256()))
        if isinstance(self.key, ed25519.Ed25519PrivateKey):
            return self.key.sign(data)
        return self.key.sign(data, padding.PKCS1v15(), hashes.SHA256())

    def check_peer(self, node: str, cert_der: object, signature: object, data: bytes) -> str:
        """Check one peer's certificate and its signature over ``data``; return its party name.

        Raises
        ------
        ProtocolError
            Naming ``node`` and the reason.
        """
        if not isinstance(cert_der, bytes) or not isinstance(signature, bytes):
            raise ProtocolError(f"node {node}: sent no certificate or signature with its keys (unsigned)")
        try:
            cert = x509.load_der_x509_certificate(cert_der)
            _check_issued(cert, self.ca)
            name = certificate_name(cert)
            _verify(cert, signature, data)
        except ValueError as exc:
            raise ProtocolError(f"node {node}: its certificate is malformed ({exc})") from exc
        except ProtocolError as exc:
            raise ProtocolError(f"node {node}: {exc}") from exc
        return name
