"""Races and retries over HTTP: concurrent writers keep MLflow's rules, and retried requests converge."""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.conftest import unique

pytestmark = pytest.mark.e2e

API = "/api/2.0/mlflow"
MAX_DOUBLE = 1.7976931348623157e308


def _post(server: str, path: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server}{API}/{path}", json=body, timeout=60)


def _run(server: str) -> str:
    experiment_id = _post(server, "experiments/create", {"name": unique("race")}).json()["experiment_id"]
    return _post(server, "runs/create", {"experiment_id": experiment_id, "start_time": 1}).json()["run"]["info"]["run_id"]


def _get_run(server: str, run_id: str) -> dict[str, Any]:
    return requests.get(f"{server}{API}/runs/get", params={"run_id": run_id}, timeout=60).json()["run"]


def _rank(point: dict[str, Any]) -> tuple[int, int, float]:
    value = float(point["value"])
    value = 0.0 if math.isnan(value) else max(-MAX_DOUBLE, min(MAX_DOUBLE, value))
    return (point["step"], point["timestamp"], value)


def test_concurrent_log_metric_keeps_the_latest_metric_rule(server: str) -> None:
    run_id = _run(server)
    rng = random.Random(7)
    points = [
        {
            "key": "m",
            "value": rng.choice([rng.uniform(-5, 5), "NaN", "Infinity", 0.0]),
            "timestamp": rng.randint(1, 4),
            "step": rng.randint(0, 3),
        }
        for _ in range(48)
    ]
    # Distinct (step, timestamp, value) so the expected latest value is unique.
    unique_points = list({(_rank(p), str(p["value"])): p for p in points}.values())
    ranks = [_rank(p) for p in unique_points]
    expected = unique_points[ranks.index(max(ranks))] if ranks.count(max(ranks)) == 1 else None

    def log(point: dict[str, Any]) -> int:
        return _post(server, "runs/log-metric", {"run_id": run_id, **point}).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(log, unique_points)) == {200}
    [latest] = _get_run(server, run_id)["data"]["metrics"]
    assert _rank(latest) == max(ranks)
    if expected is not None:
        assert str(latest["value"]) == str(expected["value"]) or float(latest["value"]) == float(expected["value"])
    history = requests.get(f"{server}{API}/metrics/get-history", params={"run_id": run_id, "metric_key": "m"}, timeout=60).json()["metrics"]
    assert len(history) == len(unique_points)


def test_concurrent_batches_over_shared_keys(server: str) -> None:
    run_id = _run(server)
    batches = [[{"key": f"k{j}", "value": float(b * 10 + j), "timestamp": 100 + b, "step": b % 3} for j in range(4)] for b in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        codes = list(pool.map(lambda metrics: _post(server, "runs/log-batch", {"run_id": run_id, "metrics": metrics}).status_code, batches))
    assert set(codes) == {200}
    latest = {m["key"]: m for m in _get_run(server, run_id)["data"]["metrics"]}
    for j in range(4):
        best = max((p for batch in batches for p in batch if p["key"] == f"k{j}"), key=_rank)
        assert (latest[f"k{j}"]["step"], latest[f"k{j}"]["timestamp"], latest[f"k{j}"]["value"]) == (
            best["step"],
            best["timestamp"],
            best["value"],
        )


def test_concurrent_param_writes_have_one_winner(server: str) -> None:
    run_id = _run(server)
    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(lambda v: _post(server, "runs/log-parameter", {"run_id": run_id, "key": "p", "value": str(v)}), range(6)))
    winners = [str(v) for v, r in enumerate(responses) if r.status_code == 200]
    assert len(winners) == 1
    assert all(r.json()["error_code"] == "INVALID_PARAMETER_VALUE" for r in responses if r.status_code != 200)
    assert _get_run(server, run_id)["data"]["params"] == [{"key": "p", "value": winners[0]}]


def test_retried_requests_converge(server: str) -> None:
    run_id = _run(server)
    batch = {
        "run_id": run_id,
        "metrics": [{"key": "m", "value": float(i), "timestamp": 10 + i, "step": i} for i in range(30)],
        "params": [{"key": "p", "value": "1"}],
        "tags": [{"key": "t", "value": "v"}],
    }
    for _ in range(3):  # the client retrying a request whose answer it never saw
        assert _post(server, "runs/log-batch", batch).status_code == 200
        assert _post(server, "runs/set-tag", {"run_id": run_id, "key": "t2", "value": "w"}).status_code == 200
        assert (
            _post(server, "runs/log-metric", {"run_id": run_id, "key": "single", "value": 1.5, "timestamp": 5, "step": 0}).status_code
            == 200
        )
    # A late retry of an older point does not replace a newer latest value.
    assert _post(server, "runs/log-metric", {"run_id": run_id, "key": "m", "value": 0.0, "timestamp": 10, "step": 0}).status_code == 200
    run = _get_run(server, run_id)
    assert {m["key"]: (m["step"], m["value"]) for m in run["data"]["metrics"]} == {"m": (29, 29.0), "single": (0, 1.5)}
    assert {"t": "v", "t2": "w"}.items() <= {t["key"]: t["value"] for t in run["data"]["tags"]}.items()
    assert run["data"]["params"] == [{"key": "p", "value": "1"}]
    history = requests.get(f"{server}{API}/metrics/get-history", params={"run_id": run_id, "metric_key": "m"}, timeout=60).json()["metrics"]
    assert len(history) == 30
    single = requests.get(f"{server}{API}/metrics/get-history", params={"run_id": run_id, "metric_key": "single"}, timeout=60).json()[
        "metrics"
    ]
    assert len(single) == 1
