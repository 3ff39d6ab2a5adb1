"""Entity data access shared by several features (experiments are read by runs, artifacts, ...).

Also holds a run's metric items (``run_metrics``, ``metric_packs``) and logging order, run writes shared by the
features that create runs, random names, artifact locations and listings, assessments and span content, registered
scorers (``scorer_refs``, ``scorer_payload``), the job kinds, registry events and their outbox, and the server-wide
settings.

May import: core, request, storage, search.
"""
