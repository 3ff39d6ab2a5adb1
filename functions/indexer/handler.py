"""DynamoDB Streams -> RANK items, FTS postings, run summaries and digests, trace aggregates. Partial batch
failures are reported to Lambda."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from serverless_mlflow import clock, derived, table
from serverless_mlflow.deferred import deferred
from serverless_mlflow.observability import Observed
from serverless_mlflow.schema import ENTITY_TYPE

from . import batch
from .logic import record_watermark

observed = Observed("indexer")
logger, metrics = observed.logger, observed.metrics
# Trace aggregates parse spans (protobuf) and trace text: imported by the first batch that carries a trace's items.
trace_aggregates = deferred("serverless_mlflow.trace_aggregates")
_TRACE_TYPES = derived.TRACE_AGGREGATE_TYPES | {"trace"}


def _trace_images(record: dict[str, Any]) -> list[dict[str, Any]]:
    ddb = record.get("dynamodb") or {}
    images = [ddb.get(name) for name in ("OldImage", "NewImage")]
    return [table.from_item(image) for image in images if image and image.get(ENTITY_TYPE, {}).get("S") in _TRACE_TYPES]


@observed.handler()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records: list[dict[str, Any]] = event.get("Records") or []
    # The batch is worked whole (coalesced per item and per run, batch.py); a record that fails is reported, and
    # Lambda retries from the lowest one reported (ReportBatchItemFailures): the rest is idempotent.
    result = batch.process(records)
    # Per-trace aggregates (metric rollups, content signatures) are rebuilt once per trace of the batch. Every
    # step is replay-safe: on a failure the batch is retried whole.
    images = [image for record in records for image in _trace_images(record)]
    if images and (touched := trace_aggregates.traces_of(images)):
        metrics.add_metric(name="TracesAggregated", unit=MetricUnit.Count, value=trace_aggregates.refresh(touched))
    failures = sorted(set(result.failures), key=_sequence_order)
    indexed = [o for o in result.outcomes if o.indexed]
    metrics.add_metric(name="RecordsProcessed", unit=MetricUnit.Count, value=len(records) - len(failures))
    metrics.add_metric(name="RecordsIndexed", unit=MetricUnit.Count, value=len(indexed))
    metrics.add_metric(name="RecordFailures", unit=MetricUnit.Count, value=len(failures))
    created = [o.created_ms for o in result.outcomes if o.created_ms is not None]
    if created:
        metrics.add_metric(name="IteratorAgeMs", unit=MetricUnit.Milliseconds, value=max(0, clock.now_millis() - min(created)))
    indexed_times = [o.created_ms for o in indexed if o.created_ms is not None]
    # Only after real indexing work: the watermark item's own stream record must not write it again.
    if indexed_times:
        record_watermark(max(indexed_times))
    if failures:
        logger.warning("stream records failed", extra={"failures": len(failures), "records": len(records)})
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failures]}


def _sequence_order(sequence: str) -> tuple[int, str]:
    return (int(sequence), sequence) if sequence.isdigit() else (0, sequence)
