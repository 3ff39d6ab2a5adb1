"""search_runs pages over Lambda's 6 MB response: the page ends early with a next_page_token.

Runs carrying large params and tags (about 0.7 MB of JSON each) are searched with max_results 1000
through every plan (start time, rank, RANK-served filter, full). Our server must answer each page
under the local runtime's 6 MB response cap (which answers 500 like API Gateway otherwise), and the
pages together must hold every run exactly once, in the order MLflow's SqlAlchemyStore gives in one page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from tests.conftest import unique
from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

N_RUNS = 20
PARAMS_PER_RUN = 100
PARAM_CHARS = 6000  # MLflow's longest param value
TAG_CHARS = 8000  # MLflow's longest tag value
SEARCHES = [
    ("", None),  # start-time plan
    ("", ["metrics.m DESC"]),  # rank plan
    ("params.p0 LIKE 'x%'", ["metrics.m ASC"]),  # RANK-served filter, candidates
    ("metrics.m >= 0", ["metrics.m DESC"]),  # RANK-served filter, ordered range
    ("tags.t0 != 'nothing'", ["attributes.start_time ASC"]),  # full plan
]


def _pages(search: Any) -> list[list[str]]:
    pages, token = [], None
    while True:
        page = search(token)
        pages.append([run.data.tags["ref"] for run in page])
        token = page.token
        if not token:
            return pages


def test_pages_over_six_megabytes_continue_by_token(server: str, tmp_path: Path) -> None:
    client = mlflow.MlflowClient(server)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    name = unique("large")
    ours_exp, ref_exp = client.create_experiment(name), store.create_experiment(name)
    for i in range(N_RUNS):
        params = [Param(f"p{k}", f"x{i}-{k}-" + "v" * (PARAM_CHARS - 12)) for k in range(PARAMS_PER_RUN)]
        tags = [RunTag("ref", f"r{i}"), *(RunTag(f"t{k}", "é" * TAG_CHARS) for k in range(3))]
        metrics = [Metric("m", float((i * 7) % N_RUNS), 1, 0)]
        ours = client.create_run(ours_exp, start_time=1000 + i).info.run_id
        theirs = store.create_run(ref_exp, "u", 1000 + i, [], f"run-{i}").info.run_id
        client.log_batch(ours, metrics=metrics, params=params, tags=tags)
        store.log_batch(theirs, metrics=metrics, params=params, tags=tags)
    one_run = json.dumps(client.get_run(client.search_runs([ours_exp], max_results=1)[0].info.run_id).to_dictionary())
    assert len(one_run) * N_RUNS > 2 * 6 * 1024 * 1024  # the whole result needs at least three responses

    for filter_string, order_by in SEARCHES:
        ours = _pages(lambda token, f=filter_string, o=order_by: client.search_runs([ours_exp], f, ViewType.ACTIVE_ONLY, 1000, o, token))
        theirs = [run.data.tags["ref"] for run in store.search_runs([ref_exp], filter_string, ViewType.ACTIVE_ONLY, 1000, order_by)]
        flat = [ref for page in ours for ref in page]
        assert len(theirs) == N_RUNS
        assert flat == theirs, (filter_string, order_by)  # every run once, MLflow's order
        assert len(ours) >= 3 and all(ours), (filter_string, order_by, [len(p) for p in ours])
