"""Trace-name search by names per trace partition (``store.trace_names``), against MLflow's SqlAlchemyStore.

Many traces under a few names, over several hours and every write shard, are written through the stock client's
store to a local runtime whose indexer is PAUSED and to MLflow's sqlite store. Every name filter MLflow takes
(``=``, ``!=``, ``IN``, ``LIKE``, ``ILIKE``, ``RLIKE``) is paged to the end with the stock client and must give
MLflow's pages: before any indexing, after a rename while still paused, after the indexer caught up, and on a
table holding what an earlier release wrote (postings per trace, flagged infos, no name entries) before and after
the ``trace_names`` migration step.
"""

from __future__ import annotations

import os
import random
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.entities import TraceInfo, TraceLocation, TraceState

from serverless_mlflow.index import fts
from serverless_mlflow.index.derived import FLAG_ATTRIBUTE
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY_TYPE, TRACE_BUCKET_MS, TRACE_SHARDS, trace_shard
from serverless_mlflow.store import trace_names, trace_partitions
from tests.sqlite_template import migrated_sqlite
from tools import admin
from tools import trace_names as trace_names_step

pytestmark = pytest.mark.e2e
HOUR = TRACE_BUCKET_MS
BASE = 1_760_000_000_000 // HOUR * HOUR
NAMES = ["chat", "Chat-v2", "retrieve", None]
FILTERS = [
    "trace.name = 'chat'",
    "trace.name != 'retrieve'",
    "trace.name LIKE 'chat%'",
    "trace.name LIKE '%hat%'",
    "trace.name ILIKE '%CHAT%'",
    "trace.name ILIKE 'ch%'",
    "trace.name RLIKE '^re'",
    "trace.name LIKE '%e%' AND trace.status = 'OK'",
    "trace.name LIKE 'renamed%'",
]
ORDERS: list[list[str] | None] = [None, ["timestamp_ms ASC"]]


@pytest.fixture(scope="module")
def reference_uri() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="mlflow-ref-trace-names-") as directory:
        yield migrated_sqlite(os.path.join(directory, "mlflow.db"))


def _specs(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "trace_id": f"tr-{rng.getrandbits(128):032x}",
            "request_time": BASE + rng.choice([0, 1, 2, 5]) * HOUR + rng.choice([0, 77, HOUR - 1, rng.randrange(HOUR)]),
            "state": rng.choice([TraceState.OK, TraceState.ERROR]),
            "name": rng.choice(NAMES),
        }
        for _ in range(count)
    ]


def _write(uri: str, experiment_id: str, specs: list[dict[str, Any]]) -> None:
    store = MlflowClient(uri)._tracing_client.store
    for spec in specs:
        tags = {} if spec["name"] is None else {"mlflow.traceName": spec["name"]}
        info = TraceInfo(
            trace_id=spec["trace_id"],
            trace_location=TraceLocation.from_experiment_id(experiment_id),
            request_time=spec["request_time"],
            execution_duration=5,
            state=spec["state"],
            tags=tags,
        )
        store.start_trace(info)


def _pages(uri: str, experiment_id: str, filter_string: str, order_by: list[str] | None) -> list[Any]:
    client, pages, token = MlflowClient(uri), [], None
    while True:
        page = client.search_traces(
            locations=[experiment_id], filter_string=filter_string, order_by=order_by, max_results=7, page_token=token, include_spans=False
        )
        pages.append(([t.info.trace_id for t in page], bool(page.token)))
        token = page.token
        if not token or len(pages) > 100:
            return pages


def _check(ours: tuple[str, str], reference: tuple[str, str]) -> None:
    for filter_string in FILTERS:
        for order_by in ORDERS:
            expected = _pages(*reference, filter_string, order_by)
            assert _pages(*ours, filter_string, order_by) == expected, (filter_string, order_by)


def _partition_items(experiment_id: str) -> list[dict[str, Any]]:
    return [i for p in trace_partitions.partitions(experiment_id) for i in table.query(p.pk)]


def _setup(runtime: Any, reference_uri: str, count: int, seed: int) -> tuple[tuple[str, str], tuple[str, str], list[dict[str, Any]]]:
    name = f"names-{uuid.uuid4().hex[:8]}"
    ours = (runtime.url, MlflowClient(runtime.url).create_experiment(name))
    reference = (reference_uri, MlflowClient(reference_uri).create_experiment(name))
    specs = _specs(count, seed)
    _write(*reference, specs)
    _write(*ours, specs)
    return ours, reference, specs


# 11 minutes on the 2-core CI box (every filter, both orders, page by page against SqlAlchemyStore): `make test-long`.
# `make test` keeps name filters over every shard in tests/traces/test_search_partitions.py.
@pytest.mark.long
def test_name_searches_exact_with_the_indexer_paused_and_after(paused_runtime, reference_uri: str) -> None:
    ours, reference, specs = _setup(paused_runtime, reference_uri, 120, seed=5)
    assert {trace_shard(s["trace_id"]) for s in specs} == set(range(TRACE_SHARDS))
    items = _partition_items(ours[1])
    # One entry per distinct (partition, name), no postings, no flags: nothing for the indexer to do for names.
    entries = {(i["pk"], i["trace_name"]) for i in items if i[ENTITY_TYPE] == trace_names.ENTRY.name}
    named = {(i["pk"], i["trace_name"]) for i in items if i[ENTITY_TYPE] == "trace" and i.get("trace_name") is not None}
    assert entries == named
    assert not [i for i in items if i[ENTITY_TYPE] in ("fts_forward", "fts_reverse") or FLAG_ATTRIBUTE in i]
    _check(ours, reference)

    # Renamed while still paused: a new name (its entry first), then the indexer catches up.
    for spec in specs[:6]:
        for uri in (ours[0], reference[0]):
            MlflowClient(uri).set_trace_tag(spec["trace_id"], "mlflow.traceName", f"renamed-{spec['name']}")
    _check(ours, reference)
    paused_runtime.indexer_mode = "sync"
    paused_runtime.drain_stream()
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0, report.summary()
    assert not [i for i in _partition_items(ours[1]) if i[ENTITY_TYPE] in ("fts_forward", "fts_reverse")]
    _check(ours, reference)


def _as_earlier_release(experiment_id: str) -> int:
    """Make the experiment's partitions what the previous release left: no name entries; every other named trace
    posted (trigram postings in its partition), the rest flagged "not yet indexed". Returns how many are flagged."""
    flagged = 0
    for partition in trace_partitions.partitions(experiment_id):
        items = table.query(partition.pk)
        table.batch_write(deletes=[{"pk": i["pk"], "sk": i["sk"]} for i in items if i[ENTITY_TYPE] == trace_names.ENTRY.name])
        for n, info in enumerate(i for i in items if i[ENTITY_TYPE] == "trace" and i.get("trace_name") is not None):
            if n % 2:
                flag = COLLECTIONS["unindexed"].sk_attr
                table.update(
                    {"pk": info["pk"], "sk": info["sk"]}, "SET #f = :f", names={"#f": flag}, values={":f": f"U#1#T#{info['trace_id']}"}
                )
                flagged += 1
                continue
            postings = [
                item
                for level, token in fts.name_tokens(info["trace_name"])
                for item in fts.posting_items(partition.pk, fts.TRACE, info["trace_id"], level, token)
            ]
            table.batch_write(puts=postings)
    return flagged


@pytest.mark.long  # 7 minutes on the 2-core CI box: `make test-long`
def test_a_table_of_the_earlier_release_searches_exactly_and_migrates(paused_runtime, reference_uri: str) -> None:
    ours, reference, _ = _setup(paused_runtime, reference_uri, 80, seed=11)
    paused_runtime.indexer_mode = "sync"
    paused_runtime.drain_stream()
    assert _as_earlier_release(ours[1]) > 0
    table.update(layout.LAYOUT_KEY, "DELETE steps :s", values={":s": {layout.TRACE_NAMES}})
    layout.forget()
    assert not layout.trace_names_complete()
    _check(ours, reference)  # the old postings and flags are read as well

    progress = trace_names_step.run([ours[1]])
    layout.forget()
    assert layout.trace_names_complete() and progress.flags_cleared > 0 and progress.postings_removed > 0
    items = _partition_items(ours[1])
    assert not [i for i in items if i[ENTITY_TYPE] in ("fts_forward", "fts_reverse") or FLAG_ATTRIBUTE in i]
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0, report.summary()
    _check(ours, reference)
