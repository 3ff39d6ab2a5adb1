"""DynamoDB Streams -> RANK items, FTS postings, run summaries and digests. Partial batch failures are reported to Lambda."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from serverless_mlflow import clock
from serverless_mlflow.observability import Observed

from . import batch
from .logic import record_watermark

observed = Observed("indexer")
logger, metrics = observed.logger, observed.metrics


@observed.handler()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records: list[dict[str, Any]] = event.get("Records") or []
    # The batch is worked whole (coalesced per item and per run, batch.py); a record that fails is reported, and
    # Lambda retries from the lowest one reported (ReportBatchItemFailures): the rest is idempotent.
    result = batch.process(records)
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
