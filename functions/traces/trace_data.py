"""``get-trace-artifact`` (the UI's download of a trace's data): ``{"spans": [...]}`` as MLflow writes traces.json.

Spans stored here are turned from OTLP into MLflow's span dict (``Span.to_dict``: base64 ids, attribute values
JSON-dumped as ``Span.from_otel_proto`` does). A trace whose spans are only in its traces.json artifact (older
clients) is answered with a redirect to the artifacts route that serves that file.
"""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

from serverless_mlflow.core.errors import ATTRIBUTE_NOT_FOUND, MlflowError, not_found
from serverless_mlflow.store import artifact_locations, trace_archive
from serverless_mlflow.store import traces as store
from serverless_mlflow.store.span_content import span_dict

from . import span_decoding

TRACE_DATA_FILE = "traces.json"
ARTIFACTS_ROUTE = "/api/2.0/mlflow-artifacts/artifacts"


def trace_data(request_id: str | None) -> bytes | str:
    """The trace data JSON, or the artifacts route serving the trace's traces.json (spans stored as an artifact)."""
    if not request_id:
        raise MlflowError('Request must include the "request_id" query parameter.', "BAD_REQUEST")
    info = store.get_info_item(request_id)
    tags = store.tags_of(info)
    # Archived spans are read back from the archive by the server, as MLflow's handler does for ARCHIVE_REPO.
    if tags.get(store.SPANS_LOCATION_TAG) in (store.TRACKING_STORE, trace_archive.ARCHIVE_REPO):
        spans = [span_dict(span, request_id) for span in span_decoding.stored_spans(info)]
        return json.dumps({"spans": spans}, ensure_ascii=False).encode("utf-8")
    return f"{_artifacts_of(request_id, tags)}/{TRACE_DATA_FILE}"


def attachment(request_id: str | None, path: str) -> str:
    """``get-trace-artifact`` with ``path`` (3.17+): a trace attachment, the bytes of a binary span input or output
    (an image, a PDF) the client uploaded to ``attachments/<uuid>`` under the trace's artifact location. Checked
    as MLflow's handler does (request id, ``validate_path_is_safe``, a canonical UUID, the trace) and answered with
    the artifacts route serving that file."""
    if not request_id:
        raise MlflowError('Request must include the "request_id" query parameter.', "BAD_REQUEST")
    artifact_locations.safe_relative_path(path)
    decoded = artifact_locations.decoded_path(path)
    try:
        canonical = str(uuid.UUID(decoded)) == decoded
    except ValueError:
        canonical = False
    if not canonical:
        raise MlflowError(
            f"Invalid attachment path: '{decoded}'. Attachment path must be a valid UUID.",
            "INVALID_PARAMETER_VALUE",
            error_class=ATTRIBUTE_NOT_FOUND,
        )
    tags = store.tags_of(store.get_info_item(request_id))
    return f"{_artifacts_of(request_id, tags)}/attachments/{decoded}"


def _artifacts_of(request_id: str, tags: dict[str, str]) -> str:
    relative = artifact_locations.relative_path(tags.get(store.ARTIFACT_LOCATION_TAG))
    if relative is None:
        raise not_found(f"Trace data for trace '{request_id}' is not stored by this server.")
    # The artifacts feature owns the artifact prefix (least privilege): send the caller there.
    return f"{ARTIFACTS_ROUTE}/{quote(relative)}"
