"""The local stream follower behaves like Lambda's event source mapping (issue 15): expired iterators are
re-acquired after the checkpoint, closed shards are read to their end before their children, a restart
resumes where the stream was, and a failure to index never fails the client's request.

Real streams come from DynamoDB Local (the session runtime's engine). Where DynamoDB Streams cannot be made
to misbehave on demand (an iterator expires only after 15 minutes, shards roll over every few hours) the
follower talks to a stand-in for the AWS client that raises the real botocore errors.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.streams import StreamFollower
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


class RollingStream:
    """A stream whose first shard closed and was followed by a child (as DynamoDB rolls shards over)."""

    class exceptions:
        class ExpiredIteratorException(ClientError):
            pass

        class TrimmedDataAccessException(ClientError):
            pass

    def __init__(self, describe_child_first: bool) -> None:
        parent = {"ShardId": "shard-parent", "SequenceNumberRange": {"StartingSequenceNumber": "100"}}
        child = {"ShardId": "shard-child", "ParentShardId": "shard-parent", "SequenceNumberRange": {"StartingSequenceNumber": "300"}}
        self.shards = [child, parent] if describe_child_first else [parent, child]
        self.records = {
            "shard-parent": [_record("100"), _record("101"), _record("102")],
            "shard-child": [_record("300"), _record("301")],
        }
        self.closed = {"shard-parent"}
        self.describe_calls: list[dict[str, Any]] = []

    def describe_stream(self, **kwargs: Any) -> dict[str, Any]:
        # One shard per page: the follower must follow LastEvaluatedShardId.
        self.describe_calls.append(kwargs)
        start = 0
        if "ExclusiveStartShardId" in kwargs:
            start = next(i for i, sh in enumerate(self.shards) if sh["ShardId"] == kwargs["ExclusiveStartShardId"]) + 1
        page: dict[str, Any] = {"Shards": self.shards[start : start + 1]}
        if start + 1 < len(self.shards):
            page["LastEvaluatedShardId"] = self.shards[start]["ShardId"]
        return {"StreamDescription": page}

    def get_shard_iterator(self, StreamArn: str, ShardId: str, ShardIteratorType: str, SequenceNumber: str | None = None) -> dict[str, Any]:
        position = 0 if ShardIteratorType == "TRIM_HORIZON" else [r["dynamodb"]["SequenceNumber"] for r in self.records[ShardId]].index(SequenceNumber) + 1
        return {"ShardIterator": f"{ShardId}|{position}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        shard_id, position = ShardIterator.split("|")
        records = self.records[shard_id][int(position) : int(position) + 2]  # small pages
        end = int(position) + len(records)
        page: dict[str, Any] = {"Records": records}
        if not (shard_id in self.closed and end >= len(self.records[shard_id])):
            page["NextShardIterator"] = f"{shard_id}|{end}"
        return page


def _record(sequence: str) -> dict[str, Any]:
    return {"eventID": sequence, "eventName": "INSERT", "dynamodb": {"SequenceNumber": sequence, "Keys": {"pk": {"S": sequence}}}}


@pytest.mark.parametrize("describe_child_first", [False, True])
def test_a_closed_parent_is_read_to_its_end_before_its_child(describe_child_first: bool) -> None:
    client = RollingStream(describe_child_first)
    recorder = Recorder()
    follower = StreamFollower(client, "arn:stream", recorder)
    assert follower.drain() == 5
    assert recorder.sequences == ["100", "101", "102", "300", "301"]
    assert follower.shards["shard-parent"].closed_and_read and not follower.shards["shard-child"].closed_and_read
    assert any("ExclusiveStartShardId" in call for call in client.describe_calls)
    # New records on the open child arrive on the next drain; the finished parent is not read again.
    client.records["shard-child"].append(_record("302"))
    assert follower.drain() == 1
    assert recorder.sequences[-1] == "302"


def test_indexing_failures_never_fail_the_client_request(local_runtime: Any) -> None:
    import mlflow

    runtime, server = local_runtime, local_runtime.url
    real = runtime.follower.client

    class Unavailable:
        exceptions = real.exceptions

        def describe_stream(self, **_: Any) -> Any:
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "streams are down"}}, "DescribeStream")

    runtime.follower.client = Unavailable()
    try:
        experiment_id = mlflow.MlflowClient(server).create_experiment(unique("stream-down"))
    finally:
        runtime.follower.client = real
    assert runtime.drain_stream() >= 1, "the records written meanwhile are delivered once streams answer again"
    with urllib.request.urlopen(f"{server}/api/2.0/mlflow/experiments/get?experiment_id={experiment_id}") as response:
        assert response.status == 200


def test_a_restarted_runtime_resumes_its_table_s_stream(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make serve`` stopped and started again on an existing table (an external DYNAMODB_ENDPOINT_URL)."""
    import mlflow

    from local.runtime import LocalRuntime
    from serverless_mlflow import table

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
