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
trace_aggregate_writes = deferred("serverless_mlflow.trace_aggregate_writes")
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
    failures = set(result.failures) | _aggregate_traces(records)
    failures = sorted(failures, key=_sequence_order)
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


def _aggregate_traces(records: list[dict[str, Any]]) -> set[str]:
    """Per-trace aggregates (metric rollups, content signatures), rebuilt once per trace of the batch; the
    sequence numbers of the records of the traces that failed (every other trace is written: replay-safe)."""
    named = [(record, _traces_of(record)) for record in records]
    touched: dict[str, bool] = {}
    for _, traces in named:
        for trace_id, info_changed in traces.items():
            touched[trace_id] = touched.get(trace_id, False) or info_changed
    if not touched:
        return set()
    outcome = trace_aggregate_writes.refresh(touched)
    metrics.add_metric(name="TracesAggregated", unit=MetricUnit.Count, value=outcome.changed)
    return {record["dynamodb"]["SequenceNumber"] for record, traces in named if outcome.failed & traces.keys()}


def _traces_of(record: dict[str, Any]) -> dict[str, bool]:
    """The traces a record touches -> whether more than new spans changed (an info write, or a span overwritten
    or removed): a trace only given new spans it already counts is not read again (``trace_aggregates.load``)."""
    traces = trace_aggregates.traces_of(_trace_images(record))
    return traces if record.get("eventName") == "INSERT" else dict.fromkeys(traces, True)


def _sequence_order(sequence: str) -> tuple[int, str]:
    return (int(sequence), sequence) if sequence.isdigit() else (0, sequence)
