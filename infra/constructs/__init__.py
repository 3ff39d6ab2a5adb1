"""Constructs of the stack, one concern each (table, layer, functions, API, bucket, indexer, bootstrap)."""
