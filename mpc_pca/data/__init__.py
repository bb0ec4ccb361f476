"""Data input at the edge: files, bundled data sets, row partitions among providers.

Modules
-------
tables
    The one reader of a provider's table (CSV, compressed or not, or
    Parquet): opens it and yields its rows in checked blocks, the whole file
    at once or in row chunks, into named columns.
cells
    The rules every block is read by: header detection, delimiter sniffing,
    encodings, numbers, missing and non-finite cells.
streaming
    A provider's table as a chunked part for PPPCA: its statistics in one
    pass of row chunks, on this host or on a Dask cluster.
dask_client
    The connection to a provider's Dask scheduler, bounded by ``connect_timeout``.
inputs
    Resolving the data specs (one file per provider, a directory, a glob, or one
    data set split among ``parties`` simulated providers) into one table per provider.
plink_files, plink, snp_alignment
    PLINK 1 genotypes (``.bed``/``.bim``/``.fam``): the fileset found and
    checked, the dosages read in row chunks with missing calls imputed, and
    the sites' SNPs aligned by identifier (``pip install 'mpc-pca[genotype]'``).
genotype_part
    A ``.bed`` file as a chunked part for PPPCA, streamed ``chunk_rows``
    individuals at a time (a party whose data is ``site.bed``).
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
