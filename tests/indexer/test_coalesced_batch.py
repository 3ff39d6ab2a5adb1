"""One indexer invocation works its whole batch with a few requests (the derived writes coalesced), and derives
exactly what the same records delivered one at a time derive."""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from serverless_mlflow.index.derived import FLAG_ATTRIBUTE, FLAGGED_TYPES
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from tools import admin

from . import support as s

RUNS = ["a" * 32, "b" * 32, "c" * 32]
# What differs legitimately between one invocation and many: pass counters, a summary's revision, the watermark.
_COUNTERS = {"run_metric_state", "config"}
_VOLATILE = {"rev"}
WATERMARK_SK = ENTITY["config"].key(key="indexer_watermark")["sk"]
_DERIVED = {"metric_rank", "param_rank", "fts_forward", "fts_reverse", "run_metrics_digest", "metric_key"}


def write_history() -> None:
    """Three runs of one experiment: names, params, metrics logged twice (the batch holds both records: the
    RANK item must move once, to the last value), a NaN, and a rename of the experiment."""
    s.put_experiment("1", "coalesce me", 1)
    for n, run_id in enumerate(RUNS):
        s.put_run("1", run_id, f"run number {n}", 10 + n)
        s.log_param("1", run_id, "lr", f"0.{n}1", 20 + n)
        s.log_param("1", run_id, "layers", str(n), 30 + n)
        s.log_metric("1", run_id, "loss", 1.0 + n, 40 + n)
        s.log_metric("1", run_id, "acc", 0.5, 50 + n)
        s.log_metric("1", run_id, "loss", 0.25 * n, 60 + n)
    s.log_metric("1", RUNS[0], "nan", math.nan, 70)
    s.put_experiment("1", "coalesced now", 80)


@contextmanager
def counted() -> Iterator[Counter[str]]:
    """Every DynamoDB request the table client makes in the block, by operation (the watermark's apart: it is
    written at most once a second, so its count depends on the machine's speed)."""
    calls: Counter[str] = Counter()

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        watermark = params.get("Key", {}).get("sk", {}).get("S") == WATERMARK_SK
        calls["watermark" if watermark else model.name] += 1

    events = table.client().meta.events
    events.register("before-parameter-build.dynamodb", count, unique_id="coalesced-batch-count")
    try:
        yield calls
    finally:
        events.unregister("before-parameter-build.dynamodb", unique_id="coalesced-batch-count")


def table_items() -> dict[tuple[str, str], dict[str, Any]]:
    """The whole private table (a test may Scan; the layer's client may not)."""
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])
    items: dict[tuple[str, str], dict[str, Any]] = {}
    for page in ddb.get_paginator("scan").paginate(TableName=table.table_name(), ConsistentRead=True):
        for raw in page["Items"]:
            item = table.from_item(raw)
            if item.get("entity_type") in _COUNTERS:
                continue
            items[(item["pk"], item["sk"])] = {k: v for k, v in item.items() if k not in _VOLATILE}
    return items


def indexed(endpoint: str, deliver: Callable[[s.Stream, list[dict[str, Any]]], None]) -> tuple[dict[tuple[str, str], dict[str, Any]], int]:
    """The table after ``deliver`` (then a drain), and the requests ``deliver`` made."""
    with s.private_table(endpoint) as stream:
        write_history()
        records = stream.read_new()
        with counted() as calls:
            deliver(stream, records)
        s.drain(stream)  # what the indexer's own writes bring back (the run markers' removal): nothing to index
        assert admin.verify().differences == 0
        return table_items(), sum(n for operation, n in calls.items() if operation != "watermark")


def test_one_invocation_derives_what_one_record_at_a_time_derives(dynamodb_endpoint: str) -> None:
    def all_at_once(stream: s.Stream, records: list[dict[str, Any]]) -> None:
        assert s.invoke_indexer(records)["batchItemFailures"] == []

    def one_at_a_time(stream: s.Stream, records: list[dict[str, Any]]) -> None:
        for record in records:
            assert s.invoke_indexer([record])["batchItemFailures"] == []

    (coalesced, requests), (single, single_requests) = indexed(dynamodb_endpoint, all_at_once), indexed(dynamodb_endpoint, one_at_a_time)
    assert coalesced == single
    assert requests * 3 < single_requests, (requests, single_requests)
    kinds = Counter(item["entity_type"] for item in coalesced.values())
    assert kinds["metric_rank"] == 7 and kinds["param_rank"] == 6 and kinds["run_summary"] == 3
    assert kinds["run_metrics_digest"] == 3 and kinds["fts_forward"] > 0
    # The RANK item of a metric logged twice in the batch holds the last value only.
    losses = sorted(i["value"] for i in coalesced.values() if i["entity_type"] == "metric_rank" and i.get("key") == "loss")
    assert losses == ["0.0", "0.25", "0.5"]


def test_one_invocation_costs_requests_per_batch_not_per_record(stream: s.Stream) -> None:
    write_history()
    records = stream.read_new()
    with counted() as calls:
        assert s.invoke_indexer(records)["batchItemFailures"] == []
    # Source items flagged "not indexed yet" (each cleared once, however many of its records the batch holds).
    flagged = [r["dynamodb"] for r in records if FLAG_ATTRIBUTE in r["dynamodb"].get("NewImage", {})]
    flags = len({json.dumps(d["Keys"], sort_keys=True) for d in flagged if d["NewImage"]["entity_type"]["S"] in FLAGGED_TYPES})
    assert len(records) >= 20 and flags > 0
    derived = sum(1 for item in table_items().values() if item["entity_type"] in _DERIVED)
    assert derived > 25  # more than one BatchWriteItem's worth
    # Per batch: one read of everything it needs (items, digests, summaries, pair declarations) and one of the
    # metric keys new to this instance; the derived writes in 25-item chunks (reverse postings before forward
    # ones), then the new metric keys.
    assert calls["BatchGetItem"] == 2
    assert calls["BatchWriteItem"] <= math.ceil(derived / 25) + 2
    # Per run: its metric pass (latest values, marker) and its summary (range, conditional put); per name its
    # postings read; nothing read or put one item at a time.
    assert calls["PutItem"] == len(RUNS) and calls["DeleteItem"] == len(RUNS) and calls["GetItem"] == 0
    assert calls["Query"] == 2 * len(RUNS) + len(RUNS) + 1
    # Per flagged source item one conditional clear; one epoch per run; the watermark (a new table: recorded).
    assert calls["UpdateItem"] == flags + len(RUNS) and calls["watermark"] == 1


@pytest.fixture
def stream(dynamodb_endpoint: str) -> Iterator[s.Stream]:
    with s.private_table(dynamodb_endpoint) as st:
        yield st
