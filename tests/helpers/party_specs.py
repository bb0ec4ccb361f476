"""Party specifications built from ``mpc-pca party`` arguments, for the misbehaving-party helpers.

The rogue, faulty and cheating party scripts parse the same command line as
``mpc-pca party`` and run one PPPCA party through :func:`mpc_pca.deploy.run_party`
with a deployment of their own; this builds the :class:`PartySpec` they share.
"""

from __future__ import annotations

import argparse

from mpc_pca.cli.options import read_options
from mpc_pca.cli.party import credentials_of
from mpc_pca.deploy import FileSource, LinkOptions, PartySpec


def pppca_spec(args: argparse.Namespace, party: str) -> PartySpec:
    """The ``pppca-ss`` spec of ``party`` from parsed ``mpc-pca party`` arguments (data for providers only)."""
    return PartySpec(
        "pppca-ss",
        party,
        args.world_size - 2,
        LinkOptions(
            args.master,
            None if args.insecure else credentials_of(args, party),
            args.insecure,
            timeout=args.timeout,
            connect_timeout=args.connect_timeout,
            host_rendezvous=False if args.external_rendezvous else None,
        ),
        FileSource(args.data, read_options(args)) if party.startswith("provider") else None,
        {"n_components": args.n_components, "backend": args.backend},
    )
