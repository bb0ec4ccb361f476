"""Wide-data PCA: the top components of many columns without any ``d x d`` matrix (issue 37).

:mod:`mpc_pca.wide.subspace`
    The plaintext reference: randomized block subspace iteration on the
    pooled covariance, whose only access to the rows is a block product.
:mod:`mpc_pca.wide.site`
    What one site computes from its own rows, a chunk at a time: its sums,
    its share of a block product and its PC scores.
:mod:`mpc_pca.wide.encoding`
    The fixed-point scaling of the secure sums and its error bound.
:mod:`mpc_pca.wide.roles`
    The secure protocol's roles, in both modes of ``iterates``: the server
    (``"server"``) or ``provider0`` (``"sites"``) leads the iterations and
    sees each product of the covariance with the current block.
:mod:`mpc_pca.wide.deployment`
    The protocol object ``pppca-randomized``.
"""
