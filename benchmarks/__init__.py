"""Runnable studies that write JSON results and PNG plots to ``benchmarks/results``."""
