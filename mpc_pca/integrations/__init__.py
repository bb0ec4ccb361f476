"""Optional extras that put the secure sum inside other frameworks; never imported by the core.

Modules
-------
flower
    A Flower server workflow and client mod (the ``flower`` extra).
star_sum
    The secure sum over a star topology (a server relays every message), free of
    any framework; ``flower`` carries it over Flower's messages.

Each integration is a subpackage with its own extra (``pip install "mpc-pca[flower]"``
for :mod:`mpc_pca.integrations.flower`). Nothing under :mod:`mpc_pca` or
:mod:`protocols` imports this package (an import-linter contract says so).
"""
