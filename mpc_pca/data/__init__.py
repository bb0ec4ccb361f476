"""Data input at the edge: files, bundled data sets, row partitions among providers.

Modules
-------
streaming
    A provider's table read in row chunks, with the same checks.
dask_client
    The connection to a provider's Dask scheduler, bounded by ``--connect-timeout``.
tables
    Reading one provider's table (CSV with header detection, delimiter
    sniffing, compression, encodings, missing cells; Parquet) into named columns.
inputs
    Resolving ``--data`` (one file per provider, a directory, a glob, or one
    data set split among ``--parties``) into one table per provider.
columns
    Agreeing on the providers' ordered column names (alignment by name, the
    names' hash for the settings agreement).
datasets
    ``builtin:NAME`` loaders for scikit-learn's bundled data sets.
latent
    Synthetic single topic models and Gaussian mixtures (capeAGN), ``synthetic:`` specs.
partition
    Splitting one table's rows among providers.
"""
