"""Optional extras that put the secure sum inside other frameworks; never imported by the core.

Each integration is a subpackage with its own extra (``pip install "mpc-pca[flower]"``
for :mod:`mpc_pca.integrations.flower`). Nothing under :mod:`mpc_pca` or
:mod:`protocols` imports this package (an import-linter contract says so).
"""
