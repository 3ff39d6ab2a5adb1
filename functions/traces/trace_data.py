"""``get-trace-artifact`` (the UI's download of a trace's data): ``{"spans": [...]}`` as MLflow writes traces.json.

Spans stored here are turned from OTLP into MLflow's span dict (``Span.to_dict``: base64 ids, attribute values
JSON-dumped as ``Span.from_otel_proto`` does). A trace whose spans are only in its traces.json artifact (older
clients) is answered with a redirect to the artifacts route that serves that file.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from serverless_mlflow import artifact_locations
from serverless_mlflow.errors import MlflowError, not_found
from serverless_mlflow.span_content import span_dict
from serverless_mlflow.store import traces as store

from . import read

TRACE_DATA_FILE = "traces.json"
ARTIFACTS_ROUTE = "/api/2.0/mlflow-artifacts/artifacts"


def trace_data(request_id: str | None) -> bytes | str:
    """The trace data JSON, or the artifacts route serving the trace's traces.json (spans stored as an artifact)."""
    if not request_id:
        raise MlflowError('Request must include the "request_id" query parameter.', "BAD_REQUEST")
    info = store.get_info_item(request_id)
    tags = info.get("tags") or {}
    if tags.get(store.SPANS_LOCATION_TAG) == store.TRACKING_STORE:
        spans = [span_dict(span, request_id) for span in read.stored_spans(info)]
        return json.dumps({"spans": spans}, ensure_ascii=False).encode("utf-8")
    relative = artifact_locations.relative_path(tags.get(store.ARTIFACT_LOCATION_TAG))
    if relative is None:
        raise not_found(f"Trace data for trace '{request_id}' is not stored by this server.")
    # The artifacts feature owns the artifact prefix (least privilege): send the caller there.
    return f"{ARTIFACTS_ROUTE}/{quote(relative)}/{TRACE_DATA_FILE}"
