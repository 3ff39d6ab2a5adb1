"""Filtered search_runs ordered by a metric, param or tag (``index_plan._ordered_candidates``) equals MLflow's store.

The candidates of the driving RANK range are sorted on the order key alone and verified a few whole groups of
equal value at a time; pages skip the candidates before the token's value unread. Enough candidates (40) for
several verification chunks at max_results 5, many ties on the order key, runs lacking it,
NaN and infinities (start_time breaks the ties; it is unique, as run ids differ between the stores); compared page by page with the indexer paused (nothing indexed), drained, and after
changes while it lags (new latest values, a deleted tag, a deleted and a restored run, a new run).
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

ACC = [0.1, 0.2, 0.2, math.nan, None, 0.3, -math.inf, 0.2, math.inf, 0.1]
STAGES = ["prod", None, "dev", "prod", "prod-x"]
SEARCHES = [
    ("params.p = 'b'", ["metrics.acc DESC"]),
    ("params.p = 'b'", ["metrics.acc ASC", "params.q DESC"]),
    ("params.p = 'b'", ["tags.stage DESC"]),
    ("params.p = 'b'", ["params.q ASC"]),
    ("params.p LIKE 'b%'", ["params.p DESC"]),
    ("tags.stage = 'prod' AND params.p = 'b'", ["metrics.acc ASC"]),
    ("params.p = 'b' AND metrics.acc > 0.1", ["params.q DESC"]),
]
PAGE_SIZES = [5, 50]


def _create(client: Any, store: Any, pair: tuple[str, str], i: int) -> tuple[str, str]:
    from mlflow.entities import Metric, Param, RunTag

    name = f"run-{i}"
    start = 1000 + (i * 37) % 101  # unique (run ids differ between the stores), not in creation order
    ours = client.create_run(pair[0], start_time=start, run_name=name, tags={"ref": name}).info.run_id
    theirs = store.create_run(pair[1], "u", start, [RunTag("ref", name)], name).info.run_id
    acc = ACC[i % len(ACC)]
    metrics = [] if acc is None else [Metric("acc", acc, 1, 0)]
    params = [Param("p", "b" if i % 3 else "bb" if i % 2 else "c"), Param("q", f"q{i % 4}")]
    stage = STAGES[i % len(STAGES)]
    tags = [] if stage is None else [RunTag("stage", stage)]
    client.log_batch(ours, metrics=metrics, params=params, tags=tags)
    store.log_batch(theirs, metrics=metrics, params=params, tags=tags)
    return ours, theirs


def _pages(search: Any, max_results: int) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = search(max_results, token)
        names += [run.data.tags["ref"] for run in page]
        token = page.token
        if not token:
            return names


def _compare(client: Any, store: Any, pair: tuple[str, str]) -> int:
    from mlflow.entities import ViewType

    compared = 0
    for filter_string, order_by in SEARCHES:
        for max_results in PAGE_SIZES:
            ours = _pages(
                lambda n, t, f=filter_string, o=order_by: client.search_runs([pair[0]], f, max_results=n, order_by=o, page_token=t),
                max_results,
            )
            theirs = _pages(
                lambda n, t, f=filter_string, o=order_by: store.search_runs([pair[1]], f, ViewType.ACTIVE_ONLY, n, o, t), max_results
            )
            assert ours == theirs, (filter_string, order_by, max_results)
            compared += len(ours)
    return compared


@pytest.mark.long
def test_candidates_ordered_by_another_key_match_reference_page_by_page(paused_runtime: Any, tmp_path: Any) -> None:
    import mlflow
    from mlflow.entities import Metric, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    tag = uuid.uuid4().hex[:6]
    pair = (client.create_experiment(f"ordc-{tag}"), store.create_experiment(f"ordc-{tag}"))
    runs = [_create(client, store, pair, i) for i in range(60)]

    assert _compare(client, store, pair) > 300  # nothing indexed: every candidate comes from a flagged source
    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare(client, store, pair)  # everything indexed: candidates from RANK items

    # While the index lags: new latest values (ties moved), a deleted tag, a deleted run, a restored run, a new run.
    for (ours, theirs), value in zip(runs[1:7], [0.3, math.nan, 0.1, -1.0, 0.2, 0.2], strict=True):
        client.log_metric(ours, "acc", value, timestamp=2, step=1)
        store.log_metric(theirs, Metric("acc", value, 2, 1))
    client.set_tag(runs[10][0], "stage", "prod")
    store.set_tag(runs[10][1], RunTag("stage", "prod"))
    client.delete_tag(runs[15][0], "stage")
    store.delete_tag(runs[15][1], "stage")
    client.delete_run(runs[4][0])
    store.delete_run(runs[4][1])
    client.delete_run(runs[8][0])
    store.delete_run(runs[8][1])
    client.restore_run(runs[8][0])
    store.restore_run(runs[8][1])
    runs.append(_create(client, store, pair, 61))
    _compare(client, store, pair)

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare(client, store, pair)
