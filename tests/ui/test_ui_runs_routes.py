"""The UI-only run routes (``metrics/get-history-bulk``, ``experiments/search-datasets``) answer like
MLflow's own server (Flask handlers over SqlAlchemyStore on sqlite) holding the same data."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import requests

from tests.conftest import unique
from tests.runs.conftest import reference_client

pytestmark = pytest.mark.e2e


def _log(client: Any, name: str) -> dict[str, Any]:
    from mlflow.entities import Dataset, DatasetInput, InputTag

    experiment_id = client.create_experiment(name)
    run_ids = []
    for index in range(3):
        run_id = client.create_run(experiment_id).info.run_id
        for step in range(4):
            client.log_metric(run_id, "loss", (index + 1) / (step + 1), step=step, timestamp=100 + step)
            client.log_metric(run_id, "loss", 7.0, step=step, timestamp=100 + step)  # same time and step, other value
        dataset = Dataset(f"ds-{index % 2}", f"digest{index % 2}", "local", '{"uri": "x"}')
        # Contexts: ds-0 is logged for training and for evaluation, ds-1 without a context tag.
        tags = [[InputTag("mlflow.data.context", "training")], [], [InputTag("mlflow.data.context", "eval")]][index]
        client.log_inputs(run_id, [DatasetInput(dataset, tags)])
        run_ids.append(run_id)
    return {"experiment_id": experiment_id, "run_ids": run_ids}


@pytest.fixture(scope="module")
def pair(server: str) -> dict[str, Any]:
    import mlflow

    reference = reference_client()
    name = unique("bulk")
    store_uri = os.environ["_MLFLOW_SERVER_FILE_STORE"]
    return {
        "server": server,
        "reference": reference,
        "ours": _log(mlflow.MlflowClient(server, registry_uri=server), name),
        "theirs": _log(mlflow.MlflowClient(tracking_uri=store_uri, registry_uri=store_uri), name),
    }


def _history(pair: dict[str, Any], side: str, query: list[tuple[str, str]]) -> tuple[int, Any]:
    path = "/ajax-api/2.0/mlflow/metrics/get-history-bulk"
    if side == "ours":
        answer = requests.get(f"{pair['server']}{path}", params=query, timeout=30)
        return answer.status_code, answer.json()
    answer = pair["reference"].get(path, query_string=query)
    return answer.status_code, json.loads(answer.data)


def _grouped(pair: dict[str, Any], side: str, max_results: str | None) -> tuple[int, dict[int, list[Any]], list[str]]:
    """Points per run, keyed by the run's creation index (ids differ between the stores), plus run order."""
    run_ids = pair[side]["run_ids"]
    query = [("run_id", run_id) for run_id in run_ids] + [("metric_key", "loss")]
    if max_results:
        query.append(("max_results", max_results))
    status, body = _history(pair, side, query)
    grouped: dict[int, list[Any]] = {}
    for metric in body["metrics"]:
        grouped.setdefault(run_ids.index(metric["run_id"]), []).append({k: v for k, v in metric.items() if k != "run_id"})
    return status, grouped, list(dict.fromkeys(m["run_id"] for m in body["metrics"]))


def test_history_bulk_like_mlflow(pair: dict[str, Any]) -> None:
    ours_status, ours, ours_order = _grouped(pair, "ours", None)
    theirs_status, theirs, _ = _grouped(pair, "theirs", "100000")
    assert ours_status == theirs_status == 200
    assert ours == theirs and sum(len(points) for points in ours.values()) == 24
    assert ours_order == sorted(pair["ours"]["run_ids"])  # runs in id order, as the SQL store answers
    # max_results caps the whole answer: the first points in that order.
    _, capped, _ = _grouped(pair, "ours", "5")
    first = pair["ours"]["run_ids"].index(ours_order[0])
    assert capped == {first: ours[first][:5]}


def test_history_bulk_errors_like_mlflow(pair: dict[str, Any]) -> None:
    run_id = pair["ours"]["run_ids"][0]
    for query in ([("metric_key", "loss")], [("run_id", run_id)], [("run_id", str(i)) for i in range(101)] + [("metric_key", "m")]):
        (ours_status, ours), (theirs_status, theirs) = _history(pair, "ours", query), _history(pair, "theirs", query)
        assert ours_status == theirs_status == 400, query
        assert ours == theirs, query


def test_search_datasets(pair: dict[str, Any]) -> None:
    path = "/ajax-api/2.0/mlflow/experiments/search-datasets"
    ours = requests.post(f"{pair['server']}{path}", json={"experiment_ids": [pair["ours"]["experiment_id"]]}, timeout=30)
    theirs = pair["reference"].post(path, json={"experiment_ids": [pair["theirs"]["experiment_id"]]})

    def summaries(body: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted(tuple(sorted((k, v) for k, v in s.items() if k != "experiment_id")) for s in body["dataset_summaries"])

    assert ours.status_code == theirs.status_code == 200
    # One summary per (dataset, context), as MLflow's join of datasets, inputs and input tags answers.
    assert summaries(ours.json()) == summaries(json.loads(theirs.data))
    assert sorted((dict(s)["name"], dict(s).get("context")) for s in summaries(ours.json())) == [
        ("ds-0", "eval"),
        ("ds-0", "training"),
        ("ds-1", None),
    ]
    for body in ({"experiment_ids": []}, {"experiment_ids": [str(i) for i in range(21)]}):
        ours = requests.post(f"{pair['server']}{path}", json=body, timeout=30)
        theirs = pair["reference"].post(path, json=body)
        expected = json.loads(theirs.data)
        assert ours.status_code == theirs.status_code == 400
        assert ours.json() == expected
