"""The AI gateway shared by its configuration API and its runtime: stored items, secret sealing, endpoint resolution.

May import: core, request, storage.
"""
