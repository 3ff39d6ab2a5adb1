"""A stored span as MLflow's span dict (``Span.to_dict``) and as the content text its SQL store searches.

Spans are stored as OTLP protobuf; MLflow keeps each span's ``to_dict()`` as JSON (``spans.content``) and
``trace.text`` / ``span.content`` filters run ``LIKE`` on that text. The same rendering serves traces.json
(the UI's download), the indexer's content signatures and the exact check of search candidates, so they agree.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

REQUEST_ID_ATTRIBUTE = "mlflow.traceRequestId"
_STATUS_NAMES = {
    Status.STATUS_CODE_UNSET: "STATUS_CODE_UNSET",
    Status.STATUS_CODE_OK: "STATUS_CODE_OK",
    Status.STATUS_CODE_ERROR: "STATUS_CODE_ERROR",
}


def python_value(any_value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as MLflow decodes it (``_decode_otel_proto_anyvalue``): lists, dicts, scalars."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [python_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: python_value(kv.value) for kv in any_value.kvlist_value.values}
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
    attributes = {kv.key: python_value(kv.value) for kv in link.attributes}
    return {
        "trace_id": "tr-" + link.trace_id.hex().rjust(32, "0"),
        "span_id": link.span_id.hex().rjust(16, "0"),
        "attributes": attributes or None,
    }


def span_dict(span: Span, trace_id: str, *, with_kind: bool = True) -> dict[str, Any]:
    """``Span.to_dict``: base64 ids, attribute values JSON-dumped as ``Span.from_otel_proto`` does.

    ``with_kind``: mlflow 3.18 writes the span kind (traces.json); the installed 3.17 SQL store's
    ``spans.content`` has no ``kind`` key, so the searched content leaves it out.
    """
    attributes = {kv.key: json.dumps(python_value(kv.value), ensure_ascii=False) for kv in span.attributes}
    attributes[REQUEST_ID_ATTRIBUTE] = json.dumps(trace_id)
    head = {
        "trace_id": _b64(span.trace_id),
        "span_id": _b64(span.span_id),
        "parent_span_id": _b64(span.parent_span_id) if span.parent_span_id else None,
        "name": span.name,
    }
    if with_kind:
        head["kind"] = _kind(span)
    return {
        **head,
        "start_time_unix_nano": span.start_time_unix_nano,
        "end_time_unix_nano": span.end_time_unix_nano,
        "events": [
            {"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": {kv.key: python_value(kv.value) for kv in e.attributes}}
            for e in span.events
        ],
        "status": {"code": _STATUS_NAMES.get(span.status.code, "STATUS_CODE_UNSET"), "message": span.status.message},
        "attributes": attributes,
        "links": [_link(link) for link in span.links],
    }


def content(span: Span, trace_id: str) -> str:
    """``spans.content``: the span dict as MLflow's SQL store writes it (non-ASCII kept, default separators)."""
    return json.dumps(span_dict(span, trace_id, with_kind=False), ensure_ascii=False)


def parse(payload: bytes) -> Span:
    span = Span()
    span.ParseFromString(payload)
    return span
