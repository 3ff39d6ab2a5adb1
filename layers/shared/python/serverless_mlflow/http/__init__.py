"""The edge every feature Lambda stands behind: ``api`` (``build_app``: a feature's operations wired into the resolver
with MLflow's wire conventions, auth around each), ``resolver``, ``observability`` (logs, traces, metrics), what API
Gateway holds (``http_api``), server info, the web UI's static files, calls to sibling functions (``siblings``), and
the items a new table needs before its first request (``bootstrap``, run at deploy and by the local runtime).

May import: core, request, storage, store, auth.
"""
