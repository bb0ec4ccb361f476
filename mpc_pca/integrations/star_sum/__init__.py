"""The secure sum over a star topology (a server relays everything), free of any framework.

:mod:`~mpc_pca.integrations.star_sum.protocol` states the protocol and the plan
every node agrees on; :mod:`~mpc_pca.integrations.star_sum.client` and
:mod:`~mpc_pca.integrations.star_sum.server` are the two sides' steps over bytes
and arrays; :mod:`~mpc_pca.integrations.star_sum.identity` signs and checks the key material
with each node's consortium certificate; :mod:`~mpc_pca.integrations.star_sum.graph` is the mask
graph (complete, or sparse for many clients); :mod:`~mpc_pca.integrations.star_sum.pca` is federated PCA on top (each
client's PCA statistics in, the pooled PCA out). :mod:`mpc_pca.integrations.flower` carries them over Flower's messages;
the tests drive them directly, without Flower.
"""
