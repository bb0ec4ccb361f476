"""Enrolment without moving keys: ``certs request`` -> ``certs sign`` -> a certificate every check accepts."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mpc_pca.cli import main
from protocols.errors import InputValidationError
from protocols.transport.certs import write_credentials
from protocols.transport.enrolment import (
    init_ca,
    make_request,
    public_key_fingerprint,
    read_request,
    sign_request,
)
from protocols.transport.tls import (
    AuthenticationError,
    Credentials,
    check_peer_name,
    client_context,
    server_context,
)
from tests.helpers.socket_helpers import file_mode


def _enrol(tmp_path: Path, name: str) -> Credentials:
    """CA and party in separate directories; the party's certificate lands next to its key."""
    ca = init_ca(tmp_path / "ca")
    files, _ = make_request(name, tmp_path / name)
    sign_request(tmp_path / "ca", files["csr"], tmp_path / name / f"{name}.pem")
    return Credentials(ca["ca"], tmp_path / name / f"{name}.pem", files["key"])


def _handshake(server: Credentials, client: Credentials) -> tuple[dict, dict]:
    """A real TLS 1.3 handshake; each side's view of the other's certificate (getpeercert)."""
    a, b = socket.socketpair()
    seen: dict[str, dict] = {}

    def serve() -> None:
        with server_context(server).wrap_socket(a, server_side=True) as tls:
            seen["client"] = tls.getpeercert()
            tls.recv(1)

    thread = threading.Thread(target=serve)
    thread.start()
    with client_context(client).wrap_socket(b) as tls:
        seen["server"] = tls.getpeercert()
        tls.sendall(b"x")
    thread.join(10)
    return seen["server"], seen["client"]


def _csr(
    name: str, *, extensions: list[tuple[x509.ExtensionType, bool]] = (), subject: x509.Name | None = None
):
    key = ec.generate_private_key(ec.SECP256R1())
    builder = x509.CertificateSigningRequestBuilder().subject_name(
        subject or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    )
    for value, critical in extensions:
        builder = builder.add_extension(value, critical=critical)
    return builder.sign(key, hashes.SHA256())


def test_request_then_sign_passes_the_ca_and_the_tls_name_check(tmp_path, permissive_umask):
    provider = _enrol(tmp_path, "provider0")
    ca_cert = x509.load_pem_x509_certificate(provider.ca.read_bytes())
    cert = x509.load_pem_x509_certificate(provider.cert.read_bytes())
    cert.verify_directly_issued_by(ca_cert)
    # the server enrols with the same CA, in a directory of its own; then a real handshake
    files, _ = make_request("server", tmp_path / "server-own")
    sign_request(tmp_path / "ca", files["csr"], tmp_path / "server-own" / "server.pem")
    server = Credentials(provider.ca, tmp_path / "server-own" / "server.pem", files["key"])
    seen_by_provider, seen_by_server = _handshake(server, provider)
    check_peer_name(seen_by_server, "provider0", me="server", where="test link")
    check_peer_name(seen_by_provider, "server", me="provider0", where="test link")
    with pytest.raises(AuthenticationError, match="expected party 'provider1'"):
        check_peer_name(seen_by_server, "provider1", me="server", where="test link")
    assert file_mode(files["key"]) == 0o600 and file_mode(provider.key) == 0o600
    assert file_mode(files["csr"]) == 0o644 and file_mode(provider.cert) == 0o644
    assert file_mode(tmp_path / "ca" / "ca.key") == 0o600 and file_mode(tmp_path / "ca" / "ca.pem") == 0o644


def test_the_issued_certificate_has_the_constraints_of_the_one_shot_helper(tmp_path):
    one_shot = write_credentials(["provider0"], tmp_path / "one")
    enrolled = _enrol(tmp_path, "provider0")

    def shape(path: Path) -> list:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
        span = cert.not_valid_after_utc - cert.not_valid_before_utc
        return [
            cert.subject,
            span,
            *((e.oid, e.critical, e.value) for e in cert.extensions if e.oid.dotted_string != "2.5.29.35"),
        ]

    assert shape(one_shot["provider0.pem"]) == shape(enrolled.cert)
    constraints = x509.load_pem_x509_certificate(
        enrolled.cert.read_bytes()
    ).extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and not constraints.value.ca


def test_the_fingerprint_is_the_one_request_printed(tmp_path, capsys):
    assert main(["certs", "request", "--party", "provider1", "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    key = serialization.load_pem_private_key((tmp_path / "p" / "provider1.key").read_bytes(), None)
    fingerprint = public_key_fingerprint(key.public_key())
    assert fingerprint in out
    assert read_request((tmp_path / "p" / "provider1.csr").read_bytes()).fingerprint == fingerprint


def test_a_tampered_csr_is_refused(tmp_path):
    init_ca(tmp_path / "ca")
    files, _ = make_request("provider0", tmp_path / "p")
    der = bytearray(
        x509.load_pem_x509_csr(files["csr"].read_bytes()).public_bytes(serialization.Encoding.DER)
    )
    der[-5] ^= 0x01  # a byte of the signature
    bad = tmp_path / "tampered.csr"
    bad.write_bytes(bytes(der))
    with pytest.raises(InputValidationError, match=r"tampered\.csr: the signature does not verify"):
        sign_request(tmp_path / "ca", bad, tmp_path / "out.pem")
    name = bytes(der).replace(b"provider0", b"provider1")  # the requested name changed after signing
    bad.unlink()
    bad.write_bytes(name)
    with pytest.raises(InputValidationError, match=r"tampered\.csr: the signature does not verify"):
        sign_request(tmp_path / "ca", bad, tmp_path / "out.pem")
    assert not (tmp_path / "out.pem").exists()


@pytest.mark.parametrize(
    ("csr", "message"),
    [
        (lambda: _csr("bad_name"), r"party name 'bad_name' cannot go in a certificate"),
        (lambda: _csr("ca"), r"'ca' is reserved"),
        (
            lambda: _csr("provider0", extensions=[(x509.BasicConstraints(ca=True, path_length=None), True)]),
            r"for 'provider0' asks for CA rights \(basicConstraints CA=true\)",
        ),
        (
            lambda: _csr(
                "provider0", extensions=[(x509.SubjectAlternativeName([x509.DNSName("server")]), False)]
            ),
            r"subjectAltName must be exactly DNS:provider0 .*got \['server'\]",
        ),
        (
            lambda: _csr(
                "provider0",
                extensions=[(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CODE_SIGNING]), False)],
            ),
            r"for 'provider0' asks for extension extendedKeyUsage",
        ),
        (
            lambda: _csr(
                "provider0",
                subject=x509.Name(
                    [
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Hospital A"),
                        x509.NameAttribute(NameOID.COMMON_NAME, "provider0"),
                    ]
                ),
            ),
            r"the subject must be exactly CN=<party name>, got 'CN=provider0,O=Hospital A'",
        ),
    ],
)
def test_a_csr_asking_for_too_much_is_refused(tmp_path, csr, message):
    init_ca(tmp_path / "ca")
    path = tmp_path / "request.csr"
    path.write_bytes(csr().public_bytes(serialization.Encoding.PEM))
    with pytest.raises(InputValidationError, match=message):
        sign_request(tmp_path / "ca", path, tmp_path / "out.pem")
    assert not (tmp_path / "out.pem").exists()


def test_existing_or_symlinked_outputs_are_refused_and_untouched(tmp_path, permissive_umask):
    init_ca(tmp_path / "ca")
    files, _ = make_request("provider0", tmp_path / "p")
    existing = tmp_path / "p" / "provider0.pem"
    existing.write_text("old")
    with pytest.raises(InputValidationError, match=r"provider0\.pem already exists"):
        sign_request(tmp_path / "ca", files["csr"], existing)
    assert existing.read_text() == "old"
    precious = tmp_path / "precious.txt"
    precious.write_text("precious")
    link = tmp_path / "p" / "link.pem"
    link.symlink_to(precious)
    with pytest.raises(InputValidationError, match=r"link\.pem already exists"):
        sign_request(tmp_path / "ca", files["csr"], link)
    assert precious.read_text() == "precious"
    # request: an existing key is never reused, a planted (even dangling) symlink never written through
    key = files["key"].read_bytes()
    with pytest.raises(InputValidationError, match=r"provider0\.key, .*provider0\.csr already exist"):
        make_request("provider0", tmp_path / "p")
    assert files["key"].read_bytes() == key
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "server.key").symlink_to(tmp_path / "missing")
    with pytest.raises(InputValidationError, match=r"server\.key already exists"):
        make_request("server", tmp_path / "q")
    assert not (tmp_path / "missing").exists() and sorted(p.name for p in (tmp_path / "q").iterdir()) == [
        "server.key"
    ]
    with pytest.raises(InputValidationError, match=r"ca\.pem, .*ca\.key already exist"):
        init_ca(tmp_path / "ca")


def test_sign_asks_on_a_terminal_and_refuses_without_one(tmp_path, monkeypatch, capsys):
    init_ca(tmp_path / "ca")
    files, fingerprint = make_request("server", tmp_path / "s")
    argv = ["certs", "sign", "--ca-dir", str(tmp_path / "ca"), "--csr", str(files["csr"])]
    out = tmp_path / "s" / "server.pem"
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a terminal
    assert main([*argv, "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "not a terminal" in err and "--yes" in err and not out.exists()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert main([*argv, "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "party name:  server" in err and fingerprint in err and "not confirmed" in err and not out.exists()
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert main([*argv, "--out", str(out)]) == 0 and out.exists()
    assert main([*argv, "--out", str(tmp_path / "again.pem"), "--yes"]) == 0


def test_a_certificate_may_not_outlive_the_ca(tmp_path):
    init_ca(tmp_path / "ca", days=10)
    files, _ = make_request("server", tmp_path / "s")
    with pytest.raises(InputValidationError, match="would outlive the CA certificate"):
        sign_request(tmp_path / "ca", files["csr"], tmp_path / "s" / "server.pem", days=30)
    with pytest.raises(InputValidationError, match=r"1 \.\. 3650 days, got 0"):
        sign_request(tmp_path / "ca", files["csr"], tmp_path / "s" / "server.pem", days=0)


def test_the_certs_forms_do_not_mix(tmp_path, capsys):
    """``certs`` alone needs --parties (one-shot); --parties with a subcommand is a usage error."""
    with pytest.raises(SystemExit) as exit_info:
        main(["certs"])
    assert exit_info.value.code == 2 and "give --parties and --out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["certs", "--parties", "server", "request", "--party", "server", "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and "--parties belongs to the one-shot form" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["certs", "request", "--party", "bad_name", "--out", str(tmp_path / "p")]) == 3
    assert "party name 'bad_name' cannot go in a certificate" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
