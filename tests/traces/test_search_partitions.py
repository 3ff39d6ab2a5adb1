"""search_traces across trace partitions (hours and write shards) against SqlAlchemyStore, page by page.

The same traces (same ids, request times, durations, states, names, tags, metadata) are written through the
stock client's store to our server and to MLflow's SqlAlchemyStore (sqlite). Their request times spread over
tens of hours with ties inside one millisecond, and their ids over every write shard, so every search below
walks several hours, merges shards, and pages across hour boundaries. Each search is paged to the end with
the stock client; the pages (trace ids in order) and where tokens appear must be MLflow's exactly.
"""

from __future__ import annotations

import random
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import TraceInfo, TraceLocation, TraceState

from serverless_mlflow.storage.schema import TRACE_BUCKET_MS, TRACE_SHARDS, trace_bucket, trace_shard
from tests.conftest import unique

# The module's stores are built once, on one worker (xdist would otherwise build them on each).
pytestmark = pytest.mark.xdist_group("trace-search-partitions")
HOUR = TRACE_BUCKET_MS
BASE = 1_750_000_000_000 // HOUR * HOUR  # an hour boundary
STATES = [TraceState.OK, TraceState.OK, TraceState.ERROR, TraceState.IN_PROGRESS]


def _traces(count: int, seed: int) -> list[dict[str, Any]]:
    """Trace specs: ids fixed (the same in both stores), times over ~30 hours with same-millisecond ties."""
    rng = random.Random(seed)
    out = []
    for _i in range(count):
        hour = rng.choice([0, 0, 1, 2, 5, 6, 7, 11, 17, 23, 24, 29])
        # Ties: a few shared milliseconds, and times right at an hour's first and last millisecond.
        offset = rng.choice([0, HOUR - 1, 1234, 1234, 5678, rng.randrange(HOUR)])
        out.append(
            {
                "trace_id": f"tr-{rng.getrandbits(128):032x}",
                "request_time": BASE + hour * HOUR + offset,
                "execution_duration": rng.choice([5, 5, 17, 250, 1000, rng.randrange(2000)]),
                "state": rng.choice(STATES),
                "name": rng.choice(["agent-1", "agent-2", "agent-10", "retriever", None]),
                "team": rng.choice(["t1", "t2", None]),
                "metadata": rng.choice([{"user": "u1"}, {"user": "u2"}, {}]),
            }
        )
    return out


def _write(uri: str, experiment_ids: list[str], specs: list[dict[str, Any]]) -> None:
    store = MlflowClient(uri)._tracing_client.store
    for i, spec in enumerate(specs):
        tags = {"label": str(i)}
        if spec["name"] is not None:
            tags["mlflow.traceName"] = spec["name"]
        if spec["team"] is not None:
            tags["team"] = spec["team"]
        store.start_trace(
            TraceInfo(
                trace_id=spec["trace_id"],
                trace_location=TraceLocation.from_experiment_id(experiment_ids[i % len(experiment_ids)]),
                request_time=spec["request_time"],
                execution_duration=spec["execution_duration"],
                state=spec["state"],
                trace_metadata=dict(spec["metadata"]),
                tags=tags,
            )
        )


def _pages(uri: str, experiment_ids: list[str], filter_string: str | None, order_by: list[str] | None, size: int) -> list[Any]:
    client = MlflowClient(uri)
    pages: list[Any] = []
    token = None
    while True:
        page = client.search_traces(
            locations=experiment_ids,
            filter_string=filter_string,
            order_by=order_by,
            max_results=size,
            page_token=token,
            include_spans=False,
        )
        pages.append(([t.info.trace_id for t in page], bool(page.token)))
        token = page.token
        if not token or len(pages) > 200:
            return pages


FILTERS = [
    None,
    "trace.status = 'ERROR'",
    "trace.status IN ('OK', 'IN_PROGRESS')",
    "trace.name = 'agent-1'",
    "trace.name != 'agent-2'",
    "trace.name LIKE 'agent-1%'",
    "trace.name ILIKE '%AGENT-1_'",
    "trace.name RLIKE '^(agent-2|retr)'",
    "tag.team = 't2'",
    "metadata.user = 'u1'",
    f"trace.timestamp_ms >= {BASE + 2 * HOUR} AND trace.timestamp_ms < {BASE + 24 * HOUR}",
    f"trace.status = 'OK' AND trace.timestamp_ms > {BASE + 5 * HOUR + 1234}",
    "trace.execution_time_ms > 200",
]
ORDERS = [
    None,
    ["timestamp_ms ASC"],
    ["execution_time_ms DESC"],
    ["execution_time_ms ASC"],
    ["status"],
    ["status DESC"],
    ["name"],
    ["name DESC"],
    ["execution_time_ms DESC", "name"],
    ["tag.team"],
]


@pytest.fixture(scope="module")
def stores(server: str, reference_uri: str) -> dict[str, list[str]]:
    """Two experiments per store, holding the same traces."""
    specs = _traces(90, seed=24)  # a seed whose ids fall in every one of the 32 shards
    out = {}
    for uri in (server, reference_uri):
        mlflow.set_tracking_uri(uri)
        experiment_ids = [mlflow.create_experiment(unique("partitions")) for _ in range(2)]
        _write(uri, experiment_ids, specs)
        out[uri] = experiment_ids
    mlflow.set_tracking_uri(server)
    # The spread this module is about: many hours, every shard, ties inside a millisecond.
    assert len({trace_bucket(s["request_time"]) for s in specs}) >= 10
    assert {trace_shard(s["trace_id"]) for s in specs} == set(range(TRACE_SHARDS))
    assert len({s["request_time"] for s in specs}) < len(specs)
    return out


@pytest.mark.parametrize("order_by", ORDERS, ids=[",".join(o) if o else "default" for o in ORDERS])
def test_every_filter_pages_like_sqlalchemy_store(
    stores: dict[str, list[str]], server: str, reference_uri: str, order_by: list[str] | None
) -> None:
    for filter_string in FILTERS:
        ours = _pages(server, stores[server][:1], filter_string, order_by, 7)
        theirs = _pages(reference_uri, stores[reference_uri][:1], filter_string, order_by, 7)
        assert ours == theirs, (filter_string, order_by)
    everything = _pages(server, stores[server][:1], None, order_by, 7)
    assert sum(len(ids) for ids, _ in everything) == 45 and len(everything) >= 7


@pytest.mark.parametrize("size", [1, 10, 45, 100])
def test_page_sizes_and_two_experiments_page_like_sqlalchemy_store(
    stores: dict[str, list[str]], server: str, reference_uri: str, size: int
) -> None:
    for order_by in (None, ["timestamp_ms ASC"], ["execution_time_ms DESC"]):
        ours = _pages(server, stores[server], None, order_by, size)
        assert ours == _pages(reference_uri, stores[reference_uri], None, order_by, size), (size, order_by)
        assert sum(len(ids) for ids, _ in ours) == 90


def test_a_page_token_of_one_order_is_refused_by_another(stores: dict[str, list[str]], server: str) -> None:
    client = MlflowClient(server)
    page = client.search_traces(locations=stores[server][:1], max_results=5, include_spans=False)
    assert page.token
    with pytest.raises(mlflow.exceptions.MlflowException) as refused:
        client.search_traces(
            locations=stores[server][:1], max_results=5, order_by=["timestamp_ms ASC"], page_token=page.token, include_spans=False
        )
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"
