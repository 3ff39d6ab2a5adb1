"""DynamoDB Streams -> RANK items, FTS postings, run summaries and digests, trace aggregates. Partial batch
failures are reported to Lambda.

A batch that failed because DynamoDB refused calls for capacity (throttling past botocore's retries) has its failed
records worked again within the invocation, with a growing backoff, while the function's time allows:
Lambda's retries (``RETRY_ATTEMPTS``, then the dead-letter queue) would otherwise be spent in seconds by a
throttling storm, and a dead-lettered record's share of the trace rollups and indexes would be missing until a
reindex. Failures of any other cause are reported at once (a poison record must not hold the shard).

The same function is the event source of the trace deferral queue (``index/trace_deferral.py``): young traces in progress
are aggregated a delay after their first spans, by when most have ended; a message whose traces failed is
reported and SQS delivers it again (after ``maxReceiveCount`` deliveries, to the indexer's dead-letter queue).
"""

from __future__ import annotations

import random
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from serverless_mlflow.core import clock, errors
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.http.observability import Observed
from serverless_mlflow.index import derived, trace_deferral
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY_TYPE

from . import batch
from .logic import record_watermark

observed = Observed("indexer")
logger, metrics = observed.logger, observed.metrics
# Trace aggregates parse spans (protobuf) and trace text: imported by the first batch that carries a trace's items.
trace_aggregates = deferred("serverless_mlflow.index.trace_aggregates")
trace_aggregate_writes = deferred("serverless_mlflow.index.trace_aggregate_writes")
# Spilled spans and archives of trace items the table's TTL removed (boto3's S3 client: loaded on first use).
trace_objects = deferred("serverless_mlflow.index.trace_objects")
archival_rewinds = deferred("serverless_mlflow.index.archival_rewinds")
_TRACE_TYPES = derived.TRACE_AGGREGATE_TYPES | {"trace"}
# Time kept back from the function's for the last attempt's own work and answer (the deployed timeout is 120 s).
CAPACITY_RESERVE_SECONDS = 10.0
CAPACITY_BACKOFF_MAX_SECONDS = 5.0


def _trace_images(record: dict[str, Any]) -> list[dict[str, Any]]:
    ddb = record.get("dynamodb") or {}
    images = [ddb.get(name) for name in ("OldImage", "NewImage")]
    return [table.from_item(image) for image in images if image and image.get(ENTITY_TYPE, {}).get("S") in _TRACE_TYPES]


@observed.handler()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records: list[dict[str, Any]] = event.get("Records") or []
    if trace_deferral.is_deferral_event(records):
        return _aggregate_deferred(records)
    # The batch is worked whole (coalesced per item and per run, batch.py); a record that fails is reported, and
    # Lambda retries from the lowest one reported (ReportBatchItemFailures): the rest is idempotent.
    outcomes, failures = _index_through_throttling(records, context)
    indexed = [o for o in outcomes if o.indexed]
    metrics.add_metric(name="RecordsProcessed", unit=MetricUnit.Count, value=len(records) - len(failures))
    metrics.add_metric(name="RecordsIndexed", unit=MetricUnit.Count, value=len(indexed))
    metrics.add_metric(name="RecordFailures", unit=MetricUnit.Count, value=len(failures))
    created = [o.created_ms for o in outcomes if o.created_ms is not None]
    if created:
        metrics.add_metric(name="IteratorAgeMs", unit=MetricUnit.Milliseconds, value=max(0, clock.now_millis() - min(created)))
    indexed_times = [o.created_ms for o in indexed if o.created_ms is not None]
    # Only after real indexing work: the watermark item's own stream record must not write it again.
    if indexed_times:
        try:
            record_watermark(max(indexed_times))
        except Exception:  # lag reporting only: the batch's work is done and must not be redone for it
            logger.warning("the indexer watermark was not recorded", exc_info=True)
    if failures:
        logger.warning("stream records failed", extra={"failures": len(failures), "records": len(records)})
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failures]}


def _index(records: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
    """(outcomes, failed sequence numbers in stream order) of one pass over the records."""
    result = batch.process(records)
    failures = set(result.failures) | _aggregate_traces(records)
    if any(record.get("eventName") == "REMOVE" for record in records):
        failures |= trace_objects.release(records)
    if any(record.get("eventName") == "INSERT" for record in records):
        failures |= archival_rewinds.rewind(records)
    return result.outcomes, sorted(failures, key=_sequence_order)


def _index_through_throttling(records: list[dict[str, Any]], context: Any) -> tuple[list[Any], list[str]]:
    """``_index``, repeated on the failed records while DynamoDB refused calls for capacity during the last pass
    and the function's time allows another (module docstring)."""
    pending, outcomes, attempt = records, [], 0
    while True:
        refusals = errors.capacity_refusals()
        try:
            done, failures = _index(pending)
        except Exception:
            if errors.capacity_refusals() == refusals:
                raise
            # A step of the whole batch was refused (its reads, its coalesced writes): every record again.
            done, failures = [], [str((r.get("dynamodb") or {}).get("SequenceNumber", "")) for r in pending]
        outcomes.extend(done)
        if not failures or errors.capacity_refusals() == refusals:
            return outcomes, failures
        attempt += 1
        delay = min(CAPACITY_BACKOFF_MAX_SECONDS, 0.1 * 2**attempt) * (0.5 + random.random() / 2)
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if remaining is not None and remaining() / 1000 < delay + CAPACITY_RESERVE_SECONDS:
            return outcomes, failures
        metrics.add_metric(name="CapacityRetries", unit=MetricUnit.Count, value=1)
        time.sleep(delay)
        # Only the failed records again: each pass indexes from the items' current versions (batch.py), so a
        # record retried after a later one of the same item derives the same; Lambda is told what still fails.
        failed = set(failures)
        pending = [r for r in pending if (r.get("dynamodb") or {}).get("SequenceNumber") in failed]


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
    delay = trace_deferral.delay_seconds()
    outcome = trace_aggregate_writes.refresh(touched, defer=delay > 0)
    if outcome.deferred:
        try:
            trace_deferral.send(outcome.deferred, delay)
            metrics.add_metric(name="TracesDeferred", unit=MetricUnit.Count, value=len(outcome.deferred))
        except Exception:
            # Not queued: aggregated in progress now, as without a queue (nothing waits on a message never sent).
            logger.warning("trace deferrals were not sent: aggregating now", exc_info=True)
            now = trace_aggregate_writes.refresh(dict.fromkeys(outcome.deferred, True))
            outcome.changed += now.changed
            outcome.failed |= now.failed
    metrics.add_metric(name="TracesAggregated", unit=MetricUnit.Count, value=outcome.changed)
    return {record["dynamodb"]["SequenceNumber"] for record, traces in named if outcome.failed & traces.keys()}


def _aggregate_deferred(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The deferral queue's messages: their traces refreshed now (never deferred again). Only-new-spans reads
    (``info_changed=False``): a trace aggregated finished meanwhile costs a keys-only Query, not its spans."""
    named = [(record, trace_deferral.traces_of(record)) for record in records]
    traces = {trace_id for _, ids in named for trace_id in ids}
    outcome = trace_aggregate_writes.refresh(dict.fromkeys(traces, False))
    metrics.add_metric(name="DeferredTracesAggregated", unit=MetricUnit.Count, value=outcome.changed)
    failed = [record["messageId"] for record, ids in named if outcome.failed.intersection(ids)]
    if failed:
        logger.warning("deferred trace aggregates failed", extra={"traces": len(outcome.failed), "messages": len(failed)})
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


def _traces_of(record: dict[str, Any]) -> dict[str, bool]:
    """The traces a record touches -> whether more than new spans changed (an info write, or a span overwritten
    or removed): a trace only given new spans it already counts is not read again (``trace_aggregates.load``)."""
    traces = trace_aggregates.traces_of(_trace_images(record))
    return traces if record.get("eventName") == "INSERT" else dict.fromkeys(traces, True)


def _sequence_order(sequence: str) -> tuple[int, str]:
    return (int(sequence), sequence) if sequence.isdigit() else (0, sequence)
