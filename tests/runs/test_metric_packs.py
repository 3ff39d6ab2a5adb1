"""Metric history in packs (``metric_packs``): one item per metric and logging request, merged by position on read.

The pages a reader builds from packs keyed by their first point must be exactly the SQL store's: every distinct
(timestamp, step, value) once, in that order, however packs overlap (points logged out of order, re-logged in
another request, single points written before packs). A property test walks the paging over random packs; the
end-to-end tests compare with MLflow's own server.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import SK
from serverless_mlflow.store import metric_packs, run_metrics
from tests.conftest import unique
from tests.runs.conftest import Twin
from tests.runs.test_reference_api import _setup

_point = st.tuples(st.integers(0, 6), st.integers(-2, 3), st.sampled_from([0.0, 1.5, -2.0, math.inf, math.nan, 7.25]))


def _metrics(points: list[tuple[int, int, float]]) -> list[dict[str, Any]]:
    return [{"key": "m", "timestamp": t, "step": s, "value": v} for t, s, v in points]


def _page_through(items: list[dict[str, Any]], max_results: int) -> list[list[str]]:
    """Pages as get-history builds them (limit max_results + 1, resume where the token says), positions only."""
    pages: list[list[str]] = []
    after: str | None = None
    start_after: str | None = None
    while True:
        remaining = (item for item in items if start_after is None or item[SK] > start_after)
        found = metric_packs.first_points(remaining, after, max_results + 1, start_after)
        ordered = found.first()
        page = [at for at, _ in ordered[:max_results]]
        pages.append(page)
        if len(ordered) <= max_results:
            return pages
        after, start_after = page[-1], found.resume_after(page[-1])


@settings(max_examples=150, deadline=None)
@given(
    requests_points=st.lists(st.lists(_point, min_size=1, max_size=6), min_size=1, max_size=7),
    singles=st.lists(_point, max_size=4),
    max_results=st.integers(1, 5),
)
def test_pages_of_overlapping_packs_are_every_point_once_in_order(
    requests_points: list[list[tuple[int, int, float]]], singles: list[tuple[int, int, float]], max_results: int
) -> None:
    items = [item for points in requests_points for item in metric_packs.pack_items("r", _metrics(points))]
    # Points written one item each before packs existed share the partition.
    items += [run_metrics.history_item("r", m) for m in _metrics(singles)]
    items.sort(key=lambda item: item[SK])
    expected = sorted({metric_packs.position(t, s, v) for points in [*requests_points, singles] for t, s, v in points})
    pages = _page_through(items, max_results)
    assert [at for page in pages for at in page] == expected
    assert all(len(page) == max_results for page in pages[:-1])


def test_a_position_is_the_sort_key_of_a_point_item() -> None:
    for timestamp, step, value in [(0, 0, 0.0), (-5, 3, -0.0), (2**62, -(2**62), math.inf), (7, 1, math.nan), (1, 1, -math.inf)]:
        item = run_metrics.history_item("r", {"key": "m", "timestamp": timestamp, "step": step, "value": value})
        assert metric_packs.position(timestamp, step, value) == item[SK]


def test_a_pack_stops_reading_once_the_page_is_settled() -> None:
    # Ten requests logged in order: the first page of 3 needs the first pack and a look at the second's first point.
    items = [item for r in range(10) for item in metric_packs.pack_items("r", _metrics([(r * 10 + i, i, 1.0) for i in range(5)]))]
    read: list[str] = []

    def lazily() -> Any:
        for item in items:
            read.append(item[SK])
            yield item

    found = metric_packs.first_points(lazily(), None, 4, None)
    assert len(found.first()) == 4 and len(read) == 2


# --- end to end, against MLflow's own server --------------------------------------------------------------

_LOGGED = [
    # (endpoint, body): out of order across requests, a point re-logged in another request, a request re-sent.
    ("log-batch", [(500, 3, 1.0), (400, 2, 2.0), (600, 4, 0.5), (450, 2, float("nan"))]),
    ("log-batch", [(420, 1, 9.0), (500, 3, 1.0), (700, 5, float("inf")), (300, 0, -1.0)]),
    ("log-metric", [(410, 7, 3.0)]),
    ("log-metric", [(410, 7, 3.0)]),
    ("log-batch", [(420, 1, 9.0), (500, 3, 1.0), (700, 5, float("inf")), (300, 0, -1.0)]),
    ("log-batch", [(100, 9, 4.0), (800, 9, 4.0), (450, 2, 0.0)]),
]


def _json_value(value: float) -> Any:
    return "NaN" if math.isnan(value) else ("Infinity" if value == math.inf else value)


@pytest.mark.e2e
def test_history_of_overlapping_requests_like_mlflow(twin: Twin) -> None:
    _setup(twin)
    for endpoint, points in _LOGGED:
        if endpoint == "log-metric":
            (timestamp, step, value) = points[0]
            twin.same("POST", "runs/log-metric", {"run_id": "{run1}", "key": "p", "value": value, "timestamp": timestamp, "step": step})
        else:
            metrics = [{"key": "p", "value": _json_value(v), "timestamp": t, "step": s} for t, s, v in points]
            twin.same("POST", "runs/log-batch", {"run_id": "{run1}", "metrics": metrics})
    twin.same("GET", "metrics/get-history", query={"run_id": "{run1}", "metric_key": "p"}, ordered=True)
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})
    for max_results in (1, 2, 3, 5):
        pages: dict[str, list[Any]] = {}
        for side in ("ours", "reference"):
            pages[side], token = [], None
            while True:
                run_id = twin.ours_values["run1"] if side == "ours" else twin.reference_values["run1"]
                query = {"run_id": run_id, "metric_key": "p", "max_results": max_results, **({"page_token": token} if token else {})}
                if side == "ours":
                    body = twin.session.get(f"{twin.ours_url}/api/2.0/mlflow/metrics/get-history", params=query, timeout=30).json()
                else:
                    body = twin.reference.get("/api/2.0/mlflow/metrics/get-history", query_string=query).get_json()
                pages[side].append(body.get("metrics", []))
                token = body.get("next_page_token")
                if not token:
                    break
        assert pages["ours"] == pages["reference"], max_results
    for query in (
        {"run_ids": ["{run1}"], "metric_key": "p", "max_results": 3},
        {"run_ids": ["{run1}"], "metric_key": "p", "max_results": 7, "start_step": 2, "end_step": 5},
    ):
        twin.same("GET", "metrics/get-history-bulk-interval", query=query, ordered=True)


@pytest.mark.e2e
def test_a_batch_writes_one_history_item_per_key(client: Any, server: str) -> None:
    from mlflow.entities import Metric

    run_id = client.create_run(client.create_experiment(unique("packs"))).info.run_id
    client.log_batch(run_id, metrics=[Metric(f"k{i % 5}", float(i), 1000 + i, i // 5) for i in range(100)])
    client.log_batch(run_id, metrics=[Metric(f"k{i % 5}", float(i), 1000 + i, i // 5) for i in range(100)])  # re-sent
    client.log_metric(run_id, "k0", 0.5, timestamp=5, step=0)
    for k in range(5):
        stored = table.query(**metric_packs.PACK.query("of_metric", run_id=run_id, key=f"k{k}"))
        assert [item["count"] for item in stored] == ([1, 20] if k == 0 else [20])
        history = client.get_metric_history(run_id, f"k{k}")
        assert [m.value for m in history] == ([0.5] if k == 0 else []) + [float(i) for i in range(k, 100, 5)]
    answer = requests.get(f"{server}/api/2.0/mlflow/metrics/get-history", params={"run_id": run_id, "metric_key": "k1"}, timeout=30)
    assert len(answer.json()["metrics"]) == 20
