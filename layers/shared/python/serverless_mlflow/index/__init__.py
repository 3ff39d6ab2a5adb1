"""What the stream indexer derives from source items, and the readers that share its shapes: ``derived`` (source item
-> derived items), name search (``fts``, ``trace_text``), RANK items and their walks (``rank_items``, ``ranks``,
``param_ranks``, ``pair_ranks``, ``rank_filters``), the metrics-changed marks (``metric_marks``), run summaries,
trace aggregates (``trace_aggregates`` derives, ``trace_aggregate_writes`` writes, ``trace_deferral`` delays a
young trace's) and trace metrics
(``trace_metrics``: rollups and their query).

May import: core, storage, search, store.
"""
