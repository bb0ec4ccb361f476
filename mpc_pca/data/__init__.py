"""Data input at the edge: bundled data sets and row partitions among providers.

Modules
-------
datasets
    ``builtin:NAME`` loaders for scikit-learn's bundled data sets and CSV files.
latent
    Synthetic single topic models and Gaussian mixtures (capeAGN), ``synthetic:`` specs.
partition
    Splitting one table's rows among providers.
"""
