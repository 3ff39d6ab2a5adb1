"""The sync indexer mode waits for the stream only after requests that wrote something the indexer is given,
and a read after a write sees the write's derived items, however many requests run at once. A run's own writes
(``local/barrier.py``) are answered before their records are delivered; any other request delivers them first.

"Indexed" is checked on the table itself, not through search results (searches stay exact while the indexer
lags, by reading the sources still flagged on LSI5): when a write is answered, the items it wrote no longer
carry the "not indexed yet" flag and every derived item they imply (RANK items, FTS postings) exists.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from local import writes
from serverless_mlflow.index import derived
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, PK, SK
from tests.conftest import unique

pytestmark = pytest.mark.e2e

WRITERS = 4
ROUNDS = 5


def _assert_indexed(key: dict[str, str]) -> None:
    item = table.get(key)
    assert item is not None
    assert derived.FLAG_ATTRIBUTE not in item, f"{key} was answered before the indexer cleared its flag"
    implied = derived.derive(item)
    assert implied, f"{key} implies no derived item: the check would prove nothing"
    found = {(i[PK], i[SK]) for i in table.batch_get([{PK: pk, SK: sk} for pk, sk in implied])}
    assert found == set(implied), f"derived items of {key} missing when the write was answered"


def test_every_write_is_indexed_before_the_next_read_while_others_write_and_search(local_runtime: Any) -> None:
    """Writers on several threads (each on its own run) and searches in parallel: concurrent writers share
    drains, and still each writer's search right after its write finds its run through the RANK and FTS
    items, and the write's own items are indexed on the table once that search is answered."""
    import mlflow

    url = local_runtime.url
    experiment_id = mlflow.MlflowClient(url).create_experiment(unique("sync-rw"))
    prefix = unique("writer")
    stop = threading.Event()
    searches = [0]
    dead = local_runtime.follower.dead_lettered

    def writer(n: int) -> None:
        client = mlflow.MlflowClient(url)
        name = f"{prefix}-{n}"
        run_id = client.create_run(experiment_id, run_name=name).info.run_id
        assert [r.info.run_id for r in client.search_runs([experiment_id], f"attributes.run_name = '{name}'")] == [run_id]
        _assert_indexed(ENTITY["run"].key(experiment_id=experiment_id, run_id=run_id))
        for i in range(ROUNDS):
            value = f"{prefix}-{n}-{i}"
            client.set_tag(run_id, "owner", value)
            assert [r.info.run_id for r in client.search_runs([experiment_id], f"tags.owner = '{value}'")] == [run_id]
            _assert_indexed(ENTITY["run_tag"].key(experiment_id=experiment_id, run_id=run_id, key="owner"))
            client.log_metric(run_id, "score", float(n * 100 + i), step=i)
            found = client.search_runs([experiment_id], f"metrics.score = {float(n * 100 + i)}")
            assert [r.info.run_id for r in found] == [run_id]
            _assert_indexed(ENTITY["latest_metric"].key(experiment_id=experiment_id, run_id=run_id, key="score"))

    def searcher() -> None:
        client = mlflow.MlflowClient(url)
        while not stop.is_set():
            client.search_runs([experiment_id], f"attributes.run_name LIKE '{prefix}%'")
            searches[0] += 1

    with ThreadPoolExecutor(max_workers=WRITERS + 2) as pool:
        readers = [pool.submit(searcher) for _ in range(2)]
        try:
            for future in [pool.submit(writer, n) for n in range(WRITERS)]:
                future.result()
        finally:
            stop.set()
        for future in readers:
            future.result()
    assert searches[0] > 0
    assert local_runtime.follower.dead_lettered == dead


def test_a_request_that_writes_nothing_for_the_indexer_does_not_wait_for_the_stream(local_runtime: Any) -> None:
    import mlflow

    url, follower = local_runtime.url, local_runtime.follower
    client = mlflow.MlflowClient(url)
    name = unique("read-only")
    experiment_id = client.create_experiment(name)
    run_id = client.create_run(experiment_id, run_name="r").info.run_id
    client.log_metric(run_id, "m", 1.0)
    client.get_run(run_id)  # delivers the run writes deferred so far
    drains, invocations, delivered = follower.drains, follower.invocations, follower.delivered

    # Read-only POSTs (search_runs, search_experiments, get-by-name through the REST API) and GETs.
    assert [r.info.run_id for r in client.search_runs([experiment_id], "metrics.m > 0")] == [run_id]
    assert [e.experiment_id for e in client.search_experiments(filter_string=f"name = '{name}'")] == [experiment_id]
    assert client.get_experiment_by_name(name).experiment_id == experiment_id
    assert client.get_run(run_id).data.metrics == {"m": 1.0}
    answer = requests.post(f"{url}/api/2.0/mlflow/runs/search", json={"experiment_ids": [experiment_id]}, timeout=30)
    assert answer.status_code == 200 and len(answer.json()["runs"]) == 1
    # A write that fails validation writes nothing either.
    bad = requests.post(f"{url}/api/2.0/mlflow/runs/set-tag", json={"run_id": run_id, "key": "", "value": "v"}, timeout=30)
    assert bad.status_code == 400
    assert (follower.drains, follower.invocations, follower.delivered) == (drains, invocations, delivered)

    client.rename_experiment(experiment_id, name + "-2")  # a write the indexer is given: drained before it is answered
    assert follower.drains == drains + 1 and follower.invocations > invocations and follower.delivered > delivered


def test_run_writes_are_delivered_by_the_next_other_request(local_runtime: Any) -> None:
    """A run's writes (create, tags, params, metrics, update) share one drain: the first request that is not
    one of them runs it before it runs, so it reads every derived item of them."""
    import mlflow

    follower = local_runtime.follower
    client = mlflow.MlflowClient(local_runtime.url)
    experiment_id = client.create_experiment(unique("barrier"))
    drains = follower.drains
    run_id = client.create_run(experiment_id, run_name="deferred").info.run_id
    client.set_tag(run_id, "owner", "ana")
    client.log_param(run_id, "lr", "0.1")
    client.log_metric(run_id, "loss", 0.5)
    found = client.search_runs([experiment_id], "tags.owner = 'ana' and params.lr = '0.1' and metrics.loss < 1")
    assert [r.info.run_id for r in found] == [run_id]
    # One drain before the search, not one per write (four); a gap of over a second between two writes on a
    # loaded machine lets the idle flush run one more.
    assert follower.drains - drains <= 3
    run_key = ENTITY["run"].key(experiment_id=experiment_id, run_id=run_id)
    for key in (
        run_key,
        ENTITY["run_tag"].key(experiment_id=experiment_id, run_id=run_id, key="owner"),
        ENTITY["param"].key(experiment_id=experiment_id, run_id=run_id, key="lr"),
        ENTITY["latest_metric"].key(experiment_id=experiment_id, run_id=run_id, key="loss"),
    ):
        _assert_indexed(key)


def test_deferred_run_writes_are_flushed_when_idle_and_when_sync_mode_ends(local_runtime: Any) -> None:
    """Nothing stays undelivered: an idle second flushes deferred writes (the deployed batching window), and
    leaving sync mode delivers them first."""
    import time

    import mlflow

    client = mlflow.MlflowClient(local_runtime.url)
    experiment_id = client.create_experiment(unique("flush"))
    run_id = client.create_run(experiment_id).info.run_id
    tag_key = ENTITY["run_tag"].key(experiment_id=experiment_id, run_id=run_id, key="idle")
    client.set_tag(run_id, "idle", "yes")
    deadline = time.monotonic() + 30
    while derived.FLAG_ATTRIBUTE in (table.get(tag_key) or {}) and time.monotonic() < deadline:
        time.sleep(0.2)
    _assert_indexed(tag_key)

    client.set_tag(run_id, "mode", "paused")
    local_runtime.indexer_mode = "paused"
    try:
        _assert_indexed(ENTITY["run_tag"].key(experiment_id=experiment_id, run_id=run_id, key="mode"))
    finally:
        local_runtime.indexer_mode = "sync"


@pytest.mark.parametrize(
    ("operation", "params", "reaches"),
    [
        ("Query", {"TableName": "t"}, False),
        ("BatchGetItem", {"RequestItems": {}}, False),
        ("DescribeTable", {"TableName": "t"}, False),
        ("PutItem", {"Item": {"entity_type": {"S": "metric_history"}}}, False),
        ("PutItem", {"Item": {"entity_type": {"S": "run_tag"}}}, True),
        ("PutItem", {"Item": {"pk": {"S": "x"}}}, True),  # no type: assume it may
        ("UpdateItem", {"Key": {}}, True),
        ("DeleteItem", {"Key": {}}, True),
        ("ExecuteStatement", {"Statement": "DELETE FROM t"}, True),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": {"entity_type": {"S": "metric_history"}}}}] * 3}}, False),
        (
            "BatchWriteItem",
            {"RequestItems": {"t": [{"PutRequest": {"Item": {"entity_type": {"S": "metric_history"}}}}, {"DeleteRequest": {"Key": {}}}]}},
            True,
        ),
        (
            "TransactWriteItems",
            {"TransactItems": [{"ConditionCheck": {}}, {"Put": {"Item": {"entity_type": {"S": "metric_history"}}}}]},
            False,
        ),
        ("TransactWriteItems", {"TransactItems": [{"Put": {"Item": {"entity_type": {"S": "param"}}}}]}, True),
        ("TransactWriteItems", {"TransactItems": [{"ConditionCheck": {}}, {"Update": {"Key": {}}}]}, True),
    ],
)
def test_which_dynamodb_calls_make_a_sync_request_wait(operation: str, params: dict[str, Any], reaches: bool) -> None:
    assert writes.reaches_indexer(operation, params) is reaches


def test_stream_records_reach_the_indexer_dated_within_the_write_that_made_them(local_runtime: Any) -> None:
    """The indexer's IteratorAgeMs is measured from ApproximateCreationDateTime, which DynamoDB Local truncates
    to the minute (a sync indexer reported ages up to 60 s). The records of a write after an idle spell must
    be dated within that write's request: never before it started, never after they were delivered."""
    import time

    import mlflow

    client = mlflow.MlflowClient(local_runtime.url)
    run_id = client.create_run(client.create_experiment(unique("age"))).info.run_id
    client.get_run(run_id)  # the run's own records are delivered now, before the window observed
    follower = local_runtime.follower
    delivered: list[tuple[float, list[dict[str, Any]]]] = []
    original = follower.deliver

    def recording(records: list[dict[str, Any]]) -> Any:
        delivered.append((time.time(), records))
        return original(records)

    follower.deliver = recording
    try:
        time.sleep(2.5)  # idle: the engine's minute-truncated time is then seconds before the write
        started = time.time()
        client.set_tag(run_id, "k", "v")
        client.get_run(run_id)  # delivers the tag's records (a run write's are delivered by the next request)
    finally:
        follower.deliver = original
    ours = [(at, r) for at, batch in delivered for r in batch if run_id in json.dumps(r["dynamodb"].get("Keys", {}))]
    assert ours, "the tag's stream record was not delivered before the next request"
    for at, record in ours:
        created = record["dynamodb"]["ApproximateCreationDateTime"]
        assert started <= created <= at, (started, created, at)
