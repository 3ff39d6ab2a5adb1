"""A trace's stored spans as OTLP messages: each span item's payload (inline, or spilled to S3) decoded, in
start-time order; an archived trace's from its archive (``trace_archive``). Reads, span searches, trace data and
metrics all decode spans through here."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from serverless_mlflow.storage import s3
from serverless_mlflow.store import trace_archive
from serverless_mlflow.store import traces as store


def _span(item: dict[str, Any]) -> Span:
    if item.get("spill_key"):
        payload = s3.client().get_object(Bucket=s3.bucket_name(), Key=item["spill_key"])["Body"].read()
    else:
        payload = bytes(item["span"])
    span = Span()
    span.ParseFromString(payload)
    return span


def stored_spans(info: dict[str, Any], items: list[dict[str, Any]] | None = None) -> list[Span]:
    """The trace's stored spans (``items``, else read) as OTLP messages, in start-time order."""
    if trace_archive.is_archived(info):
        return trace_archive.archived_spans(info)
    if items is None:
        items = store.span_items(info["experiment_id"], info["trace_id"])
    items = sorted(items, key=lambda i: (i.get("start_time_unix_nano", 0), store.span_id_of(i)))
    return [_span(item) for item in items]
