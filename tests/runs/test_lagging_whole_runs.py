"""Issue 39 item 4: a lagging search assembles a run all of whose items are still flagged (``whole_on_lsi5``) from
the LSI5 items it read; every other flagged run is read from its range. Either way the answer is the run as it is.

Runs in every state a sweep can leave them in, written in-process with the stream not drained (the indexer has
seen none of the writes after ``drain_stream``): the lagging answers must equal the answers once indexed (read
from the summaries) and each run's get_run.
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import data, inputs, lifecycle, search

from serverless_mlflow.index import run_summaries
from serverless_mlflow.store import runs as store
from tests.runs.test_costs import _experiment

pytestmark = pytest.mark.e2e

FILTERS = ("", "metrics.m >= 0", "params.p LIKE '%'", "tags.t != 'zzz'", "params.p = 'v'", "metrics.m > 1.5")
ORDERS = ([], ["metrics.m DESC"], ["params.p"])


def _run(experiment_id: str, name: str) -> str:
    run_id = lifecycle.create_run({"experiment_id": experiment_id, "start_time": 1000 + len(name), "run_name": name})["run"]["info"][
        "run_id"
    ]
    data.log_batch(
        {
            "run_id": run_id,
            "metrics": [{"key": "m", "value": 1.0, "timestamp": 1, "step": 0}, {"key": "n", "value": 5.0, "timestamp": 1, "step": 0}],
            "params": [{"key": "p", "value": "v"}],
            "tags": [{"key": "t", "value": "a"}, {"key": "u", "value": "b"}],
        },
        {},
    )
    return run_id


def _dataset_input() -> dict[str, Any]:
    dataset = {"name": "d", "digest": "x1", "source_type": "local", "source": "{}"}
    return {"dataset": dataset, "tags": [{"key": "mlflow.data.context", "value": "train"}]}


def _searches(experiment_id: str) -> dict[tuple[str, tuple[str, ...]], dict[str, Any]]:
    return {
        (filter_string, tuple(order)): search.search_runs(
            {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": order, "max_results": 100, "run_view_type": 3}
        )
        for filter_string in FILTERS
        for order in ORDERS
    }


def test_flagged_runs_read_from_their_lsi5_items_or_their_range_are_the_runs_as_they_are(server: str, local_runtime: Any) -> None:
    experiment_id = _experiment(server)
    indexed = _run(experiment_id, "indexed")
    local_runtime.drain_stream()
    # Indexed, then written again (the run item too): it has a summary, so its range is read (its param and one
    # of its tags are no longer on LSI5).
    lifecycle.update_run({"run_id": indexed, "status": "FINISHED", "end_time": 4000})
    data.log_batch(
        {"run_id": indexed, "metrics": [{"key": "m", "value": 2.0, "timestamp": 2, "step": 1}], "tags": [{"key": "t", "value": "c"}]}, {}
    )
    whole = _run(experiment_id, "whole")
    # Written again before any indexing: tags moved on LSI5, latest values replaced, a run renamed and ended.
    rewritten = _run(experiment_id, "rewritten")
    data.log_batch(
        {"run_id": rewritten, "metrics": [{"key": "m", "value": 3.0, "timestamp": 2, "step": 2}], "tags": [{"key": "t", "value": "z"}]}, {}
    )
    lifecycle.update_run({"run_id": rewritten, "status": "FINISHED", "end_time": 5000, "run_name": "renamed"})
    with_inputs = _run(experiment_id, "inputs")  # inputs are not on LSI5: the run is no longer whole
    inputs.log_inputs({"run_id": with_inputs, "datasets": [_dataset_input()]})
    tag_deleted = _run(experiment_id, "tag_deleted")
    data.delete_tag({"run_id": tag_deleted, "key": "u"})
    deleted = _run(experiment_id, "deleted")
    lifecycle.delete_run({"run_id": deleted})

    def is_whole(run_id: str) -> bool:
        return bool(store.get_run_item(run_id).get(run_summaries.WHOLE_ATTRIBUTE))

    assert [is_whole(r) for r in (indexed, whole, rewritten, with_inputs, tag_deleted, deleted)] == [True, True, True, False, False, True]
    lagging = _searches(experiment_id)
    runs = {run["info"]["run_id"]: run for run in lagging[("", ())]["runs"]}
    assert len(runs) == 6
    for run_id, run in runs.items():
        expected = lifecycle.get_run({"run_id": run_id})["run"]
        expected["inputs"].pop("model_inputs", None)
        assert run == expected, run_id
    assert runs[with_inputs]["inputs"]["dataset_inputs"][0]["dataset"]["digest"] == "x1"
    assert runs[rewritten]["info"]["run_name"] == "renamed" and {"key": "t", "value": "z"} in runs[rewritten]["data"]["tags"]
    assert {t["key"] for t in runs[tag_deleted]["data"]["tags"]} == {"t", "mlflow.runName"}
    local_runtime.drain_stream()  # the indexer catches up: the runs are read from their summaries
    assert _searches(experiment_id) == lagging


def test_a_run_read_around_a_decided_latest_value_has_every_other_metric(server: str, local_runtime: Any) -> None:
    # metrics.a decides the filter (its latest value read alone); the rest of the run's partition is read around it.
    experiment_id = _experiment(server)
    run_id = lifecycle.create_run({"experiment_id": experiment_id, "start_time": 1})["run"]["info"]["run_id"]
    names = ["a", "a ", "a.b", "a/b", "ab", "A", "_", "b", "a" * 250]
    metrics = [{"key": name, "value": float(i), "timestamp": 1, "step": 0} for i, name in enumerate(names)]
    data.log_batch({"run_id": run_id, "metrics": metrics}, {})
    for filter_string in ("metrics.a >= 0", "metrics.`a.b` >= 0", f"metrics.{'a' * 250} >= 0"):
        (run,) = search.search_runs({"experiment_ids": [experiment_id], "filter": filter_string})["runs"]
        assert run == lifecycle.get_run({"run_id": run_id})["run"], filter_string
        assert sorted(m["key"] for m in run["data"]["metrics"]) == sorted(names)
