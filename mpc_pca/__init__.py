"""Privacy-preserving and differentially private PCA over horizontally partitioned data."""

from mpc_pca.pppca import PPPCA

__all__ = ["PPPCA"]
