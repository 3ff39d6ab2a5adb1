"""The ground floor every package stands on: MLflow's error contract (``errors``) and input validation with its rules
and messages (``validation``), the one wall clock, parallel I/O, imports deferred to first use, and outbound HTTP to
a URL a user named (``public_url`` checks it as MLflow does, ``checked_http`` checks the peer it connected to).

May import: nothing of the layer.
"""
