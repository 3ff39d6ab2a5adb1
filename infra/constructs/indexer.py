"""The stream indexer: table stream -> ``functions/indexer`` -> derived items (RANK, FTS, summaries, digests).

Lambda event filtering passes only records of the source entities the indexer derives from
(``derived.STREAM_TYPES``; removals: ``derived.REMOVAL_STREAM_TYPES``): the indexer's own writes never re-trigger
indexing, and the bulk of the table's writes (metric history, ...) cost no invocations. A batching window lets a
training loop's points gather into one batch, which the indexer coalesces per item and per run (one RANK move,
one summary, one metrics marker per run and batch, not per point). Failed records are bisected and retried a
bounded number of times, then their stream coordinates go to an SQS queue.

The indexer also reads its trace deferral queue (``serverless_mlflow.index.trace_deferral``): young traces in progress are
aggregated after a delay, so a trace that ends within it is aggregated once. A message that keeps failing goes
to the same dead-letter queue (its body names the traces: sent to the deferral queue again, it has them aggregated).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.functions import ServerlessFunction, SharedResources, feature_code
from serverless_mlflow.index import derived, trace_deferral
from serverless_mlflow.storage import schema

INDEXER = "indexer"
RETRY_ATTEMPTS = 5
MAX_RECORD_AGE = Duration.days(1)
# Records per invocation at most (and 6 MB: the mapping cuts a batch at Lambda's payload limit). At production rates
# a shard's batches are full: traces of one batch share their rollup items' writes (a transaction packs up to 90
# items), so a batch of 1,000 records (about 75 10-span traces) costs fewer units per trace than ten of 100 (scenario
# (c) with full batches: 47.1 against 49.9 units per trace, rollups 5.3 against 8.1) and works them faster per record;
# the slowest such batch took 15 s on a loaded 2-core box, against the 120 s timeout. ``LOAD_WINDOW`` (traces read
# at once, trace_aggregate_writes) holds a whole batch's.
BATCH_SIZE = 1000
# Records gather for up to this long (or BATCH_SIZE records) before an invocation: searches stay exact meanwhile
# (LSI5 flags, metrics markers), and a run logging every step is indexed once per window instead of per point.
BATCHING_WINDOW_SECONDS = 1
INDEXER_TIMEOUT = Duration.seconds(120)
# One concurrent invocation per stream shard (parallelization factor 1): reserved so API traffic cannot starve it.
INDEXER_CONCURRENCY = 20
# Deliveries of a deferral message before SQS moves it to the dead-letter queue.
DEFERRAL_MAX_RECEIVES = 5
# Deferral messages per invocation (each names the young traces of one stream batch) and the invocations at once
# (SQS's minimum: the work is light, and the reserved concurrency is the stream shards').
DEFERRAL_BATCH_SIZE = 10
DEFERRAL_CONCURRENCY = 2


def source_entity_types() -> list[str]:
    return sorted(derived.STREAM_TYPES)


def removal_source_entity_types() -> list[str]:
    return sorted(derived.REMOVAL_STREAM_TYPES)


def stream_filters() -> list[dict[str, Any]]:
    """Keep a record only if its item is a source entity (filters are OR-ed: a record passes if one matches).

    INSERT and MODIFY carry a NewImage; REMOVE carries only an OldImage. An item's entity_type never
    changes (it is part of what the key means), so checking the image that exists is enough.
    """
    source = {schema.ENTITY_TYPE: {"S": source_entity_types()}}
    removed = {schema.ENTITY_TYPE: {"S": removal_source_entity_types()}}
    return [
        lambda_.FilterCriteria.filter({"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": source}}),
        lambda_.FilterCriteria.filter({"eventName": ["REMOVE"], "dynamodb": {"OldImage": removed}}),
    ]


class StreamIndexer(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, shared: SharedResources) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.function = ServerlessFunction(
            self,
            "Indexer",
            name=INDEXER,
            code=feature_code(INDEXER),
            handler=f"{INDEXER}.handler.lambda_handler",
            shared=shared,
            memory_size=shared.config.indexer_memory_mb,
            timeout=INDEXER_TIMEOUT,
            description="mlflow-serverless stream indexer (derived RANK/FTS items)",
            reserved_concurrency=shared.config.reserved(INDEXER_CONCURRENCY),
        )
        self.deferral_queue = sqs.Queue(
            self,
            "TraceDeferrals",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(4),
            # At least the function's timeout (Lambda requires it): a message is not delivered again while an
            # invocation still works on it; a failed one comes back after this.
            visibility_timeout=Duration.seconds(INDEXER_TIMEOUT.to_seconds() + 30),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=DEFERRAL_MAX_RECEIVES),
        )
        self.function.function.add_environment(trace_deferral.QUEUE_URL, self.deferral_queue.queue_url)
        self.function.function.add_environment(trace_deferral.DELAY, str(trace_deferral.DEFAULT_DELAY_SECONDS))
        self.deferral_queue.grant_send_messages(self.function.role)
        self.event_source = sources.DynamoEventSource(
            shared.table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=BATCH_SIZE,
            max_batching_window=Duration.seconds(BATCHING_WINDOW_SECONDS),
            # The handler reports failed records individually; bisecting isolates a poison record.
            report_batch_item_failures=True,
            bisect_batch_on_error=True,
            retry_attempts=RETRY_ATTEMPTS,
            max_record_age=MAX_RECORD_AGE,
            on_failure=sources.SqsDlq(self.dead_letter_queue),
            filters=stream_filters(),
        )
        self.function.alias.add_event_source(self.event_source)
        self.deferral_source = sources.SqsEventSource(
            self.deferral_queue,
            batch_size=DEFERRAL_BATCH_SIZE,
            report_batch_item_failures=True,
            max_concurrency=DEFERRAL_CONCURRENCY,
        )
        self.function.alias.add_event_source(self.deferral_source)

    def deferral_source_node(self) -> Construct:
        """The deferral queue's event source mapping (what cdk-nag names)."""
        return next(c for c in self.function.alias.node.children if c.node.id.startswith("SqsEventSource"))
