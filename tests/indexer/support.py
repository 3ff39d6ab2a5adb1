"""Test support: a private table on a moto endpoint, its stream, and writers that follow the
source-item contract the request handlers use (the LSI5 "not yet indexed" flag on every change).

The writers build items through the schema exactly like the feature code does; they exist so the
indexer can be driven with random operation sequences without the HTTP layer.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

from local.events import LambdaContext
from local.streams import lambda_stream_record
from serverless_mlflow.index import metric_marks
from serverless_mlflow.storage import schema, table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import run_metrics

WS = "default"


class Stream:
    """Reads the table's stream from the start, in Lambda's record shape."""

    def __init__(self, endpoint: str, table_name: str) -> None:
        self.client = boto3.client("dynamodbstreams", endpoint_url=endpoint)
        ddb = boto3.client("dynamodb", endpoint_url=endpoint)
        self.arn = ddb.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self.iterators: dict[str, str] = {}
        self.history: list[dict[str, Any]] = []

    def read_new(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for shard in self.client.describe_stream(StreamArn=self.arn)["StreamDescription"].get("Shards", []):
            shard_id = shard["ShardId"]
            iterator = (
                self.iterators.get(shard_id)
                or self.client.get_shard_iterator(StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            )
            while iterator:
                page = self.client.get_records(ShardIterator=iterator, Limit=1000)
                records = page.get("Records", [])
                iterator = page.get("NextShardIterator")
                if iterator:
                    self.iterators[shard_id] = iterator
                if not records:
                    break
                out.extend(lambda_stream_record(r, self.arn) for r in records)
        self.history.extend(out)
        return out


def invoke_indexer(records: list[dict[str, Any]]) -> dict[str, Any]:
    from indexer.handler import lambda_handler

    return lambda_handler({"Records": records}, LambdaContext("indexer"))


def drain(stream: Stream, max_rounds: int = 20) -> int:
    """Deliver until the stream is quiet (clearing flags writes records of its own)."""
    delivered = 0
    for _ in range(max_rounds):
        records = stream.read_new()
        if not records:
            return delivered
        result = invoke_indexer(records)
        assert not result.get("batchItemFailures"), result
        delivered += len(records)
    raise AssertionError("stream never went quiet: the indexer loops on its own writes")


@contextmanager
def private_table(endpoint: str) -> Iterator[Stream]:
    """A fresh table (own stream) on the moto endpoint, selected through TABLE_NAME for the block."""
    name = f"idx-{uuid.uuid4().hex[:12]}"
    ddb = boto3.client("dynamodb", endpoint_url=endpoint)
    ddb.create_table(**schema.table_definition(name))
    saved = {k: os.environ.get(k) for k in ("TABLE_NAME", "DYNAMODB_ENDPOINT_URL")}
    os.environ["TABLE_NAME"] = name
    os.environ["DYNAMODB_ENDPOINT_URL"] = endpoint
    table.reset_client()
    try:
        yield Stream(endpoint, name)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        table.reset_client()
        ddb.delete_table(TableName=name)


# --- writers (the source-item contract) ----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def tick(self) -> int:
        self.now += random.randint(1, 5)
        return self.now


def put_experiment(experiment_id: str, name: str, at: int) -> None:
    attrs = {
        "experiment_id": experiment_id,
        "name": name,
        "artifact_location": f"s3://b/{experiment_id}",
        "lifecycle_stage": "active",
        "creation_time": at,
        "last_update_time": at,
        "workspace": WS,
    }
    # E#META and its copy in the consistent collection, in one transaction as create/rename write them.
    table.transact(
        [
            table.put_op(ENTITY["experiment"].item(attrs, **attrs, experiment_num=int(experiment_id))),
            table.put_op(ENTITY["experiment_entry"].item(attrs, **attrs, experiment_num=int(experiment_id))),
        ]
    )


def put_run(experiment_id: str, run_id: str, name: str | None, at: int, start_time: int | None = None) -> None:
    attrs = {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "run_name": name,
        "user_id": "u",
        "status": "RUNNING",
        "start_time": start_time if start_time is not None else at,
        "lifecycle_stage": "active",
        "artifact_uri": "x",
    }
    table.put(ENTITY["run"].item({k: v for k, v in attrs.items() if v is not None}, **attrs, last_update_time=at))


def log_metric(experiment_id: str, run_id: str, key: str, value: float, at: int) -> None:
    # The run marked for the indexer, the latest value in the run's partition, the write counted (metric_marks).
    ensured = metric_marks.before_write(experiment_id, run_id, *metric_marks.read(experiment_id, run_id))
    table.put(run_metrics.latest_item(experiment_id, run_id, {"key": key, "value": float(value), "timestamp": at, "step": 0}))
    metric_marks.after_write(experiment_id, run_id, ensured)


def log_param(experiment_id: str, run_id: str, key: str, value: str, at: int) -> None:
    item = ENTITY["param"].item({"key": key, "value": value}, experiment_id=experiment_id, run_id=run_id, key=key, changed_at=at)
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        pass  # params are immutable; MLflow rejects a different value, an equal one is a no-op


def delete_run(experiment_id: str, run_id: str) -> None:
    """A run deleted for good: its range and its latest metric values."""
    for item in [
        *table.query(**ENTITY["run"].query("with_data", experiment_id=experiment_id, run_id=run_id)),
        *run_metrics.read_latest(run_id),
    ]:
        table.delete({"pk": item["pk"], "sk": item["sk"]})


def put_model(name: str, at: int) -> None:
    table.put(ENTITY["registered_model_entry"].item({"name": name, "is_prompt": False}, workspace=WS, model_name=name, changed_at=at))


def delete_model(name: str) -> None:
    table.delete(ENTITY["registered_model_entry"].key(workspace=WS, model_name=name))


def set_trace_name(experiment_id: str, trace_id: str, name: str) -> None:
    # Trace tags live in the trace item; its name is the trace_name attribute (lsi4), listed in the partition's
    # names first. The item is in its trace partition, which the experiment's directory lists (as start_trace
    # writes them).
    from serverless_mlflow.store import trace_names, trace_partitions, trace_writes

    attributes = {"trace_id": trace_id, "experiment_id": experiment_id, "request_time": 0, "trace_name": name, "state": "OK"}
    trace_partitions.ensure_partition(experiment_id, 0, trace_id, None)
    item = trace_writes.info_item(attributes)
    trace_names.ensure_for(item)
    table.put(item)
