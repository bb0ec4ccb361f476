"""A 5-party PPPCA run over TLS whose parties enrolled without moving a key.

Each party of a 3-provider ``pppca-ss`` run makes its key and CSR in a
directory of its own; the CA, in another directory, signs each CSR; only
CSRs, certificates and the CA certificate are copied between directories.
Then the five parties run as processes with ``--ca/--cert/--key`` (rank 0
hosts the rendezvous, as between hosts) and the server's model must equal
the in-process run. Done twice, with the commands of the enrolment guide
(``docs/howto/enrolment.md``), read from the page itself (so the two cannot drift):
once with ``mpc-pca certs``, once with ``openssl`` alone.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.deploy.local import child_environment
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.runtime.launcher import launch, raise_on_failure
from tests.helpers.markdown_blocks import DOCS, block, sections
from tests.helpers.socket_helpers import free_port
from tests.helpers.torch_helpers import check_pppca_outputs, party_commands

ENROLMENT = DOCS / "howto" / "enrolment.md"
PARTIES = tuple(pppca_ranks(3))

#: Runs ``mpc-pca`` (argv[2:]) and appends every path it opens to the file argv[1].
AUDITED_CLI = """
import os, sys
log = open(sys.argv[1], "a")

def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        log.write(os.path.abspath(os.fsdecode(args[0])) + "\\n")
        log.flush()

sys.addaudithook(hook)
from mpc_pca.cli import main
sys.exit(main(sys.argv[2:]))
"""


def readme_sections(marker: str) -> list[list[str]]:
    """The commands of the block marked ``marker`` in the enrolment guide, one list per ``#`` section.

    The sections are, in order: a party (in its own directory), the CA once,
    the CA for each CSR. ``NAME`` stands for the party name.
    """
    found = sections(block(ENROLMENT, marker).text)
    assert len(found) == 3, found
    return found


def run_party_processes(
    tmp_path: Path, credentials: dict[str, tuple[Path, Path, Path]], wine: np.ndarray
) -> None:
    """The five parties as processes with ``--ca/--cert/--key``; the server's model is the in-process one."""
    parts = np.array_split(wine, 3)
    run = tmp_path / "run"
    run.mkdir()
    commands, outputs = party_commands(
        run, parts, f"127.0.0.1:{free_port()}", timeout=30, connect_timeout=40,
        external_store=False, tls_dir=Path("unused"),
    )  # fmt: skip
    for name, command in commands.items():
        at = command.index("--tls-dir")
        ca, cert, key = credentials[name]
        command[at : at + 2] = ["--ca", str(ca), "--cert", str(cert), "--key", str(key)]
    outcomes = launch(commands, timeout=60, env=child_environment())
    raise_on_failure(outcomes)
    check_pppca_outputs(outputs, parts)


def check_no_party_key(ca_side: Path) -> None:
    """The CA's whole directory holds no private key but its own (listed after the run)."""
    files = [p for p in ca_side.rglob("*") if p.is_file() or p.is_symlink()]
    private = sorted(p.name for p in files if b"PRIVATE KEY" in p.read_bytes())
    assert private == ["ca.key"], private
    assert not any(p.name == f"{name}.key" for p in files for name in PARTIES)


def test_parties_enrolled_with_mpc_pca_certs_run_over_tls(tmp_path, wine):
    party_lines, ca_lines, sign_lines = readme_sections("enrolment-mpc-pca")
    env = child_environment()
    orgs, ca_side = tmp_path / "orgs", tmp_path / "consortium"
    ca_side.mkdir()
    audit = tmp_path / "opened.txt"

    def run(line: str, name: str, cwd: Path, audited: bool = False) -> str:
        argv = shlex.split(line.replace("NAME", name))
        assert argv[0] == "mpc-pca", line
        prefix = (
            [sys.executable, "-c", AUDITED_CLI, str(audit)]
            if audited
            else [sys.executable, "-m", "mpc_pca.cli"]
        )
        extra = ["--yes"] if argv[1:3] == ["certs", "sign"] else []  # no terminal here: the name was checked
        done = subprocess.run([*prefix, *argv[1:], *extra], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (line, done.stderr)
        return done.stdout + done.stderr

    for line in ca_lines:
        run(line, "", ca_side)
    credentials = {}
    for name in PARTIES:
        home = orgs / name
        home.mkdir(parents=True)
        said = "".join(run(line, name, home) for line in party_lines)
        tls = home / "tls"
        shutil.copy(tls / f"{name}.csr", ca_side / f"{name}.csr")  # only the CSR travels to the CA
        shown = "".join(run(line, name, ca_side, audited=True) for line in sign_lines)
        fingerprint = said.split("SHA-256 of your public key: ")[1].split()[0]
        assert fingerprint in shown and f"party name:  {name}" in shown
        shutil.copy(ca_side / f"{name}.pem", tls / f"{name}.pem")  # the certificate and the CA's travel back
        shutil.copy(ca_side / "ca" / "ca.pem", tls / "ca.pem")
        credentials[name] = (tls / "ca.pem", tls / f"{name}.pem", tls / f"{name}.key")
    opened = {Path(p).resolve() for p in audit.read_text().split("\n") if p}
    opened = {p for p in opened if p.is_relative_to(tmp_path.resolve())}
    allowed = {ca_side / "ca" / "ca.pem", ca_side / "ca" / "ca.key"}
    allowed |= {ca_side / f"{n}.{e}" for n in PARTIES for e in ("csr", "pem")}
    assert opened <= {p.resolve() for p in allowed}, opened  # sign read no key of a party
    assert {p.name for p in opened} >= {"ca.key", "ca.pem", "provider0.csr"}  # the audit saw the reads
    check_no_party_key(ca_side)
    run_party_processes(tmp_path, credentials, wine)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command-line tool")
def test_parties_enrolled_with_openssl_alone_run_over_tls(tmp_path, wine):
    party_lines, ca_lines, sign_lines = readme_sections("enrolment-openssl")
    orgs, ca_side = tmp_path / "orgs", tmp_path / "consortium"
    ca_side.mkdir()

    def run(lines: list[str], name: str, cwd: Path) -> str:
        script = "\n".join(line.replace("NAME", name) for line in lines)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True
        )
        assert done.returncode == 0, (script, done.stderr)
        return done.stdout + done.stderr

    run(ca_lines, "", ca_side)
    credentials = {}
    for name in PARTIES:
        home = orgs / name
        home.mkdir(parents=True)
        said = run(party_lines, name, home)
        assert (home / f"{name}.key").stat().st_mode & 0o077 == 0
        shutil.copy(home / f"{name}.csr", ca_side / f"{name}.csr")
        shown = run(sign_lines, name, ca_side)
        fingerprint = said.split("= ")[-1].split()[0]
        assert len(fingerprint) == 64 and fingerprint in shown and f"CN = {name}" in shown
        shutil.copy(ca_side / f"{name}.pem", home / f"{name}.pem")
        shutil.copy(ca_side / "ca.pem", home / "ca.pem")
        credentials[name] = (home / "ca.pem", home / f"{name}.pem", home / f"{name}.key")
    check_no_party_key(ca_side)
    run_party_processes(tmp_path, credentials, wine)
