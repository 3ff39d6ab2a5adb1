"""The ``issue_trace`` items a trace info implies (kept by the stream indexer, counted by ``get_issue``).

Apart from the issues store so the indexer derives them without importing the issue routes' search grammar.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.storage.schema import entity

ISSUE_TRACE = entity("issue_trace")


def issue_ids(trace: dict[str, Any]) -> set[str]:
    """The issues the trace's issue-reference assessments name (the reference's assessment name is the issue id)."""
    found = set()
    for stored in (trace.get("assessments") or {}).values():
        assessment = json.loads(stored)
        if "issue" in assessment and assessment.get("assessment_name"):
            found.add(assessment["assessment_name"])
    return found


def trace_links(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """One item per issue the trace's issue-reference assessments name, valid or not, as MLflow counts them."""
    values = {"trace_id": trace["trace_id"], "experiment_id": trace.get("experiment_id")}
    return [ISSUE_TRACE.item({**values, "issue_id": i}, issue_id=i, trace_id=trace["trace_id"]) for i in sorted(issue_ids(trace))]
