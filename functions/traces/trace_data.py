"""``get-trace-artifact`` (the UI's download of a trace's data): ``{"spans": [...]}`` as MLflow writes traces.json.

Spans stored here are turned from OTLP into MLflow's span dict (``Span.to_dict``: base64 ids, attribute values
JSON-dumped as ``Span.from_otel_proto`` does). A trace whose spans are only in its traces.json artifact (older
clients) is answered with a redirect to the artifacts route that serves that file.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from serverless_mlflow import artifact_locations
from serverless_mlflow.errors import MlflowError, not_found
from serverless_mlflow.store import traces as store

from . import read

TRACE_DATA_FILE = "traces.json"
ARTIFACTS_ROUTE = "/api/2.0/mlflow-artifacts/artifacts"
REQUEST_ID_ATTRIBUTE = "mlflow.traceRequestId"
_STATUS_NAMES = {
    Status.STATUS_CODE_UNSET: "STATUS_CODE_UNSET",
    Status.STATUS_CODE_OK: "STATUS_CODE_OK",
    Status.STATUS_CODE_ERROR: "STATUS_CODE_ERROR",
}


def _value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(any_value.bytes_value).decode("ascii")
    return getattr(any_value, kind)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _kind(span: Span) -> str:
    # mlflow 3.18's Span.to_dict: the OTLP kind's name; unspecified (0) and unknown kinds read as INTERNAL.
    kind = span.kind if Span.SPAN_KIND_INTERNAL <= span.kind <= Span.SPAN_KIND_CONSUMER else Span.SPAN_KIND_INTERNAL
    return Span.SpanKind.Name(kind)


def _link(link: Span.Link) -> dict[str, Any]:
    """mlflow 3.18's ``Link.from_otel_proto(...).to_dict()``: MLflow trace id, hex span id, decoded attributes."""
    attributes = {kv.key: _value(kv.value) for kv in link.attributes}
    return {
        "trace_id": "tr-" + link.trace_id.hex().rjust(32, "0"),
        "span_id": link.span_id.hex().rjust(16, "0"),
        "attributes": attributes or None,
    }


def span_dict(span: Span, trace_id: str) -> dict[str, Any]:
    attributes = {kv.key: json.dumps(_value(kv.value), ensure_ascii=False) for kv in span.attributes}
    attributes[REQUEST_ID_ATTRIBUTE] = json.dumps(trace_id)
    return {
        "trace_id": _b64(span.trace_id),
        "span_id": _b64(span.span_id),
        "parent_span_id": _b64(span.parent_span_id) if span.parent_span_id else None,
        "name": span.name,
        "kind": _kind(span),
        "start_time_unix_nano": span.start_time_unix_nano,
        "end_time_unix_nano": span.end_time_unix_nano,
        "events": [
            {"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": {kv.key: _value(kv.value) for kv in e.attributes}}
            for e in span.events
        ],
        "status": {"code": _STATUS_NAMES.get(span.status.code, "STATUS_CODE_UNSET"), "message": span.status.message},
        "attributes": attributes,
        "links": [_link(link) for link in span.links],
    }


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
