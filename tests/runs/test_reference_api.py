"""Raw run requests answered like MLflow's own server (Flask handlers + SqlAlchemyStore on sqlite).

Every call goes to both servers; status codes, error codes, messages and (normalized) bodies must agree.
"""

from __future__ import annotations

import pytest

from tests.conftest import unique
from tests.runs.conftest import Twin

pytestmark = pytest.mark.e2e


def _setup(twin: Twin, runs: int = 1) -> None:
    name = unique("ref")
    ours, reference = twin.call("POST", "experiments/create", {"name": name})
    twin.bind("exp", ours.body["experiment_id"], reference.body["experiment_id"])
    for i in range(1, runs + 1):
        twin.same(
            "POST",
            "runs/create",
            {"experiment_id": "{exp}", "start_time": 100 + i, "run_name": f"r{i}", "user_id": "u", "tags": [{"key": "a", "value": "1"}]},
            bind_run=f"run{i}",
        )


def test_create_and_get(twin: Twin) -> None:
    _setup(twin, runs=1)
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})
    twin.same("GET", "runs/get", query={"run_uuid": "{run1}"})
    twin.same("GET", "runs/get", query={})
    twin.same("GET", "runs/get", query={"run_id": "deadbeef"})
    twin.same("GET", "runs/get", query={"run_id": "a#b"})
    twin.same("POST", "runs/create", {"experiment_id": "{exp}", "run_name": "x", "tags": [{"key": "mlflow.runName", "value": "y"}]})
    twin.same(
        "POST",
        "runs/create",
        {"experiment_id": "{exp}", "start_time": 5, "tags": [{"key": "mlflow.runName", "value": "from-tag"}]},
        bind_run="run2",
    )
    twin.same("GET", "runs/get", query={"run_id": "{run2}"})
    twin.same("POST", "runs/create", {"experiment_id": "abc"})
    twin.same("POST", "runs/create", {"experiment_id": "987654321"})
    twin.same("POST", "runs/create", {"experiment_id": "{exp}", "start_time": "soon"})
    # Beyond int64: MLflow's server creates a run with a wrapped start time; ours refuses it.
    twin.refused("POST", "runs/create", {"experiment_id": "{exp}", "start_time": 2**70}, "start_time", reference_status=200)
    twin.refused("POST", "runs/create", {"experiment_id": "{exp}", "start_time": 2**63}, "start_time", reference_status=200)
    # MLflow's server stores a tag with key "" for this; ours refuses it.
    twin.refused("POST", "runs/create", {"experiment_id": "{exp}", "tags": [{"key": 5, "value": "x"}]}, "tags[0].key", reference_status=200)
    twin.same("POST", "runs/create", {"experiment_id": "{exp}", "run_name": 5})
    # A run created without a name gets MLflow's adjective-noun-number name.
    ours, _ = twin.call("POST", "runs/create", {"experiment_id": "{exp}"})
    name = ours.body["run"]["info"]["run_name"]
    assert len(name) <= 20 and name.count("-") == 2 and name.rsplit("-", 1)[1].isdigit()
    assert {"key": "mlflow.runName", "value": name} in ours.body["run"]["data"]["tags"]


def test_log_metric_validation(twin: Twin) -> None:
    _setup(twin)
    base = {"run_id": "{run1}", "key": "m", "value": 1.5, "timestamp": 10, "step": 2}
    for change in (
        {},
        {"value": "NaN", "timestamp": 11},
        {"value": "Infinity", "timestamp": 12},
        {"value": "-Infinity", "timestamp": 13},
        {"value": "abc"},
        {"value": True},
        {"value": None},
        {"key": "bad$name"},
        {"key": "../up"},
        {"key": "a" * 251},
        {"timestamp": -1},
        {"timestamp": None},
        {"timestamp": "x"},
        {"step": "5", "timestamp": 14},
        {"step": 2**62, "timestamp": 15},
        {"step": -7, "timestamp": 16},
        {"run_id": "0" * 32},
        {"run_id": None},
    ):
        twin.same("POST", "runs/log-metric", {**base, **change})
    base_for_range = {"run_id": "{run1}", "key": "m", "value": 1.5, "timestamp": 17, "step": 2}
    for field, change in (("step", {"step": 2**64}), ("step", {"step": -(2**63) - 1}), ("timestamp", {"timestamp": 2**70})):
        # MLflow's server logs these (wrapped); ours refuses them (nothing logged: the history below agrees).
        twin.refused("POST", "runs/log-metric", {**base_for_range, **change}, field, reference_status=200)
    ours, _ = twin.call("GET", "runs/get", query={"run_id": "{run1}"})
    # The latest value is the one with the largest step (2**62), whatever the logging order.
    assert ours.body["run"]["data"]["metrics"] == [{"key": "m", "value": 1.5, "timestamp": 15, "step": 2**62}]
    ours, _ = twin.call("GET", "metrics/get-history", query={"run_id": "{run1}", "metric_key": "m"})
    assert {m["value"] for m in ours.body["metrics"]} >= {1.5, "NaN", 1.7976931348623157e308, -1.7976931348623157e308}
    assert all(-(2**63) <= m["step"] < 2**63 and m["timestamp"] < 2**63 for m in ours.body["metrics"])


def test_params_and_tags(twin: Twin) -> None:
    _setup(twin)
    for body in (
        {"run_id": "{run1}", "key": "p", "value": "1"},
        {"run_id": "{run1}", "key": "p", "value": "1"},
        {"run_id": "{run1}", "key": "p", "value": "2"},
        {"run_id": "{run1}", "key": "bad key!", "value": "1"},
        {"run_id": "{run1}", "key": "long", "value": "x" * 7000},
        {"run_id": "{run1}", "key": "novalue"},
        {"run_id": "{run1}", "value": "1"},
        {"run_id": "{run1}", "key": "k" * 251, "value": "1"},
    ):
        twin.same("POST", "runs/log-parameter", body)
    for body in (
        {"run_id": "{run1}", "key": "t", "value": "v"},
        {"run_id": "{run1}", "key": "t", "value": "w"},
        {"run_id": "{run1}", "key": "long", "value": "y" * 9000},
        {"run_id": "{run1}", "key": "mlflow.runName", "value": "renamed"},
        {"run_id": "{run1}", "key": "mlflow.runName", "value": ""},
        {"run_id": "{run1}", "key": "bad/../key", "value": "1"},
        {"run_id": "{run1}", "key": "unicode ключ", "value": "1"},
    ):
        twin.same("POST", "runs/set-tag", body)
    twin.same("POST", "runs/delete-tag", {"run_id": "{run1}", "key": "t"})
    twin.same("POST", "runs/delete-tag", {"run_id": "{run1}", "key": "t"})
    twin.same("POST", "runs/delete-tag", {"run_id": "{run1}"})
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})


def test_log_batch(twin: Twin) -> None:
    _setup(twin)
    metrics = [{"key": f"m{i % 3}", "value": i * 0.5, "timestamp": 1000 + i, "step": i // 3} for i in range(12)]
    twin.same(
        "POST",
        "runs/log-batch",
        {"run_id": "{run1}", "metrics": metrics, "params": [{"key": "p", "value": "1"}], "tags": [{"key": "t", "value": "1"}]},
    )
    # Same-rank ties: the first logged value wins; NaN compares as 0.
    twin.same(
        "POST",
        "runs/log-batch",
        {
            "run_id": "{run1}",
            "metrics": [
                {"key": "tie", "value": 2, "timestamp": 5, "step": 1},
                {"key": "tie", "value": 1, "timestamp": 5, "step": 1},
                {"key": "nan", "value": 0, "timestamp": 5, "step": 1},
                {"key": "nan", "value": "NaN", "timestamp": 5, "step": 1},
                {"key": "nan2", "value": "NaN", "timestamp": 5, "step": 1},
                {"key": "nan2", "value": -1, "timestamp": 5, "step": 1},
                {"key": "inf", "value": "Infinity", "timestamp": 5, "step": 1},
                {"key": "inf", "value": 1.7976931348623157e308, "timestamp": 5, "step": 1},
            ],
        },
    )
    for body in (
        {"run_id": "{run1}", "params": [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]},
        {"run_id": "{run1}", "params": [{"key": "q", "value": "1"}, {"key": "p", "value": "9"}]},
        {"run_id": "{run1}", "params": [{"key": "p", "value": "9"}]},
        {"run_id": "{run1}", "metrics": [{"key": "m", "value": 1, "timestamp": 1}] * 1001},
        {"run_id": "{run1}", "params": [{"key": f"p{i}", "value": "1"} for i in range(101)]},
        {"run_id": "{run1}", "metrics": [{"key": "ok", "value": 1, "timestamp": 1}, {"key": "bad!", "value": 1, "timestamp": 1}]},
        {"run_id": "{run1}", "metrics": [{"key": "ok", "value": 1}]},
        {"run_id": "{run1}", "metrics": [{"key": "ok", "timestamp": 1}]},
        {"run_id": "{run1}", "params": [{"value": "1"}]},
        {
            "run_id": "{run1}",
            "tags": [{"key": "mlflow.runName", "value": "batch-name"}, {"key": "x", "value": "1"}, {"key": "x", "value": "2"}],
        },
        {"run_id": "{run1}", "metrics": "nope"},
        {"run_id": "bad id!"},
        {"metrics": []},
    ):
        twin.same("POST", "runs/log-batch", body)
    # Badly typed or out-of-range nested fields: MLflow's parser drops the whole message and answers
    # 'Invalid value "" for parameter run_id'; ours names the field. Both 400, nothing written.
    for field, body, reference_status in (
        ("metrics[0].value", {"metrics": [{"key": "m", "value": "abc", "timestamp": 1}]}, 400),
        ("metrics[0].step", {"metrics": [{"key": "m", "value": 1, "timestamp": 1, "step": 2**64}]}, 400),
        ("metrics[0].timestamp", {"metrics": [{"key": "m", "value": 1, "timestamp": 2**70}]}, 400),
        ("metrics[0].key", {"metrics": ["not a metric"]}, 500),  # MLflow's server fails on this one
        ("params[0].key", {"params": [{"key": 5, "value": "1"}]}, 400),
    ):
        twin.refused("POST", "runs/log-batch", {"run_id": "{run1}", **body}, field, reference_status)
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})
    for key in ("m0", "tie", "nan", "nan2", "inf"):
        twin.same("GET", "metrics/get-history", query={"run_id": "{run1}", "metric_key": key}, ordered=True)


def test_history_pages_and_bulk_interval(twin: Twin) -> None:
    _setup(twin)
    metrics = [{"key": "h", "value": (i * 7) % 5, "timestamp": 500 - (i % 4), "step": i % 6} for i in range(30)]
    twin.same("POST", "runs/log-batch", {"run_id": "{run1}", "metrics": metrics})
    for query in (
        {"run_id": "{run1}", "metric_key": "h"},
        {"run_id": "{run1}", "metric_key": "h", "max_results": 0},
        {"run_id": "{run1}", "metric_key": "h", "max_results": -1},
        {"run_id": "{run1}"},
        {"run_id": "0" * 32, "metric_key": "h"},
        {"run_id": "{run1}", "metric_key": "h", "page_token": "!!!"},
    ):
        twin.same("GET", "metrics/get-history", query=query, ordered=True)
    # Pages: the same points in the same order (tokens differ: ours are keyset positions).
    collected: dict[str, list[object]] = {"ours": [], "reference": []}
    tokens: dict[str, str | None] = {"ours": None, "reference": None}
    for side in ("ours", "reference"):
        while True:
            query = {
                "run_id": twin.ours_values["run1"] if side == "ours" else twin.reference_values["run1"],
                "metric_key": "h",
                "max_results": 7,
            }
            if tokens[side]:
                query["page_token"] = tokens[side]
            if side == "ours":
                body = twin.session.get(f"{twin.ours_url}/api/2.0/mlflow/metrics/get-history", params=query, timeout=30).json()
            else:
                body = twin.reference.get("/api/2.0/mlflow/metrics/get-history", query_string=query).get_json()
            collected[side].append(body.get("metrics", []))
            tokens[side] = body.get("next_page_token")
            if not tokens[side]:
                break
    assert collected["ours"] == collected["reference"]
    assert [len(page) for page in collected["ours"]] == [7, 7, 7, 7, 2]
    ours, _ = twin.same(
        "GET", "metrics/get-history-bulk-interval", query={"run_ids": ["{run1}"], "metric_key": "h", "max_results": 4}, ordered=True
    )
    assert len(ours.body["metrics"]) == 4 and ours.body["metrics"][0]["run_id"] == twin.ours_values["run1"]
    for query in (
        {"run_ids": ["{run1}"], "metric_key": "h"},
        {"run_ids": ["{run1}"], "metric_key": "h", "max_results": 1},
        {"run_ids": ["{run1}"], "metric_key": "h", "max_results": 4},
        {"run_ids": ["{run1}"], "metric_key": "h", "max_results": 7, "start_step": 1, "end_step": 3},
        {"run_ids": ["{run1}", "0" * 32], "metric_key": "h", "max_results": 30},
        {"run_ids": ["{run1}"], "metric_key": "h", "start_step": 1},
        {"run_ids": ["{run1}"], "metric_key": "h", "start_step": 3, "end_step": 1},
        {"run_ids": ["{run1}"], "metric_key": "h", "max_results": 0},
        {"run_ids": ["{run1}"], "metric_key": "h", "max_results": 2501},
        {"run_ids": ["x"] * 101, "metric_key": "h"},
        {"metric_key": "h"},
    ):
        twin.same("GET", "metrics/get-history-bulk-interval", query=query, ordered=True)


def test_update_delete_restore(twin: Twin) -> None:
    _setup(twin)
    for body in (
        {"run_id": "{run1}", "status": "FINISHED", "end_time": 500},
        {"run_id": "{run1}", "status": 4},
        {"run_id": "{run1}", "status": "BOGUS"},
        {"run_id": "{run1}", "run_name": "new-name"},
        {"run_id": "{run1}", "run_name": ""},
        {"run_uuid": "{run1}", "end_time": 600},
        {"status": "FAILED"},
        {"run_id": "0" * 32, "status": "FAILED"},
        {"run_id": "{run1}", "end_time": "late"},
    ):
        twin.same("POST", "runs/update", body)
    for end_time in (2**70, 2**64):
        # MLflow's server loses the run id parsing this ('Run with id= not found', 404).
        twin.refused("POST", "runs/update", {"run_id": "{run1}", "end_time": end_time}, "end_time", reference_status=404)
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})
    twin.same("POST", "runs/delete", {"run_id": "{run1}"})
    twin.same("POST", "runs/delete", {"run_id": "0" * 32})
    twin.same("POST", "runs/delete", {})
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})
    for path, body in (
        ("runs/log-metric", {"run_id": "{run1}", "key": "m", "value": 1, "timestamp": 1}),
        ("runs/log-parameter", {"run_id": "{run1}", "key": "p", "value": "1"}),
        ("runs/set-tag", {"run_id": "{run1}", "key": "t", "value": "1"}),
        ("runs/delete-tag", {"run_id": "{run1}", "key": "a"}),
        ("runs/log-batch", {"run_id": "{run1}", "params": [{"key": "p", "value": "1"}]}),
        ("runs/update", {"run_id": "{run1}", "status": "FAILED"}),
        ("runs/log-inputs", {"run_id": "{run1}", "datasets": []}),
        ("runs/outputs", {"run_id": "{run1}", "models": [{"model_id": "m-1", "step": 1}]}),
    ):
        twin.same("POST", path, body)
    twin.same("POST", "runs/restore", {"run_id": "{run1}"})
    twin.same("GET", "runs/get", query={"run_id": "{run1}"})


def test_inputs_outputs_and_log_model(twin: Twin) -> None:
    _setup(twin, runs=2)
    dataset = {"name": "d", "digest": "abc", "source_type": "local", "source": "/x", "schema": '{"a": 1}'}
    for body in (
        {"run_id": "{run1}", "datasets": [{"dataset": dataset, "tags": [{"key": "mlflow.data.context", "value": "train"}]}]},
        {"run_id": "{run1}", "datasets": [{"dataset": dataset, "tags": [{"key": "mlflow.data.context", "value": "eval"}]}]},
        # Same name and digest from another run: the experiment's first copy (source /x) wins.
        {"run_id": "{run2}", "datasets": [{"dataset": {**dataset, "source": "/y"}}, {"dataset": {**dataset, "source": "/z"}}]},
        {
            "run_id": "{run2}",
            "datasets": [{"dataset": {"name": "e", "digest": "d2", "source_type": "s3", "source": "s3://b/k", "profile": "{}"}}],
        },
        {"run_id": "{run1}", "datasets": [{"dataset": {"name": "n" * 501, "digest": "x", "source_type": "s", "source": "s"}}]},
        {"run_id": "{run1}", "datasets": [{"dataset": {**dataset, "name": "f"}, "tags": [{"key": "k", "value": "v" * 501}]}]},
        {"run_id": "{run1}", "datasets": [{"dataset": {"name": "g"}}]},
        {"run_id": "{run1}", "models": [{"model_id": "m-in"}]},
        {"datasets": []},
    ):
        twin.same("POST", "runs/log-inputs", body)
    for field, body, reference_status in (
        ("datasets[0].dataset.name", {"datasets": [{"dataset": {"name": 5, "digest": "x", "source_type": "s", "source": "s"}}]}, 400),
        ("datasets[0].tags[0].key", {"datasets": [{"dataset": dataset, "tags": [{"key": 1, "value": "v"}]}]}, 400),
    ):
        twin.refused("POST", "runs/log-inputs", {"run_id": "{run1}", **body}, field, reference_status)
    twin.same("POST", "runs/outputs", {"run_id": "{run1}", "models": [{"model_id": "m-out", "step": 3}]})
    twin.same("POST", "runs/outputs", {"run_id": "{run1}"})
    model = '{"artifact_path": "model", "flavors": {"f": {"config": 1, "x": 2}}, "utc_time_created": "2024-01-01", "run_id": "r", "model_uuid": "u"}'
    for body in (
        {"run_id": "{run1}", "model_json": model},
        {"run_id": "{run1}", "model_json": model},
        {"run_id": "{run1}", "model_json": "{not json"},
        {"run_id": "{run1}"},
    ):
        twin.same("POST", "runs/log-model", body)
    # MLflow prints the missing fields as a Python set, whose order varies from process to process: the
    # error and the fields named must agree, not the order.
    ours, reference = twin.call("POST", "runs/log-model", {"run_id": "{run1}", "model_json": '{"artifact_path": "m"}'})
    assert (ours.status, ours.body["error_code"]) == (reference.status, reference.body["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    assert _named_fields(ours.body["message"]) == _named_fields(reference.body["message"]) == {"flavors", "utc_time_created", "run_id"}
    for run in ("{run1}", "{run2}"):
        twin.same("GET", "runs/get", query={"run_id": run})
    # MLflow's server stores an empty dataset input for this (last: the runs differ afterwards).
    twin.refused("POST", "runs/log-inputs", {"run_id": "{run1}", "datasets": ["not a dataset"]}, "datasets", reference_status=200)


def _named_fields(message: str) -> set[str]:
    prefix, _, named = message.partition(": ")
    assert prefix == "Model json is missing mandatory fields", message
    return {field.strip(" '") for field in named.strip("{}").split(",")}


def test_search_errors_and_basics(twin: Twin) -> None:
    _setup(twin, runs=3)
    twin.same("POST", "runs/log-metric", {"run_id": "{run2}", "key": "m", "value": 2, "timestamp": 1})
    twin.same("POST", "runs/log-metric", {"run_id": "{run3}", "key": "m", "value": 1, "timestamp": 1})
    for body in (
        {"experiment_ids": ["{exp}"]},
        {"experiment_ids": ["{exp}"], "filter": "metrics.m > 1"},
        {"experiment_ids": ["{exp}"], "order_by": ["metrics.m DESC"], "max_results": 2},
        {"experiment_ids": ["{exp}"], "run_view_type": "ALL"},
        {"experiment_ids": ["{exp}"], "run_view_type": 2},
        {"experiment_ids": ["{exp}"], "filter": "metrics.m >"},
        {"experiment_ids": ["{exp}"], "filter": "foo.m = 1"},
        {"experiment_ids": ["{exp}"], "order_by": ["nope.x"]},
        {"experiment_ids": ["{exp}"], "max_results": 50001},
        {"experiment_ids": ["{exp}"], "max_results": 0},
        {"experiment_ids": ["{exp}"], "page_token": "garbage"},
        {"experiment_ids": ["abc"]},
        {"experiment_ids": []},
        {"experiment_ids": ["{exp}", "{exp}"], "filter": "attributes.run_name = 'r1'"},
    ):
        twin.same("POST", "runs/search", body)
