"""Trace metrics (``traces/metrics``): MLflow's query semantics served from rollups the stream indexer keeps.

``spec`` (what may be asked, MLflow's checks and filter grammar), ``rows`` (the metric rows one trace yields:
the trace, its spans, its assessments), ``summary`` (a mergeable, subtractable summary of values: exact while
small, a log-bucket sketch beyond), ``rollups`` (per experiment and hour: the indexer's side) and ``query``
(the read path: rollups for whole hours, raw rows for partial hours and for what rollups cannot answer).
"""
