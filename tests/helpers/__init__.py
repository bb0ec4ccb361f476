"""Shared test helpers: reference oracles and the scripts multi-process tests start as parties."""
