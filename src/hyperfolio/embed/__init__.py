"""Embedders that run in-process and ship their weights: no network, no key."""
