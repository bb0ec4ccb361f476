"""``mpc-pca certs``: party identities, one-shot (demos) or by enrolment (no key moves).

``mpc-pca certs --parties A,B,... --out DIR``
    One place makes the CA and every party's key (demos, tests).
``mpc-pca certs init-ca --out DIR``
    The consortium CA, once: ``DIR/ca.key`` (0600) and ``DIR/ca.pem`` (0644).
``mpc-pca certs request --party NAME --out DIR``
    An organisation makes its own key ``DIR/NAME.key`` (0600) and a request
    ``DIR/NAME.csr``; only the CSR goes to the CA.
``mpc-pca certs sign --ca-dir DIR --csr FILE --out FILE [--days N] [--yes]``
    The CA checks the CSR, shows the party name and the fingerprint of its key,
    asks for confirmation (on a terminal; ``--yes`` skips) and writes the
    certificate.

The crypto is :mod:`protocols.transport.certs` and :mod:`protocols.transport.enrolment`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from mpc_pca.cli.errors import errors_in_flag_terms
from mpc_pca.cli.options import EXIT_INPUT
from protocols.errors import InputValidationError

#: The subcommands; without one, ``certs`` is the one-shot ``--parties`` form.
SUBCOMMANDS = ("init-ca", "request", "sign")


def add_certs_parser(sub: Any) -> None:
    """``certs`` (one-shot with ``--parties``) and its subcommands ``init-ca``, ``request``, ``sign``."""
    certs = sub.add_parser(
        "certs",
        help="party identities: init-ca, request, sign (enrolment), or --parties (one-shot, for demos)",
        description="Enrolment: the CA runs `init-ca` once and `sign` per request; each organisation runs "
        "`request` and keeps its key. One-shot (demos): `certs --parties A,B --out DIR` makes every key in "
        "one place.",
    )
    certs.set_defaults(certs_parser=certs)
    certs.add_argument(
        "--parties", default=None, help="one-shot: comma-separated party names, e.g. provider0,server"
    )
    certs.add_argument(
        "--out",
        type=Path,
        default=None,
        help="one-shot: directory to write ca.pem, ca.key, NAME.pem, NAME.key",
    )
    certs.add_argument("--days", type=int, default=30, help="certificate lifetime in days (default 30)")
    steps = certs.add_subparsers(dest="certs_command", metavar="{init-ca,request,sign}")
    init = steps.add_parser("init-ca", help="the consortium CA: make ca.key (0600) and ca.pem (0644)")
    init.add_argument("--out", type=Path, required=True, help="the CA's directory")
    init.add_argument("--days", type=int, default=365, help="CA certificate lifetime in days (default 365)")
    request = steps.add_parser(
        "request", help="an organisation: make its own key (0600) and a CSR for the CA"
    )
    request.add_argument("--party", required=True, help="this organisation's party name, e.g. provider0")
    request.add_argument("--out", type=Path, required=True, help="directory for NAME.key and NAME.csr")
    sign = steps.add_parser("sign", help="the CA: check a CSR, confirm name and key fingerprint, issue")
    sign.add_argument("--ca-dir", type=Path, required=True, help="the CA's directory (ca.pem, ca.key)")
    sign.add_argument("--csr", type=Path, required=True, help="the party's NAME.csr")
    sign.add_argument("--out", type=Path, required=True, help="certificate file to write, e.g. NAME.pem")
    sign.add_argument("--days", type=int, default=30, help="certificate lifetime in days (default 30)")
    sign.add_argument("--yes", action="store_true", help="do not ask for confirmation (checked name and key)")


def ask(question: str, stdin: TextIO, stderr: TextIO) -> bool:
    """Ask ``question`` on a terminal; true only for an answer of ``y`` or ``yes``.

    Raises
    ------
    InputValidationError
        If ``stdin`` is not a terminal (nobody could have checked the fingerprint).
    """
    if not stdin.isatty():
        raise InputValidationError(
            "standard input is not a terminal, so nobody can confirm the party name and key fingerprint; "
            "check them and pass --yes (no certificate was issued)"
        )
    print(question, end=" ", file=stderr, flush=True)
    return stdin.readline().strip().lower() in ("y", "yes")


def _sign(args: argparse.Namespace) -> int:
    from protocols.transport.enrolment import Request, sign_request

    def confirm(request: Request) -> bool:
        print(f"CSR {args.csr}:\n{request.describe()}", file=sys.stderr)
        if args.yes:
            return True
        return ask(
            "Compare the fingerprint with the one the party gave you over another channel. Sign? [y/N]",
            sys.stdin,
            sys.stderr,
        )

    request = sign_request(args.ca_dir, args.csr, args.out, days=args.days, confirm=confirm)
    print(
        f"wrote {args.out}: certificate for party {request.name!r} ({args.days} days); send it and "
        f"{args.ca_dir / 'ca.pem'} to the party"
    )
    return 0


def _one_shot(args: argparse.Namespace) -> int:
    from protocols.transport.certs import write_credentials

    if args.parties is None or args.out is None:
        args.certs_parser.error(
            "give --parties and --out (one-shot), or one of the subcommands " + ", ".join(SUBCOMMANDS)
        )
    files = write_credentials([n for n in args.parties.split(",") if n.strip()], args.out, days=args.days)
    print(f"wrote {len(files)} files to {args.out}: give each party ca.pem and its own NAME.pem + NAME.key;")
    print(f"keep {args.out / 'ca.key'} with whoever admits parties (never ship it)")
    return 0


def certs_main(args: argparse.Namespace) -> int:
    """Run ``mpc-pca certs`` (any form); exit 3 with a message on refused input."""
    command = getattr(args, "certs_command", None)
    try:
        with errors_in_flag_terms():
            return _certs_command(args, command)
    except InputValidationError as exc:
        print(f"mpc-pca: error: {exc}", file=sys.stderr)
        return EXIT_INPUT


def _certs_command(args: argparse.Namespace, command: str | None) -> int:
    """One form of ``mpc-pca certs``: the one-shot CA, or the ``init-ca`` / ``request`` / ``sign`` steps."""
    if command is None:
        return _one_shot(args)
    if args.parties is not None:
        args.certs_parser.error(f"--parties belongs to the one-shot form, not to `certs {command}`")
    if command == "init-ca":
        from protocols.transport.enrolment import init_ca

        files = init_ca(args.out, days=args.days)
        print(f"wrote {files['ca']} (give it to every party) and {files['ca.key']} (never ship it)")
        return 0
    if command == "request":
        from protocols.transport.enrolment import make_request

        files, fingerprint = make_request(args.party, args.out)
        print(f"wrote {files['key']} (your private key: keep it here) and {files['csr']} (send it to the CA)")
        print(f"SHA-256 of your public key: {fingerprint}")
        print("tell the CA this fingerprint over another channel; it checks it before signing")
        return 0
    return _sign(args)


__all__ = ["add_certs_parser", "ask", "certs_main"]
