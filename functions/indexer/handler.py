"""DynamoDB Streams -> RANK and FTS items. Partial batch failures are reported to Lambda."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from serverless_mlflow import clock
from serverless_mlflow.observability import Observed

from .logic import Outcome, prefetch, process_record, record_watermark

observed = Observed("indexer")
logger, metrics = observed.logger, observed.metrics
# A batch where every record fails is reported like any partial failure (Lambda retries, then the
# on-failure destination takes the poison record); raising would retry the whole batch blindly.
processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


@observed.handler()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records: list[dict[str, Any]] = event.get("Records") or []
    try:
        currents = prefetch(records)
    except Exception:  # a bad record must not stop the others: fall back to per-record reads
        logger.exception("prefetch failed")
        currents = None
    outcomes: list[Outcome] = []
    summarised: set[tuple[str, str]] = set()

    def handle(record: DynamoDBRecord) -> None:
        outcome = process_record(record.raw_event, currents, summarised)
        outcomes.append(outcome)

    response = process_partial_response(event=event, record_handler=handle, processor=processor, context=context)
    failures = len(response.get("batchItemFailures", []))
    indexed = [o for o in outcomes if o.indexed]
    metrics.add_metric(name="RecordsProcessed", unit=MetricUnit.Count, value=len(records) - failures)
    metrics.add_metric(name="RecordsIndexed", unit=MetricUnit.Count, value=len(indexed))
    metrics.add_metric(name="RecordFailures", unit=MetricUnit.Count, value=failures)
    created = [o.created_ms for o in outcomes if o.created_ms is not None]
    if created:
        metrics.add_metric(name="IteratorAgeMs", unit=MetricUnit.Milliseconds, value=max(0, clock.now_millis() - min(created)))
    indexed_times = [o.created_ms for o in indexed if o.created_ms is not None]
    # Only after real indexing work: the watermark item's own stream record must not write it again.
    if indexed_times:
        record_watermark(max(indexed_times))
    if failures:
        logger.warning("stream records failed", extra={"failures": failures, "records": len(records)})
    return response
