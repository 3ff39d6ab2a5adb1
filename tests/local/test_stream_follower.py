"""The local stream follower behaves like Lambda's event source mapping (issue 15): expired iterators are
re-acquired after the checkpoint, closed shards are read to their end before their children, a restart
resumes where the stream was, and a failure to index never fails the client's request.

Real streams come from DynamoDB Local (the session runtime's engine). Where DynamoDB Streams cannot be made
to misbehave on demand (an iterator expires only after 15 minutes, shards roll over every few hours) the
follower talks to a stand-in for the AWS client that raises the real botocore errors.
"""

from __future__ import annotations

import os
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber

from local import streams
from local.streams import StreamFollower
from serverless_mlflow.index import derived
from tests.conftest import unique
from tests.indexer import support as s

pytestmark = pytest.mark.e2e


@pytest.fixture
def stream(server: str):
    with s.private_table(os.environ["DYNAMODB_ENDPOINT_URL"]) as private:
        yield private


def _streams_client() -> Any:
    return boto3.client("dynamodbstreams", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])


class Recorder:
    def __init__(self) -> None:
        self.sequences: list[str] = []

    def __call__(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        self.sequences.extend(r["dynamodb"]["SequenceNumber"] for r in records)
        return {"batchItemFailures": []}


class ExpiringIterators:
    """The real streams client, except that GetRecords answers ExpiredIteratorException when told to."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.expire_next = 0
        self.expired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_records(self, **kwargs: Any) -> Any:
        if self.expire_next:
            self.expire_next -= 1
            self.expired += 1
            error = {"Error": {"Code": "ExpiredIteratorException", "Message": "Iterator expired. The iterator was created at time ..."}}
            raise self._real.exceptions.ExpiredIteratorException(error, "GetRecords")
        return self._real.get_records(**kwargs)


def _all_sequences(stream: s.Stream) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in s.Stream(*_endpoint_and_table(stream)).read_new()]


def _endpoint_and_table(stream: s.Stream) -> tuple[str, str]:
    return os.environ["DYNAMODB_ENDPOINT_URL"], os.environ["TABLE_NAME"]


def test_expired_iterator_is_reacquired_after_the_checkpoint(stream: s.Stream) -> None:
    client = ExpiringIterators(_streams_client())
    recorder = Recorder()
    follower = StreamFollower(client, stream.arn, recorder)
    s.put_experiment("1", "before", 1)
    assert follower.drain() == 2
    # Idle for longer than 15 minutes: the iterator the follower kept has expired.
    s.put_experiment("2", "after expiry", 2)
    s.put_experiment("3", "after expiry too", 3)
    client.expire_next = 2  # twice in a row: re-acquired each time
    assert follower.drain() == 4
    assert client.expired == 2
    assert recorder.sequences == _all_sequences(stream), "every record once, in order, nothing skipped"


def test_expiry_before_any_record_was_read_starts_at_the_oldest(stream: s.Stream) -> None:
    client = ExpiringIterators(_streams_client())
    recorder = Recorder()
    follower = StreamFollower(client, stream.arn, recorder)
    assert follower.drain() == 0
    s.put_experiment("1", "first", 1)
    client.expire_next = 1
    assert follower.drain() == 2
    assert recorder.sequences == _all_sequences(stream)


class CountingReads:
    """The real streams client, counting GetRecords calls."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.get_records_calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def get_records(self, **kwargs: Any) -> Any:
        self.get_records_calls += 1
        return self._real.get_records(**kwargs)


def test_dynamodb_local_pages_are_complete_so_a_sync_drain_reads_once(stream: s.Stream) -> None:
    """The runtime's ``complete_pages``: DynamoDB Local answers GetRecords with every record there is up to the
    Limit, whatever their size (here over 4 MB, where DynamoDB Streams stops a page at 1 MB). If an engine version
    stopped doing so, this fails, and a short page could no longer be taken for the end of a shard."""
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])
    client = CountingReads(_streams_client())
    recorder = Recorder()
    follower = StreamFollower(client, stream.arn, recorder, complete_pages=True)
    s.put_experiment("1", "first", 1)
    assert follower.drain() == 2 and client.get_records_calls == 1
    for i in range(4):
        ddb.put_item(TableName=os.environ["TABLE_NAME"], Item={"pk": {"S": "BIG"}, "sk": {"S": str(i)}, "blob": {"S": "x" * 350_000}})
        ddb.put_item(TableName=os.environ["TABLE_NAME"], Item={"pk": {"S": "BIG"}, "sk": {"S": str(i)}, "blob": {"S": "y" * 350_000}})
    assert follower.drain() == 8 and client.get_records_calls == 2
    assert recorder.sequences == _all_sequences(stream)
    assert follower.drain() == 0 and client.get_records_calls == 3


def test_restart_resumes_from_the_saved_checkpoint(stream: s.Stream, tmp_path: Path) -> None:
    first = Recorder()
    s.put_experiment("1", "one", 1)
    assert StreamFollower(_streams_client(), stream.arn, first, tmp_path).drain() == 2
    s.put_experiment("2", "two", 2)  # written while no follower runs
    second = Recorder()
    assert StreamFollower(_streams_client(), stream.arn, second, tmp_path).drain() == 2
    assert first.sequences + second.sequences == _all_sequences(stream)
    # Another table's stream never reads this checkpoint.
    assert len(list(tmp_path.iterdir())) == 1


# --- shard rollover: a real streams client whose answers are stubbed (botocore Stubber) --------------------
# Neither DynamoDB nor DynamoDB Local closes a shard on demand (they roll over every few hours), so these
# tests give the real client recorded answers in DynamoDB Local's shapes (checked against the service model
# by botocore) and check every request the follower makes, in order.

ARN = "arn:aws:dynamodb:ddblocal:000000000000:table/mlflow-serverless/stream/2026-11-24T00:51:19.232"
PARENT = "shardId-00000001795481479301-c1caedd6"
CHILD = "shardId-00000001795495879301-7d1e0a4b"
GRANDCHILD = "shardId-00000001795510279301-0f3c9e21"


def q(number: int) -> str:
    """A sequence number as DynamoDB Streams writes them (21 digits or more)."""
    return f"{number:021d}"


def _shard(shard_id: str, first: str, last: str | None = None, parent: str | None = None) -> dict[str, Any]:
    shard: dict[str, Any] = {"ShardId": shard_id, "SequenceNumberRange": {"StartingSequenceNumber": first}}
    if last:
        shard["SequenceNumberRange"]["EndingSequenceNumber"] = last
    if parent:
        shard["ParentShardId"] = parent
    return shard


def _description(shards: list[dict[str, Any]], last_evaluated: str | None = None) -> dict[str, Any]:
    description: dict[str, Any] = {
        "StreamArn": ARN,
        "StreamLabel": "2026-11-24T00:51:19.232",
        "StreamStatus": "ENABLED",
        "StreamViewType": "NEW_AND_OLD_IMAGES",
        "TableName": "mlflow-serverless",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "Shards": shards,
    }
    if last_evaluated:
        description["LastEvaluatedShardId"] = last_evaluated
    return {"StreamDescription": description}


def _stream_record(sequence: str) -> dict[str, Any]:
    item = {"pk": {"S": f"E#{sequence}"}, "sk": {"S": "META"}}
    return {
        "eventID": f"event-{sequence}",
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "ddblocal",
        "dynamodb": {
            "Keys": item,
            "NewImage": {**item, "entity_type": {"S": "experiment_entry"}},
            "SequenceNumber": sequence,
            "SizeBytes": 40,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


class RecordedStream:
    """A real ``dynamodbstreams`` client with a botocore Stubber: each expected request and its answer."""

    def __init__(self) -> None:
        self.client = boto3.client("dynamodbstreams", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        self.stubber = Stubber(self.client)
        self.stubber.activate()

    def describe(self, shards: list[dict[str, Any]], page_size: int = 1) -> None:
        """DescribeStream in pages of ``page_size`` shards (the follower must follow LastEvaluatedShardId)."""
        for start in range(0, len(shards), page_size):
            page = shards[start : start + page_size]
            more = start + page_size < len(shards)
            expected: dict[str, Any] = {"StreamArn": ARN}
            if start:
                expected["ExclusiveStartShardId"] = shards[start - 1]["ShardId"]
            self.stubber.add_response("describe_stream", _description(page, page[-1]["ShardId"] if more else None), expected)

    def iterator(self, shard_id: str, iterator: str, after: str | None = None) -> None:
        expected: dict[str, Any] = {"StreamArn": ARN, "ShardId": shard_id}
        expected.update(
            {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after} if after else {"ShardIteratorType": "TRIM_HORIZON"}
        )
        self.stubber.add_response("get_shard_iterator", {"ShardIterator": iterator}, expected)

    def records(self, iterator: str, sequences: list[str], next_iterator: str | None) -> None:
        answer: dict[str, Any] = {"Records": [_stream_record(q) for q in sequences]}
        if next_iterator:
            answer["NextShardIterator"] = next_iterator
        self.stubber.add_response("get_records", answer, {"ShardIterator": iterator, "Limit": ANY})

    def expired(self, iterator: str) -> None:
        self.stubber.add_client_error(
            "get_records",
            service_error_code="ExpiredIteratorException",
            service_message="Iterator expired. The iterator was created at time Mon Nov 24 00:51:19 UTC 2026",
            http_status_code=400,
            expected_params={"ShardIterator": iterator, "Limit": ANY},
        )

    def done(self) -> None:
        self.stubber.assert_no_pending_responses()


@pytest.mark.parametrize("describe_child_first", [False, True])
def test_a_closed_parent_is_read_to_its_end_before_its_child(describe_child_first: bool, tmp_path: Path) -> None:
    stream = RecordedStream()
    parent = _shard(PARENT, q(100), q(102))
    child = _shard(CHILD, q(300), parent=PARENT)
    stream.describe([child, parent] if describe_child_first else [parent, child])
    stream.iterator(PARENT, "it-p0")
    stream.records("it-p0", [q(100), q(101)], "it-p1")
    stream.records("it-p1", [q(102)], None)  # no next iterator: the parent is closed and read to its end
    stream.iterator(CHILD, "it-c0")
    stream.records("it-c0", [q(300), q(301)], "it-c1")
    stream.records("it-c1", [], "it-c2")  # caught up on the open child
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    assert follower.drain() == 5
    assert recorder.sequences == [q(100), q(101), q(102), q(300), q(301)]
    assert follower.shards[PARENT].closed_and_read and not follower.shards[CHILD].closed_and_read
    stream.done()

    # Later: the child's iterator has expired (the real botocore error); it is re-acquired after 301, and the
    # finished parent is not read again. The shard list is still current (the child is open): no DescribeStream.
    stream.expired("it-c2")
    stream.iterator(CHILD, "it-c3", after=q(301))
    stream.records("it-c3", [q(302)], "it-c4")
    stream.records("it-c4", [], "it-c5")
    assert follower.drain() == 1
    assert recorder.sequences[-1] == q(302)
    stream.done()


def test_a_new_shard_is_discovered_and_read_after_its_parent_closes(tmp_path: Path) -> None:
    stream = RecordedStream()
    parent = _shard(PARENT, q(100))
    stream.describe([parent])
    stream.iterator(PARENT, "it-p0")
    stream.records("it-p0", [q(100)], "it-p1")
    stream.records("it-p1", [], "it-p2")
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    assert follower.drain() == 1
    stream.done()

    # The stream rolled over: the parent closed after 101, a child opened. The parent is read to its end with
    # the iterator kept from the last drain; the shard list known then has no child of it, so DescribeStream
    # (two shards per page here) is asked in the same drain and the child is read from its start.
    closed, child = _shard(PARENT, q(100), q(101)), _shard(CHILD, q(200), parent=PARENT)
    stream.records("it-p2", [q(101)], None)
    stream.describe([child, closed], page_size=2)
    stream.iterator(CHILD, "it-c0")
    stream.records("it-c0", [q(200)], "it-c1")
    stream.records("it-c1", [], "it-c2")
    assert follower.drain() == 2
    assert recorder.sequences == [q(100), q(101), q(200)]
    stream.done()

    # A restart (new follower, same checkpoint directory) resumes after 200 on the child, never re-reads the
    # closed parent, and forgets it once the stream no longer lists it (aged out after 24 hours).
    grandchild = _shard(GRANDCHILD, q(400), parent=CHILD)
    stream.describe([_shard(CHILD, q(200), q(201), parent=PARENT), grandchild])
    stream.iterator(CHILD, "it-c9", after=q(200))
    stream.records("it-c9", [q(201)], None)
    stream.iterator(GRANDCHILD, "it-g0")
    stream.records("it-g0", [q(400)], "it-g1")
    stream.records("it-g1", [], "it-g2")
    restarted = Recorder()
    again = StreamFollower(stream.client, ARN, restarted, tmp_path)
    assert again.drain() == 2
    assert restarted.sequences == [q(201), q(400)]
    assert PARENT not in again.shards and again.shards[CHILD].closed_and_read
    stream.done()


def test_a_child_waits_while_its_parent_cannot_be_read(tmp_path: Path) -> None:
    """GetRecords fails on the parent (streams unavailable): the child is not read ahead of it."""
    stream = RecordedStream()
    parent, child = _shard(PARENT, q(100), q(101)), _shard(CHILD, q(200), parent=PARENT)
    stream.describe([parent, child], page_size=2)
    stream.iterator(PARENT, "it-p0")
    stream.stubber.add_client_error("get_records", service_error_code="InternalServerError", http_status_code=500)
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    with pytest.raises(ClientError):
        follower.drain()
    assert recorder.sequences == []
    stream.done()
    stream.describe([parent, child], page_size=2)
    stream.records("it-p0", [q(100), q(101)], None)  # the iterator is still valid: no new one is needed
    stream.iterator(CHILD, "it-c0")
    stream.records("it-c0", [q(200)], "it-c1")
    stream.records("it-c1", [], "it-c2")
    assert follower.drain() == 3
    assert recorder.sequences == [q(100), q(101), q(200)]
    stream.done()


def test_a_checkpoint_the_stream_no_longer_keeps_continues_at_the_oldest_record(tmp_path: Path) -> None:
    """After a stop longer than the stream's 24 h retention, GetShardIterator refuses the checkpoint."""
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    stream.records("it-0", [q(100)], "it-1")
    stream.records("it-1", [], "it-2")
    recorder = Recorder()
    assert StreamFollower(stream.client, ARN, recorder, tmp_path).drain() == 1
    stream.done()

    stream.describe([_shard(PARENT, q(100))])
    stream.stubber.add_client_error(
        "get_shard_iterator",
        service_error_code="TrimmedDataAccessException",
        service_message="The operation attempted to read past the oldest stream record in a shard.",
        expected_params={"StreamArn": ARN, "ShardId": PARENT, "ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": q(100)},
    )
    stream.iterator(PARENT, "it-9")
    stream.records("it-9", [q(500)], "it-10")
    stream.records("it-10", [], "it-11")
    assert StreamFollower(stream.client, ARN, recorder, tmp_path).drain() == 1
    assert recorder.sequences == [q(100), q(500)]
    stream.done()


def test_iterators_that_keep_expiring_fail_the_drain_instead_of_spinning(tmp_path: Path) -> None:
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    for attempt in range(streams.MAX_EXPIRED_IN_A_ROW + 1):
        stream.expired(f"it-{attempt}")
        if attempt < streams.MAX_EXPIRED_IN_A_ROW:
            stream.iterator(PARENT, f"it-{attempt + 1}")
    follower = StreamFollower(stream.client, ARN, Recorder(), tmp_path)
    with pytest.raises(stream.client.exceptions.ExpiredIteratorException):
        follower.drain()
    stream.done()


def test_records_read_but_not_delivered_when_a_drain_fails_are_read_again(tmp_path: Path) -> None:
    """Records are delivered once the shard is read to its end; if GetRecords fails before that, the records
    already read are not lost: the next drain takes a new iterator after the checkpoint and reads them again."""
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    stream.records("it-0", [q(100)], "it-1")
    stream.records("it-1", [], "it-2")
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    assert follower.drain() == 1
    stream.done()

    stream.records("it-2", [q(101), q(102)], "it-3")
    stream.stubber.add_client_error("get_records", service_error_code="InternalServerError", http_status_code=500)
    with pytest.raises(ClientError):
        follower.drain()
    assert recorder.sequences == [q(100)] and follower.shards[PARENT].last_sequence == q(100)
    stream.done()

    stream.describe([_shard(PARENT, q(100))])  # a failed drain forgets the shard list too
    stream.iterator(PARENT, "it-9", after=q(100))
    stream.records("it-9", [q(101), q(102)], "it-10")
    stream.records("it-10", [], "it-11")
    assert follower.drain() == 2
    assert recorder.sequences == [q(100), q(101), q(102)]
    stream.done()


def test_an_iterator_expiring_between_pages_resumes_after_the_last_record_read(tmp_path: Path) -> None:
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    stream.records("it-0", [q(100), q(101)], "it-1")
    stream.expired("it-1")
    stream.iterator(PARENT, "it-5", after=q(101))  # not after the checkpoint: 100 and 101 are not read twice
    stream.records("it-5", [q(102)], "it-6")
    stream.records("it-6", [], "it-7")
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    assert follower.drain() == 3
    assert recorder.sequences == [q(100), q(101), q(102)]
    stream.done()


def test_a_sync_drain_costs_two_reads_and_writes_the_checkpoint_only_when_it_moved(tmp_path: Path) -> None:
    """Per drain after the first: no DescribeStream, no new iterator, one page of records and the empty page
    that says the shard is caught up; the checkpoint file is left alone when nothing moved."""
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    stream.records("it-0", [q(100)], "it-1")
    stream.records("it-1", [], "it-2")
    follower = StreamFollower(stream.client, ARN, Recorder(), tmp_path)
    assert follower.drain() == 1
    (checkpoint,) = tmp_path.iterdir()
    written = checkpoint.stat().st_mtime_ns
    stream.done()

    stream.records("it-2", [], "it-3")
    assert follower.drain() == 0
    assert checkpoint.stat().st_mtime_ns == written
    stream.records("it-3", [q(101), q(102)], "it-4")
    stream.records("it-4", [], "it-5")
    assert follower.drain() == 2
    assert checkpoint.stat().st_mtime_ns != written and q(102) in checkpoint.read_text()
    stream.done()


class SignallingLock:
    """The follower's lock, signalling when a caller reaches it (after ``catch_up`` noted the drains so far)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.waiting = threading.Event()

    def __enter__(self) -> None:
        self.waiting.set()
        self.real.acquire()

    def __exit__(self, *_: Any) -> None:
        self.real.release()


def test_catch_up_shares_a_drain_that_started_after_the_call_only(tmp_path: Path) -> None:
    """Concurrent sync writes: a write waits for a drain that began after its own writes were made (it read the
    stream after them); a drain already under way when the write finished does not count."""
    stream = RecordedStream()
    stream.describe([_shard(PARENT, q(100))])
    stream.iterator(PARENT, "it-0")
    stream.records("it-0", [q(100)], "it-1")
    stream.records("it-1", [], "it-2")
    recorder = Recorder()
    follower = StreamFollower(stream.client, ARN, recorder, tmp_path)
    assert follower.catch_up() == 1
    stream.done()
    lock = SignallingLock(follower._lock)
    follower._lock = lock  # type: ignore[assignment]

    # Another writer's drain starts after this call (which is waiting for the lock) and delivers 101.
    stream.records("it-2", [q(101)], "it-3")
    stream.records("it-3", [], "it-4")
    with ThreadPoolExecutor(max_workers=1) as pool:
        lock.real.acquire()
        waiting = pool.submit(follower.catch_up)
        assert lock.waiting.wait(30)
        assert follower._drain_locked() == 1
        lock.real.release()
        assert waiting.result() == 0, "shared the drain that started after it"
    stream.done()

    # A call made while a drain is under way (here: while it delivers 102) drains again after it.
    lock.waiting.clear()
    stream.records("it-4", [q(102)], "it-5")
    stream.records("it-5", [], "it-6")
    stream.records("it-6", [], "it-7")
    calls: list[Any] = []
    under_way: list[int] = []

    def deliver_and_call(records: list[dict[str, Any]]) -> dict[str, Any]:
        under_way.append(follower.drains)
        calls.append(pool.submit(follower.catch_up))
        assert lock.waiting.wait(30)
        return recorder(records)

    follower.deliver = deliver_and_call
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert follower.drain() == 1
        assert calls[0].result() == 0 and follower.drains == under_way[0] + 1, "drained after the drain under way"
    assert recorder.sequences == [q(100), q(101), q(102)]
    stream.done()


# --- delivery: the deployed mapping's retries, dead letters and filter -----------------------------------


class Flaky:
    """An indexer invocation that fails (raises, as a Lambda timeout or crash does) ``failures`` times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.recorder = Recorder()

    def __call__(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.failures:
            raise TimeoutError("Task timed out after 120.00 seconds")
        return self.recorder(records)


def test_a_failed_invocation_is_retried_then_dead_lettered_and_the_shard_moves_on(stream: s.Stream) -> None:
    s.put_experiment("1", "retried", 1)
    flaky = Flaky(failures=2)
    follower = StreamFollower(_streams_client(), stream.arn, flaky)
    assert follower.drain() == 2
    assert (flaky.calls, follower.dead_lettered) == (3, 0)
    assert flaky.recorder.sequences == _all_sequences(stream)

    s.put_experiment("2", "poisoned", 2)
    always = Flaky(failures=10**6)
    follower.deliver = always
    assert follower.drain() == 2
    assert always.calls == streams.MAX_ATTEMPTS and follower.dead_lettered == 2
    s.put_experiment("3", "after the poison", 3)
    follower.deliver = flaky
    assert follower.drain() == 2, "the records after the dead-lettered ones are delivered"


def test_local_retries_and_batches_match_the_deployed_mapping() -> None:
    from infra.constructs import indexer

    assert streams.MAX_ATTEMPTS == 1 + indexer.RETRY_ATTEMPTS
    assert streams.BATCH_SIZE == indexer.BATCH_SIZE
    assert streams.BATCHING_WINDOW_SECONDS == indexer.BATCHING_WINDOW_SECONDS


def test_a_bigger_batch_size_delivers_fewer_bigger_invocations_in_stream_order(stream: s.Stream) -> None:
    """A bulk load (tools/trace_metrics_bench.py) raises the records per invocation as the mapping's BatchSize
    allows: the same records, in order, in invocations of at most that many (the last one shorter)."""
    sizes: list[int] = []
    recorder = Recorder()

    def deliver(records: list[dict[str, Any]]) -> dict[str, Any]:
        sizes.append(len(records))
        return recorder(records)

    follower = StreamFollower(_streams_client(), stream.arn, deliver, complete_pages=True, batch_size=3)
    assert follower.batch_size == 3 and StreamFollower(_streams_client(), stream.arn, deliver).batch_size == streams.BATCH_SIZE
    for i in range(4):
        s.put_experiment(str(i), f"batched {i}", i)  # two records each
    assert follower.drain() == 8
    assert sizes == [3, 3, 2] and recorder.sequences == _all_sequences(stream)
    follower.batch_size = 10
    s.put_experiment("9", "one more", 9)
    assert follower.drain() == 2 and sizes[-1] == 2


def test_only_the_indexer_s_source_records_reach_it_and_the_checkpoint_passes_the_others(stream: s.Stream) -> None:
    from local.streams import is_indexer_source
    from serverless_mlflow.storage import table
    from serverless_mlflow.storage.schema import ENTITY

    s.put_experiment("1", "source", 1)
    s.put_run("1", "a" * 32, "run", 2)
    tag = ENTITY["run_tag"].item({"key": "team", "value": "red"}, experiment_id="1", run_id="a" * 32, key="team")
    table.put(tag)  # a run tag: not a source entity of the indexer
    s.delete_run("1", "a" * 32)  # REMOVE of the run (a source, judged by its old image) and of the tag
    recorder = Recorder()
    follower = StreamFollower(_streams_client(), stream.arn, recorder, keep=is_indexer_source)
    delivered = follower.drain()
    everything = s.Stream(*_endpoint_and_table(stream)).read_new()
    kinds = {
        r["dynamodb"]["SequenceNumber"]: (r["dynamodb"].get("NewImage") or r["dynamodb"].get("OldImage"))["entity_type"]["S"]
        for r in everything
    }
    assert recorder.sequences == [q for q, kind in kinds.items() if kind in derived.STREAM_TYPES]
    assert delivered == len(recorder.sequences) < len(kinds)
    assert follower.shards[next(iter(follower.shards))].last_sequence == everything[-1]["dynamodb"]["SequenceNumber"]
    assert follower.drain() == 0


def test_the_runtime_does_not_deliver_the_indexer_s_own_flag_clearing(stream: s.Stream) -> None:
    """``needs_indexing``: the deployed filter's records, less the MODIFY that only removes the "not indexed yet"
    flag (the indexer's own compare-before-clear, which it skips as irrelevant); a MODIFY that also changes the
    value, and a REMOVE, are delivered."""
    from local.streams import needs_indexing
    from serverless_mlflow.storage import table
    from serverless_mlflow.storage.schema import ENTITY

    key = {"experiment_id": "1", "run_id": "b" * 32, "key": "team"}
    tag = ENTITY["run_tag"].item({"key": "team", "value": "red"}, **key)
    table.put({**tag, derived.FLAG_ATTRIBUTE: "U#1#T"})  # INSERT: delivered
    table.update(ENTITY["run_tag"].key(**key), "REMOVE #f", names={"#f": derived.FLAG_ATTRIBUTE})  # flag only: not
    table.put({**tag, "value": "blue", derived.FLAG_ATTRIBUTE: "U#2#T"})  # MODIFY of the value: delivered
    table.update(
        ENTITY["run_tag"].key(**key), "SET #v = :v REMOVE #f", names={"#v": "value", "#f": derived.FLAG_ATTRIBUTE}, values={":v": "x"}
    )
    table.delete(ENTITY["run_tag"].key(**key))  # REMOVE: delivered
    recorder = Recorder()
    follower = StreamFollower(_streams_client(), stream.arn, recorder, keep=needs_indexing)
    assert follower.drain() == 4
    everything = s.Stream(*_endpoint_and_table(stream)).read_new()
    assert [r["eventName"] for r in everything] == ["INSERT", "MODIFY", "MODIFY", "MODIFY", "REMOVE"]
    assert recorder.sequences == [r["dynamodb"]["SequenceNumber"] for i, r in enumerate(everything) if i != 1]


def test_indexing_failures_never_fail_the_client_request(local_runtime: Any) -> None:
    import mlflow

    runtime, server = local_runtime, local_runtime.url
    real = runtime.follower.client

    class Unavailable:
        exceptions = real.exceptions

        def _down(self, operation: str) -> ClientError:
            return ClientError({"Error": {"Code": "InternalServerError", "Message": "streams are down"}}, operation)

        def describe_stream(self, **_: Any) -> Any:
            raise self._down("DescribeStream")

        def get_shard_iterator(self, **_: Any) -> Any:
            raise self._down("GetShardIterator")

        def get_records(self, **_: Any) -> Any:
            raise self._down("GetRecords")

    runtime.follower.client = Unavailable()
    try:
        experiment_id = mlflow.MlflowClient(server).create_experiment(unique("stream-down"))
    finally:
        runtime.follower.client = real
    assert runtime.drain_stream() >= 1, "the records written meanwhile are delivered once streams answer again"
    with urllib.request.urlopen(f"{server}/api/2.0/mlflow/experiments/get?experiment_id={experiment_id}") as response:
        assert response.status == 200


def test_an_indexer_that_keeps_failing_never_fails_a_request(local_runtime: Any) -> None:
    """Every invocation of the indexer fails (a crash, a timeout): the client's write still answers 200; the
    records are retried, then dead-lettered, and the records after them are indexed once it works again."""
    import mlflow

    runtime = local_runtime
    real, failing = runtime.follower.deliver, Flaky(failures=10**6)
    runtime.follower.deliver = failing
    dead = runtime.follower.dead_lettered
    try:
        client = mlflow.MlflowClient(runtime.url)
        experiment_id = client.create_experiment(unique("indexer-down"))
        assert client.get_experiment(experiment_id).lifecycle_stage == "active"
        assert failing.calls >= streams.MAX_ATTEMPTS and runtime.follower.dead_lettered > dead
    finally:
        runtime.follower.deliver = real
    name = unique("indexer-back")
    later = client.create_experiment(name)
    assert [e.experiment_id for e in client.search_experiments(filter_string=f"name LIKE '{name}%'")] == [later]


def test_an_idle_runtime_s_expired_iterator_never_fails_a_request(local_runtime: Any) -> None:
    """The issue-15 scenario: after an idle spell the follower's iterator has expired. The next write answers
    200 and its records are indexed (the name search reads the indexer's derived items)."""
    import mlflow

    runtime = local_runtime
    real = runtime.follower.client
    expiring = ExpiringIterators(real)
    runtime.follower.client = expiring
    try:
        client = mlflow.MlflowClient(runtime.url)
        name = unique("after-idle")
        expiring.expire_next = 1
        delivered, dead = runtime.follower.delivered, runtime.follower.dead_lettered
        experiment_id = client.create_experiment(name)
        assert expiring.expired == 1
        assert runtime.follower.delivered > delivered and runtime.follower.dead_lettered == dead
        found = client.search_experiments(filter_string=f"name LIKE '{name}%'")
        assert [e.experiment_id for e in found] == [experiment_id]
    finally:
        runtime.follower.client = real


def test_a_restarted_runtime_resumes_its_table_s_stream(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make serve`` stopped and started again on an existing table (an external DYNAMODB_ENDPOINT_URL)."""
    import mlflow

    from local.runtime import LocalRuntime
    from serverless_mlflow.storage import table

    monkeypatch.setenv("TABLE_NAME", unique("restart"))
    monkeypatch.setenv("STREAM_CHECKPOINT_DIR", str(tmp_path))
    try:
        first = LocalRuntime(port=0).start()
        mlflow.MlflowClient(first.url).create_experiment(unique("before-restart"))
        assert first.follower is not None and first.follower.delivered > 0
        first.stop()

        second = LocalRuntime(port=0).start()
        assert second.follower is not None
        assert second.follower.delivered == 0, "records delivered before the restart are not read again"
        experiment_id = mlflow.MlflowClient(second.url).create_experiment(unique("after-restart"))
        assert second.follower.delivered > 0
        assert mlflow.MlflowClient(second.url).get_experiment(experiment_id).lifecycle_stage == "active"
        second.stop()
    finally:
        table.reset_client()


def test_make_serve_restarted_on_its_persistent_database_resumes_the_stream(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make serve`` with its embedded DynamoDB Local on disk (DYNAMODB_LOCAL_DB_PATH), stopped and started
    again: the table, its stream and the follower's checkpoint survive; nothing is re-delivered, nothing lost."""
    import mlflow

    from local.runtime import LocalRuntime
    from serverless_mlflow.storage import table

    monkeypatch.delenv("DYNAMODB_ENDPOINT_URL")  # the runtime starts its own DynamoDB Local (S3 stays shared)
    monkeypatch.setenv("DYNAMODB_LOCAL_DB_PATH", str(tmp_path / "db"))
    monkeypatch.setenv("STREAM_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("TABLE_NAME", unique("persistent"))
    # The runtimes below point the process's queues, bus and engine at their own while they run; stopping one gives
    # the session's runtime its settings back (checked at the end).
    session_settings = {name: os.environ.get(name) for name in ("JOB_QUEUE_URL", "JOB_SERVER_URL", "WEBHOOK_QUEUE_URL", "EVENT_BUS_NAME")}
    prefix = unique("persisted")
    try:
        first = LocalRuntime(port=0).start()
        try:
            before = mlflow.MlflowClient(first.url).create_experiment(f"{prefix}-before")
            assert first.follower is not None and first.follower.delivered > 0
            stream_arn = first.follower.stream_arn
        finally:
            first.stop()
        # One checkpoint file per stream consumer: the indexer's and the webhook events'.
        files = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
        assert len(files) == 2 and [f.endswith("-webhooks.json") for f in files].count(True) == 1, files

        assert "DYNAMODB_ENDPOINT_URL" not in os.environ  # the first runtime's engine left with it
        second = LocalRuntime(port=0).start()
        try:
            assert second.follower is not None and second.follower.stream_arn == stream_arn
            assert second.follower.delivered == 0, "records delivered before the restart are not read again"
            client = mlflow.MlflowClient(second.url)
            after = client.create_experiment(f"{prefix}-after")
            assert second.follower.delivered > 0 and second.follower.dead_lettered == 0
            # Name search goes through the indexer's derived items: both experiments are indexed.
            found = client.search_experiments(filter_string=f"name LIKE '{prefix}%'")
            assert sorted(e.experiment_id for e in found) == sorted([before, after])
        finally:
            second.stop()
        assert {name: os.environ.get(name) for name in session_settings} == session_settings
    finally:
        table.reset_client()
