"""``mpc-pca certs`` files: explicit modes whatever the umask, no symlink followed, nothing reused."""

from __future__ import annotations

import os

import pytest

from protocols.errors import InputValidationError
from protocols.transport.certs import write_credentials
from tests.helpers.socket_helpers import file_mode


def test_modes_are_explicit_under_umask_000(tmp_path, permissive_umask):
    out = tmp_path / "tls"
    files = write_credentials(["provider0", "server"], out)
    assert file_mode(out) == 0o755
    for label, path in files.items():
        expected = 0o600 if path.suffix == ".key" else 0o644
        assert file_mode(path) == expected, (label, oct(file_mode(path)))


def test_modes_are_explicit_under_a_strict_umask(tmp_path):
    previous = os.umask(0o077)
    try:
        files = write_credentials(["server"], tmp_path / "tls")
    finally:
        os.umask(previous)
    assert file_mode(files["ca"]) == 0o644 and file_mode(files["server.pem"]) == 0o644
    assert file_mode(files["server.key"]) == 0o600


def test_a_symlink_where_a_key_goes_is_refused_and_not_written_through(tmp_path):
    out = tmp_path / "tls"
    out.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious")
    (out / "server.key").symlink_to(target)
    with pytest.raises(InputValidationError, match=r"server\.key.*already exist"):
        write_credentials(["server"], out)
    assert target.read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["server.key"]  # nothing else was written


def test_a_dangling_symlink_is_refused_too(tmp_path):
    out = tmp_path / "tls"
    out.mkdir()
    (out / "ca.key").symlink_to(tmp_path / "missing")
    with pytest.raises(InputValidationError, match=r"ca\.key"):
        write_credentials(["server"], out)
    assert not (tmp_path / "missing").exists()


def test_an_existing_key_file_is_not_reused(tmp_path):
    out = tmp_path / "tls"
    out.mkdir()
    old = out / "provider0.key"
    old.write_bytes(b"an old key")
    os.chmod(old, 0o644)
    with pytest.raises(InputValidationError, match="nothing was written"):
        write_credentials(["provider0"], out)
    assert old.read_bytes() == b"an old key" and file_mode(old) == 0o644
    assert sorted(p.name for p in out.iterdir()) == ["provider0.key"]


def test_the_output_directory_may_not_be_a_symlink_or_world_writable(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(InputValidationError, match="symbolic link"):
        write_credentials(["server"], link)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(InputValidationError, match="writable by every user"):
        write_credentials(["server"], shared)
    assert list(real.iterdir()) == [] and list(shared.iterdir()) == []
