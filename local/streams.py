"""The local stand-in for Lambda's DynamoDB-stream event source mapping.

It reads every shard of the table's stream in order, parents before children, and hands the records to the
indexer as the stream events Lambda delivers. Like the event source mapping it keeps, per shard, the
sequence number of the last record it delivered (its checkpoint), so that

* an iterator that expired (DynamoDB Streams expires them after 15 minutes) is re-acquired
  ``AFTER_SEQUENCE_NUMBER`` the checkpoint, and nothing is skipped or lost;
* shards that close (the stream rolls shards over every few hours) are read to their end, then their
  children are found with ``DescribeStream`` and read from their start;
* a restart picks up where the last run stopped: checkpoints are saved to a small JSON file per stream
  (``STREAM_CHECKPOINT_DIR``), the stream ARN naming the table generation.

A record may be delivered twice (after a crash between delivery and checkpoint): the indexer is idempotent.
Records the indexer keeps failing on are retried (with the deployed mapping's retry count), then
dead-lettered, and the shard moves on. Like the deployed mapping's filter criteria, ``keep`` drops records
the indexer has no use for before it is invoked (their checkpoint still advances).

A sync drain runs before every write is answered, so it is kept cheap (see docs/performance.md):

* a shard is read to its current end (an empty page) before the records read are delivered, so the stream
  records of the indexer's own writes are left for the next drain (which skips them with the next write's
  records) instead of costing another GetRecords now. With ``complete_pages`` (the local runtime's engine,
  DynamoDB Local, answers GetRecords with every record there is up to ``Limit``, whatever their size), a
  page shorter than the limit is that end too: one GetRecords per shard and drain;
* iterators are kept between drains (``NextShardIterator``); a new one is only taken after an expiry, a
  failed drain, or a restart (``AFTER_SEQUENCE_NUMBER`` the last record read or delivered);
* ``DescribeStream`` is asked again only when the shard list can have changed: a shard was read to its end
  and no child of it is listed (it is asked again in the same drain, so the child's records are read now),
  the list has no open shard, a drain failed, or ``DESCRIBE_MAX_AGE_SECONDS`` passed;
* the checkpoint file is written once per drain, and only when a checkpoint moved;
* ``catch_up`` (the runtime's sync drain) returns at once when a drain that started after the call finished
  meanwhile: concurrent writers waiting for the lock share one drain.

The records' ``ApproximateCreationDateTime`` is what the indexer's ``IteratorAgeMs`` is measured from. DynamoDB
Local truncates it to the minute (an age of up to 60 s on a synchronous indexer), so the follower raises it to
the latest time the record is known not to have existed: the last GetRecords that found its shard caught up,
or, given ``written_since``, the first write of the invocations still waiting for the indexer (the local
runtime knows them). The age reported is then the real delay, give or take a request.

Memory stays bounded however long it runs: one small state per shard the stream still lists (aged-out
shards are forgotten) and the most recent dead letters only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from serverless_mlflow.index import derived
from serverless_mlflow.storage import schema, table

log = logging.getLogger("serverless_mlflow.local")

# One invocation plus the deployed mapping's retries (RETRY_ATTEMPTS in infra/constructs/indexer.py).
MAX_ATTEMPTS = 6
RETRY_BACKOFF_SECONDS = 0.05  # doubled per retry: 1.55 s in all before a record is dead-lettered
PAGE_LIMIT = 1000
BATCH_SIZE = 1000  # records per indexer invocation, as deployed (BATCH_SIZE in infra/constructs/indexer.py)
# How long records gather before an invocation, as deployed (BATCHING_WINDOW_SECONDS in infra/constructs/indexer.py):
# the runtime's asynchronous mode polls the stream at this interval (sync mode drains before each write's answer).
BATCHING_WINDOW_SECONDS = 1.0
REGION = "us-east-1"
DEAD_LETTERS_KEPT = 1000
MAX_EXPIRED_IN_A_ROW = 3
# Shards only appear when one closes (noticed when it is read to its end); this bounds how long an
# unforeseen change of the shard list (an engine that behaves otherwise) could go unseen.
DESCRIBE_MAX_AGE_SECONDS = 60.0

Deliver = Callable[[list[dict[str, Any]]], dict[str, Any] | None]
# Given a record as GetRecords returns it (eventName, dynamodb.NewImage/OldImage: the keys of Lambda's event).
Keep = Callable[[dict[str, Any]], bool]
# The epoch seconds before which no record not yet read can have been written (None: unknown).
WrittenSince = Callable[[], float | None]


@dataclass
class ShardState:
    last_sequence: str | None = None
    closed_and_read: bool = False
    iterator: str | None = field(default=None, compare=False)
    # Epoch seconds of the last GetRecords that found the shard caught up: later records were written after it.
    caught_up_at: float | None = field(default=None, compare=False)


class StreamFollower:
    def __init__(
        self,
        streams_client: Any,
        stream_arn: str,
        deliver: Deliver,
        checkpoint_dir: Path | None = None,
        keep: Keep | None = None,
        complete_pages: bool = False,
        written_since: WrittenSince | None = None,
        consumer: str = "",
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.client = streams_client
        # Records per indexer invocation: the deployed mapping's, unless a caller (a bulk load) raises it as the
        # mapping's BatchSize allows (up to 10,000; the indexer coalesces one invocation's writes).
        self.batch_size = batch_size
        self.written_since = written_since
        self.stream_arn = stream_arn
        self.deliver = deliver
        self.keep = keep
        # False: only an empty page says a shard is caught up (DynamoDB Streams may answer a short page with
        # more to come, e.g. at its 1 MB page limit). True: so does any page shorter than PAGE_LIMIT.
        self.complete_pages = complete_pages
        # Deployed, the DLQ holds the failed batches' coordinates for 14 days; locally the latest ones are kept.
        self.dead_letters: deque[dict[str, Any]] = deque(maxlen=DEAD_LETTERS_KEPT)
        self.dead_lettered = 0
        self.delivered = 0
        self.invocations = 0  # calls of ``deliver`` (the indexer's invocations, retries included)
        self.drains = 0  # drains started (numbered under the lock)
        self._caught_up_through = 0  # the number of the latest drain that finished without failing
        # Epoch seconds at which the latest drain that found nothing to deliver started: every record written
        # before then had been delivered (or dead-lettered). A backlog is empty once this passes the last write.
        self.idle_since: float | None = None
        self._lock = threading.Lock()
        self._listing: list[dict[str, Any]] | None = None  # DescribeStream's shards, while still current
        self._listed_at = 0.0
        self._saved: str | None = None  # the checkpoint file's content as last written or read
        # One checkpoint file per stream and consumer (the indexer is the unnamed one; the table's stream has
        # a second reader, the webhook events function, as deployed).
        stem = hashlib.sha256(stream_arn.encode()).hexdigest()[:24] + (f"-{consumer}" if consumer else "")
        self._checkpoint_file = checkpoint_dir / f"{stem}.json" if checkpoint_dir else None
        self.shards: dict[str, ShardState] = self._load()

    # --- checkpoints ------------------------------------------------------------------------
    def _load(self) -> dict[str, ShardState]:
        if not self._checkpoint_file or not self._checkpoint_file.exists():
            return {}
        try:
            text = self._checkpoint_file.read_text()
            saved = json.loads(text)
        except (OSError, ValueError):
            log.warning("ignoring unreadable stream checkpoint %s", self._checkpoint_file)
            return {}
        if saved.get("stream_arn") != self.stream_arn:
            return {}
        self._saved = text
        return {shard: ShardState(s.get("last_sequence"), bool(s.get("closed_and_read"))) for shard, s in saved["shards"].items()}

    def _save(self) -> None:
        """Write the checkpoints if one moved since the file was last written (at the end of each drain)."""
        if not self._checkpoint_file:
            return
        payload = {
            "stream_arn": self.stream_arn,
            "shards": {k: {"last_sequence": s.last_sequence, "closed_and_read": s.closed_and_read} for k, s in self.shards.items()},
        }
        text = json.dumps(payload)
        if text == self._saved:
            return
        self._checkpoint_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._checkpoint_file.with_suffix(".tmp")
        temporary.write_text(text)
        temporary.replace(self._checkpoint_file)
        self._saved = text

    # --- reading ----------------------------------------------------------------------------
    def drain(self) -> int:
        """Deliver every record available now; returns how many were delivered."""
        with self._lock:
            return self._drain_locked()

    def catch_up(self) -> int:
        """Deliver at least every record written before this call (a sync write's wait); returns how many
        this call delivered. A drain that started after the call and finished without failing read the
        stream after the caller's writes: waiting for it is enough."""
        called_after = self.drains  # read before the lock: any drain numbered higher started after this call
        with self._lock:
            if self._caught_up_through > called_after:
                return 0
            return self._drain_locked()

    def _drain_locked(self) -> int:
        self.drains += 1
        number = self.drains
        before = self.delivered
        started = time.time()
        try:
            listing = self._shard_listing()
            while self._read_shards(listing):
                # A shard was read to its end and the listing shows no child of it: its children (where the
                # writes now go) are listed by a new DescribeStream, and read in this same drain.
                listing = self._shard_listing(refresh=True)
        except BaseException:
            self._listing = None  # whatever failed, the next drain starts from a fresh shard list
            raise
        finally:
            self._save()
        self._caught_up_through = number
        if self.delivered == before:
            self.idle_since = started
        return self.delivered - before

    def status(self) -> dict[str, Any]:
        """What a process outside can tell the backlog by (``LOCAL_INDEXER_STATUS_FILE``): records delivered and
        dead-lettered so far, indexer invocations, and ``idle_since``."""
        return {
            "idle_since": self.idle_since,
            "delivered": self.delivered,
            "dead_lettered": self.dead_lettered,
            "invocations": self.invocations,
            "drains": self.drains,
        }

    def _read_shards(self, listing: list[dict[str, Any]]) -> bool:
        """One pass over the listed shards; True if a shard closed whose children are not listed."""
        unlisted_children = False
        parents = {s.get("ParentShardId") for s in listing}
        for shard in self._shards_in_order(listing):
            if self._drain_shard(shard) and shard["ShardId"] not in parents:
                unlisted_children = True
        return unlisted_children

    def _shard_listing(self, refresh: bool = False) -> list[dict[str, Any]]:
        """The stream's shards, described again only when the list may have changed (module docstring)."""
        listing = self._listing
        stale = (
            refresh
            or listing is None
            or time.monotonic() - self._listed_at > DESCRIBE_MAX_AGE_SECONDS
            # No open shard known: new writes go to a shard this listing does not show.
            or all(self.shards.get(s["ShardId"], ShardState()).closed_and_read for s in listing)
        )
        if stale:
            listing = self._describe_shards()
            self._listing, self._listed_at = listing, time.monotonic()
        assert listing is not None
        return listing

    def _describe_shards(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"StreamArn": self.stream_arn}
        while True:
            description = self.client.describe_stream(**kwargs)["StreamDescription"]
            shards.extend(description.get("Shards", []))
            last = description.get("LastEvaluatedShardId")
            if not last:
                return shards
            kwargs["ExclusiveStartShardId"] = last

    def _shards_in_order(self, described: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Open work only, parents before children (a child waits until its parent is read to its end)."""
        known = {s["ShardId"] for s in described}
        for gone in [shard for shard, state in self.shards.items() if shard not in known and state.closed_and_read]:
            del self.shards[gone]  # aged out of the stream (24 h): nothing will ever name it again
        ordered: list[dict[str, Any]] = []
        placed: set[str] = set()
        pending = [s for s in described if not self.shards.get(s["ShardId"], ShardState()).closed_and_read]
        done = {s["ShardId"] for s in described} - {s["ShardId"] for s in pending}
        while pending:
            progressed = False
            for shard in list(pending):
                parent = shard.get("ParentShardId")
                # A parent the stream no longer lists has aged out (24 h): nothing of it is left to read.
                if not parent or parent not in known or parent in done or parent in placed:
                    ordered.append(shard)
                    placed.add(shard["ShardId"])
                    pending.remove(shard)
                    progressed = True
            if not progressed:  # a cycle cannot happen in DynamoDB Streams; do not spin if it did
                ordered.extend(pending)
                break
        return ordered

    def _drain_shard(self, shard: dict[str, Any]) -> bool:
        """Read the shard to its current end, then deliver what was read; True if it closed (read to its end)."""
        shard_id = shard["ShardId"]
        parent = shard.get("ParentShardId")
        if parent and parent in self.shards and not self.shards[parent].closed_and_read:
            return False  # the parent still has records: children must wait (order per item)
        state = self.shards.setdefault(shard_id, ShardState())
        pending: list[dict[str, Any]] = []  # records read and kept, not delivered yet
        read_through = state.last_sequence  # the last record read (kept or not)
        expired_in_a_row = 0
        try:
            while True:
                if state.iterator is None:
                    state.iterator = self._iterator(shard_id, read_through)
                asked_at = time.time()
                # Read before GetRecords: a record it returns was written before that call's end.
                not_before = self._not_before(state)
                try:
                    page = self.client.get_records(ShardIterator=state.iterator, Limit=PAGE_LIMIT)
                except (self.client.exceptions.ExpiredIteratorException, self.client.exceptions.TrimmedDataAccessException):
                    # Expired: idle for over 15 minutes. Trimmed: an old iterator points past the 24 h retention.
                    # Either way a new iterator is taken after the last record read (``_iterator`` handles a
                    # trimmed one).
                    state.iterator = None
                    expired_in_a_row += 1
                    if expired_in_a_row > MAX_EXPIRED_IN_A_ROW:
                        raise  # fresh iterators failing too (a skewed clock?): fail this drain, the next one retries
                    log.info("shard iterator of %s is no longer valid: re-acquiring after %s", shard_id, read_through)
                    continue
                expired_in_a_row = 0
                records = page.get("Records", [])
                # ``keep`` judges the record as GetRecords returns it (the keys Lambda's event has); only the
                # records kept are converted (most records are the indexer's own writes, dropped).
                pending.extend(lambda_stream_record(r, self.stream_arn, not_before) for r in records if self.keep is None or self.keep(r))
                if records:
                    read_through = records[-1]["dynamodb"]["SequenceNumber"]
                state.iterator = page.get("NextShardIterator")
                # Closed, or caught up on an open shard (as of this GetRecords: later records are later writes').
                at_end = state.iterator is None or not records or (self.complete_pages and len(records) < PAGE_LIMIT)
                if at_end:
                    state.caught_up_at = asked_at
                while len(pending) >= self.batch_size or (pending and at_end):
                    batch, pending = pending[: self.batch_size], pending[self.batch_size :]
                    self._deliver(batch)
                    state.last_sequence = batch[-1]["dynamodb"]["SequenceNumber"]
                if not pending:
                    state.last_sequence = read_through  # records dropped by ``keep`` are passed too
                if state.iterator is None:
                    state.closed_and_read = True  # a closed shard, read to its end
                    return True
                if at_end:
                    return False
        except BaseException:
            if pending:
                # Read, not delivered: the next drain takes a new iterator after the checkpoint and reads them again.
                state.iterator = None
            raise

    def _not_before(self, state: ShardState) -> float | None:
        """The latest time before which the records not read yet cannot have been written (module docstring)."""
        bounds = [state.caught_up_at, self.written_since() if self.written_since else None]
        known = [bound for bound in bounds if bound is not None]
        return max(known) if known else None

    def _iterator(self, shard_id: str, after: str | None) -> str:
        """Where the shard's reading resumes: right after ``after`` (the last record read or the checkpoint),
        else at the oldest record kept."""
        if after:
            try:
                return self.client.get_shard_iterator(
                    StreamArn=self.stream_arn,
                    ShardId=shard_id,
                    ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                    SequenceNumber=after,
                )["ShardIterator"]
            except self.client.exceptions.TrimmedDataAccessException:
                # The stream no longer keeps the checkpoint (24 h retention, e.g. after a long stop): what
                # follows it is partly gone too; the oldest record kept is where reading can go on.
                log.warning("stream records of %s after %s were trimmed; continuing at the oldest kept", shard_id, after)
        return self.client.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"
        ]

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        """Lambda's behaviour with ReportBatchItemFailures: retry from the first failure, then dead-letter."""
        pending = records
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                time.sleep(RETRY_BACKOFF_SECONDS * 2 ** (attempt - 1))
            self.invocations += 1
            try:
                result = self.deliver(pending) or {}
            except Exception:
                log.exception("indexer invocation failed")
                result = {"batchItemFailures": [{"itemIdentifier": pending[0]["dynamodb"]["SequenceNumber"]}]}
            failures = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            if not failures:
                self.delivered += len(records)
                return
            first = min((i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failures), default=0)
            pending = pending[first:]
        self.dead_letters.extend(pending)
        self.dead_lettered += len(pending)
        self.delivered += len(records)
        log.error("indexer gave up on %d stream records (dead-lettered)", len(pending))


def is_indexer_source(record: dict[str, Any]) -> bool:
    """The deployed mapping's filter criteria (``stream_filters`` in infra/constructs/indexer.py): only records
    of the source entities reach the indexer; INSERT/MODIFY are judged by their new image, REMOVE by the old."""
    removal = record.get("eventName") == "REMOVE"
    image = record["dynamodb"].get("OldImage" if removal else "NewImage") or {}
    return image.get(schema.ENTITY_TYPE, {}).get("S") in (derived.REMOVAL_STREAM_TYPES if removal else derived.STREAM_TYPES)


def needs_indexing(record: dict[str, Any]) -> bool:
    """What the local runtime delivers: the deployed filter's records, less the MODIFY records the indexer
    causes itself by clearing an item's "not indexed yet" flag. Deployed, a filter cannot tell those apart
    and the indexer skips them (``derived.only_flag_removed``); here skipping them saves an invocation per
    write, with the same outcome."""
    if not is_indexer_source(record):
        return False
    if record.get("eventName") != "MODIFY":
        return True
    images = record["dynamodb"]
    return not derived.only_flag_removed(table.from_item(images.get("OldImage") or {}), table.from_item(images.get("NewImage") or {}))


def lambda_stream_record(record: dict[str, Any], stream_arn: str, not_before: float | None = None) -> dict[str, Any]:
    """A boto3 stream record in the shape Lambda delivers it (epoch seconds, with eventSourceARN); its creation
    time raised to ``not_before`` when the engine's is earlier (DynamoDB Local truncates it to the minute)."""
    dynamodb = dict(record["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        created = created.timestamp()
    if created is not None:
        dynamodb["ApproximateCreationDateTime"] = max(created, not_before) if not_before is not None else created
    out = {k: v for k, v in record.items() if k != "dynamodb"}
    out["dynamodb"] = _to_wire(dynamodb)
    out["eventSourceARN"] = stream_arn
    out.setdefault("eventSource", "aws:dynamodb")
    out.setdefault("awsRegion", REGION)
    return out


def _to_wire(value: Any) -> Any:
    """boto3 hands binary attributes as bytes; Lambda's JSON event carries them base64-encoded."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    return value
