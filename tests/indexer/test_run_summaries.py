"""Run summaries (one derived item per run) never show a stale run: searches answered from them equal MLflow's
own store with the indexer paused after every kind of change to a run, and again once it catches up.

Each change below reaches a run's range without passing through the summary: the summary is rebuilt only by
the indexer, so while it is paused searches must notice the change (a flagged item of the run) and read the
run's range instead. After the indexer runs, the summaries hold every change and ``admin verify`` agrees.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from serverless_mlflow.index import run_summaries
from serverless_mlflow.storage import table
from serverless_mlflow.store import runs as store_runs
from tests.runs.test_search_differential import _logical
from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

SEARCHES: list[tuple[str, list[str] | None]] = [
    ("", None),  # start-time plan
    ("", ["metrics.acc DESC"]),  # rank plan
    ("metrics.acc > 0.1", ["metrics.acc ASC"]),  # ordered range
    ("params.p = 'b'", ["metrics.acc DESC"]),  # ordered candidates
    ("tags.stage = 'prod'", None),  # candidates
    ("metrics.acc > -10 AND tags.stage LIKE 'p%'", ["metrics.acc DESC"]),  # ordered range, verified by the tag
    ("attributes.status = 'FINISHED'", None),  # start-time plan on the status LSI
]


def _shape(run: Any) -> dict[str, Any]:
    return {
        **_logical(run),
        "model_inputs": sorted(m.model_id for m in run.inputs.model_inputs),
        "model_outputs": sorted((m.model_id, m.step) for m in run.outputs.model_outputs),
    }


def _pages(target: Any, experiment_id: str, filter_string: str, view: int, order_by: list[str] | None) -> list[dict[str, Any]]:
    """Every page of a search (``target``: our client or MLflow's store), three runs at a time."""
    out, token = [], None
    while True:
        page = target.search_runs([experiment_id], filter_string, view, 3, order_by, token)
        out += [_shape(run) for run in page]
        token = page.token
        if not token:
            return out


def _compare(client: Any, store: Any, pair: tuple[str, str]) -> None:
    from mlflow.entities import ViewType

    for filter_string, order_by in SEARCHES:
        for view in (ViewType.ACTIVE_ONLY, ViewType.ALL):
            ours = _pages(client, pair[0], filter_string, view, order_by)
            theirs = _pages(store, pair[1], filter_string, view, order_by)
            assert len(ours) == len(theirs), (filter_string, order_by, view)
            for a, b in zip(ours, theirs, strict=True):
                assert a == b, (filter_string, order_by, view, {k: (a[k], b[k]) for k in a if a[k] != b[k]})


def test_searches_show_every_change_while_the_indexer_lags(paused_runtime: Any, tmp_path: Path) -> None:
    import mlflow
    from mlflow.entities import Dataset, DatasetInput, InputTag, LoggedModelInput, LoggedModelOutput, Metric, Param, RunStatus, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    rest = client._tracking_client.store
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    tag = uuid.uuid4().hex[:6]
    pair = (client.create_experiment(f"sum-{tag}"), store.create_experiment(f"sum-{tag}"))
    runs: list[tuple[str, str]] = []
    for i in range(8):
        tags = [RunTag("ref", str(i)), RunTag("mlflow.user", "u"), RunTag("stage", ["prod", "dev", "pre"][i % 3])]
        ours = client.create_run(pair[0], start_time=1000 + i, tags={t.key: t.value for t in tags}, run_name=f"r{i}").info.run_id
        theirs = store.create_run(pair[1], "u", 1000 + i, tags, f"r{i}").info.run_id
        metrics, params = [Metric("acc", i / 8, 1, 0)], [Param("p", "b" if i % 2 else "a")]
        rest.log_batch(ours, metrics, params, [])
        store.log_batch(theirs, metrics, params, [])
        runs.append((ours, theirs))

    def both(change: Any) -> None:
        for index, (ours, theirs) in enumerate(runs):
            change(rest, ours, index)
            change(store, theirs, index)

    _compare(client, store, pair)  # nothing indexed: no summary yet
    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare(client, store, pair)  # every run answered from its summary

    # One kind of change per run, none of them indexed yet.
    changes = {
        0: lambda s, run, _: s.delete_tag(run, "stage"),
        1: lambda s, run, _: s.log_inputs(
            run, [DatasetInput(Dataset("d", "dg", "local", "src"), [InputTag("mlflow.data.context", "train")])]
        ),
        2: lambda s, run, _: s.log_outputs(run, [LoggedModelOutput("m-out", 3)]),
        3: lambda s, run, _: s.log_inputs(run, [], models=[LoggedModelInput("m-in")]),
        4: lambda s, run, _: s.update_run_info(run, RunStatus.FINISHED, 5000, None),
        5: lambda s, run, _: s.log_metric(run, Metric("acc", 9.5, 2, 1)),
        6: lambda s, run, _: s.set_tag(run, RunTag("stage", "prod-late")),
        7: lambda s, run, _: s.delete_run(run),
    }
    both(lambda s, run, index: changes[index](s, run, index))
    _compare(client, store, pair)

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare(client, store, pair)
    # Every run's summary now holds its whole range (what verify recomputes), and no flag is left.
    for ours, _ in runs:
        summary = table.get(run_summaries.key(pair[0], ours))
        assert summary is not None and not summary.get("oversize")
        assert summary["items"] == run_summaries.content(
            table.query(**store_runs.RUN.query("with_data", experiment_id=pair[0], run_id=ours))
        )
    assert run_summaries.flagged_runs(table.query(**_unindexed(pair[0]))) == set()

    # A restored run, untagged again, while paused: its flag sends searches to its range.
    both(lambda s, run, index: s.restore_run(run) if index == 7 else None)
    both(lambda s, run, index: s.delete_tag(run, "stage") if index in (2, 6) else None)
    _compare(client, store, pair)


def _unindexed(experiment_id: str) -> dict[str, Any]:
    from serverless_mlflow.storage.schema import COLLECTIONS

    return dict(COLLECTIONS["unindexed"].query(scope=store_runs.RUN.pk.render({"experiment_id": experiment_id})))


def test_a_run_too_large_for_one_item_is_read_from_its_range(paused_runtime: Any) -> None:
    """Params up to MLflow's 6,000 characters: 80 of them do not fit one 400 KB item. The summary says so
    (``oversize``) and searches read the run's range."""
    import mlflow
    from mlflow.entities import Param

    client = mlflow.MlflowClient(paused_runtime.url)
    experiment_id = client.create_experiment(f"big-{uuid.uuid4().hex[:6]}")
    run_id = client.create_run(experiment_id).info.run_id
    params = [Param(f"p{i:03d}", chr(0x4E00 + i) * 6000) for i in range(80)]  # 18 KB each in UTF-8
    for start in range(0, len(params), 50):
        client.log_batch(run_id, params=params[start : start + 50])
    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    summary = table.get(run_summaries.key(experiment_id, run_id))
    assert summary is not None and summary["oversize"] is True and "items" not in summary
    (found,) = client.search_runs([experiment_id], f"params.p001 = '{params[1].value}'", max_results=5)
    assert found.data.params == {p.key: p.value for p in params}
