"""Archived traces (MLflow 3.17's server-owned trace archival): what marks one, and reading its spans back.

An archived trace keeps its info (tags, metadata, assessments, searchable as before); its spans were moved to
the artifact store as one OTLP ``TracesData`` protobuf, ``traces.pb`` under
``<archival location>/<experiment>/traces/<trace id>/artifacts`` (MLflow's ``TRACE_ARCHIVAL_FILENAME`` and path),
and their items deleted. The info's tags say so as MLflow's do: ``mlflow.trace.spansLocation=ARCHIVE_REPO`` and
``mlflow.trace.archiveLocation=<that artifacts URI>``; the trace's locator carries ``archived`` (the same URI), the
mark every span write is conditioned on, so no span is stored for an archived trace (``ensure_not_archived``).
The pass that archives lives in ``trace_archival``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.storage import s3

SPANS_LOCATION_TAG = "mlflow.trace.spansLocation"
ARCHIVE_LOCATION_TAG = "mlflow.trace.archiveLocation"
ARCHIVAL_FAILURE_TAG = "mlflow.trace.archivalFailure"
ARCHIVE_REPO = "ARCHIVE_REPO"
ARCHIVE_FILENAME = "traces.pb"
# The locator attribute naming the archive (conditions on span writes and on the archival flip read it).
LOCATOR_MARK = "archived"


def is_archived(info: dict[str, Any]) -> bool:
    return (info.get("tags") or {}).get(SPANS_LOCATION_TAG) == ARCHIVE_REPO


def object_key(artifact_uri: str) -> str:
    """The stack bucket's key of the archive under ``artifact_uri`` (``s3://<bucket>/<path>``)."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme != "s3" or parsed.netloc != s3.bucket_name():
        raise MlflowError(f"Trace archive location {artifact_uri!r} is not in this server's bucket.", "INTERNAL_ERROR")
    return f"{parsed.path.strip('/')}/{ARCHIVE_FILENAME}"


def payload(spans: list[Any]) -> bytes:
    """MLflow's archive payload (``spans_to_traces_data_pb``): one ResourceSpans with one ScopeSpans holding the
    spans root first, then by start time and id."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    ordered = sorted(spans, key=lambda s: (1 if s.parent_span_id else 0, s.start_time_unix_nano, s.span_id))
    data = TracesData()
    data.resource_spans.add().scope_spans.add().spans.extend(ordered)
    return data.SerializeToString()


def archived_spans(info: dict[str, Any]) -> list[Any]:
    """The archived trace's spans (OTLP messages, start-time order); none when the payload is gone (MLflow answers
    an archived trace whose payload is missing with no spans)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    uri = (info.get("tags") or {}).get(ARCHIVE_LOCATION_TAG)
    if not uri:
        return []
    try:
        body = s3.client().get_object(Bucket=s3.bucket_name(), Key=object_key(uri))["Body"].read()
    except Exception as error:
        if s3.error_code(error) in ("NoSuchKey", "404"):
            return []
        raise
    data = TracesData()
    data.ParseFromString(body)
    spans = [span for resource in data.resource_spans for scope in resource.scope_spans for span in scope.spans]
    return sorted(spans, key=lambda s: (s.start_time_unix_nano, s.span_id.hex()))


def archived_error(trace_ids: list[str]) -> MlflowError:
    """SqlAlchemyStore.log_spans' refusal (INVALID_STATE, 500 as MLflow's OTLP route answers it)."""
    listed = ", ".join(f"'{trace_id}'" for trace_id in sorted(trace_ids))
    return MlflowError(f"Cannot log spans to archived traces: {listed}.", "INVALID_STATE", status=500)
