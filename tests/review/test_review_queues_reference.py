"""Review queues over raw REST, answered like MLflow's own server: custom and user queues, case-insensitive
names, schema checks, item attach / list / status / remove with paging and filters, the frozen questions
of a queue with items, and a deleted trace leaving its queues."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.reference_twin import HttpTwin
from tests.review.test_label_schemas_reference import experiment_twin

pytestmark = pytest.mark.e2e

TIMES = frozenset({"created_at", "last_updated_at", "creation_time_ms", "last_update_time_ms", "completed_time_ms"})


def start_traces(twin: HttpTwin, count: int, request_time_ms: int = 1_700_000_000_000) -> list[str]:
    """``count`` traces with the same ids on both servers, bound as {t0}, {t1}, ..."""
    names = []
    for i in range(count):
        trace_id = "tr-" + uuid.uuid4().hex
        twin.ours_values[f"t{i}"] = twin.reference_values[f"t{i}"] = trace_id
        info = {
            "trace_id": trace_id,
            "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "{exp}"}},
            "request_time": request_time_ms + i * 1000,
            "execution_duration": 10 + i,
            "state": "OK" if i % 3 else "ERROR",
            "tags": {"mlflow.traceName": f"trace-{i}"},
        }
        ours, reference = twin.call("POST", "traces", {"trace": {"trace_info": info}})
        assert ours.status == reference.status == 200, (ours, reference)
        names.append(f"t{i}")
    return names


@pytest.fixture
def twin(server: str) -> HttpTwin:
    twin = experiment_twin(server, TIMES)
    for name in ("accuracy", "tone"):
        body = {
            "experiment_id": "{exp}",
            "name": name,
            "type": "FEEDBACK",
            "input": {"pass_fail": {"positive_label": "yes", "negative_label": "no"}},
        }
        twin.same("POST", "label-schemas/create", body, bind=(name, "label_schema.schema_id"))
    return twin


@pytest.mark.parametrize(
    "body",
    [
        {
            "experiment_id": "{exp}",
            "name": " Weekly Review ",
            "queue_type": "CUSTOM",
            "users": ["Alice", "bob", "alice "],
            "schema_ids": ["{tone}", "{accuracy}"],
        },
        {"experiment_id": "{exp}", "name": "Alice", "queue_type": "USER"},
        {"experiment_id": "{exp}", "name": "alice", "queue_type": "USER", "users": ["ALICE"]},
        {"experiment_id": "{exp}", "name": "alice", "queue_type": 1, "users": ["bob"]},
        {"experiment_id": "{exp}", "name": "alice", "queue_type": "USER", "schema_ids": ["{tone}"]},
        {"experiment_id": "{exp}", "name": "q", "queue_type": "CUSTOM", "schema_ids": ["ls-nope"]},
        {"experiment_id": "{exp}", "name": "default", "queue_type": "CUSTOM"},
        {"experiment_id": "{exp}", "name": "  ", "queue_type": "CUSTOM"},
        {"experiment_id": "{exp}", "name": "q", "queue_type": "CUSTOM", "users": [f"u{i}" for i in range(11)]},
        {"experiment_id": "{exp}", "name": "q", "queue_type": "CUSTOM", "users": [""]},
        {"experiment_id": "{exp}", "name": "q"},
        {"experiment_id": "{exp}", "name": "q", "queue_type": "NOPE"},
        {"experiment_id": "987654321", "name": "q", "queue_type": "CUSTOM"},
        {"name": "q", "queue_type": "CUSTOM"},
    ],
)
def test_create_queue(twin: HttpTwin, body: dict[str, Any]) -> None:
    ours, _ = twin.same("POST", "review-queues/create", body, bind=("q", "review_queue.queue_id"))
    if ours.status == 200:
        twin.same("GET", "review-queues/get", query={"queue_id": "{q}"})
        twin.same("GET", "review-queues/get-by-name", query={"experiment_id": "{exp}", "name": ours.body["review_queue"]["name"].upper()})
        twin.same("POST", "review-queues/create", body)


def test_queue_lifecycle(twin: HttpTwin) -> None:
    start_traces(twin, 5)
    twin.same(
        "POST",
        "review-queues/create",
        {"experiment_id": "{exp}", "name": "Triage", "queue_type": "CUSTOM", "users": ["alice"], "schema_ids": ["{tone}"]},
        bind=("q", "review_queue.queue_id"),
    )
    twin.same(
        "POST", "review-queues/get-or-create-user", {"experiment_id": "{exp}", "user": " Bob "}, bind=("bob", "review_queue.queue_id")
    )
    twin.same("POST", "review-queues/get-or-create-user", {"experiment_id": "{exp}", "user": "bob"})
    twin.same("POST", "review-queues/get-or-create-user", {"experiment_id": "{exp}", "user": "triage"})
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}"}, ordered=True)
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "user": "ALICE"}, ordered=True)
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "max_results": 1}, ordered=True)
    # Updates: users, schemas (allowed while empty), rename, owner; user queues are fixed.
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "update_users": True, "users": ["Carol", "alice"]})
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "update_schema_ids": True, "schema_ids": ["{accuracy}", "{tone}"]})
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "name": "Triage Two", "new_owner": " Dana "})
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "name": "bob"})
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "users": ["ignored"]})
    twin.same("POST", "review-queues/update", {"queue_id": "{bob}", "name": "x"})
    twin.same("POST", "review-queues/update", {"queue_id": "rq-missing", "name": "x"})
    # Items: traces of the experiment only; re-adding keeps the item; the questions freeze.
    twin.same("POST", "review-queues/items/add", {"queue_id": "{q}", "item_ids": ["{t0}", "{t1}", " {t2} ", "{t1}"]})
    twin.same("POST", "review-queues/items/add", {"queue_id": "{q}", "item_ids": ["{t1}", "{t3}"], "item_type": "TRACE"})
    twin.same("POST", "review-queues/items/add", {"queue_id": "{q}", "item_ids": ["tr-unknown"]})
    twin.same("POST", "review-queues/items/add", {"queue_id": "{q}", "item_ids": []})
    twin.same("POST", "review-queues/items/add", {"queue_id": "rq-missing", "item_ids": ["{t0}"]})
    twin.same("POST", "review-queues/update", {"queue_id": "{q}", "update_schema_ids": True, "schema_ids": []})
    twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}"}, ordered=True)
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "item_id": "{t1}"}, ordered=True)
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "item_id": "{t4}"}, ordered=True)
    # Statuses (no auth: completed_by comes from the request).
    twin.same(
        "POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t0}", "status": "COMPLETE", "completed_by": "Alice"}
    )
    twin.same(
        "POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t0}", "status": "COMPLETE", "completed_by": "carol"}
    )
    twin.same(
        "POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t1}", "status": "DECLINED", "completed_by": "carol"}
    )
    twin.same("POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t1}", "status": "PENDING"})
    twin.same("POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t2}", "status": "PENDING", "completed_by": "x"})
    twin.same("POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t2}", "status": "COMPLETE"})
    twin.same("POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t2}"})
    twin.same("POST", "review-queues/items/set-status", {"queue_id": "{q}", "item_id": "{t4}", "status": "COMPLETE", "completed_by": "x"})
    for status in ("PENDING", "COMPLETE", "DECLINED"):
        twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}", "status": status}, ordered=True)
    ours, _ = twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}", "max_results": 2}, ordered=True)
    rest = twin.session.get(
        f"{twin.ours_url}/api/3.0/mlflow/review-queues/items/list",
        params={"queue_id": twin.ours_values["q"], "max_results": 2, "page_token": ours.body["next_page_token"]},
        timeout=30,
    ).json()
    listed = [i["item_id"] for i in ours.body["items"] + rest["items"]]
    full = twin.session.get(
        f"{twin.ours_url}/api/3.0/mlflow/review-queues/items/list", params={"queue_id": twin.ours_values["q"]}, timeout=30
    ).json()
    assert listed == [i["item_id"] for i in full["items"]] and rest["next_page_token"] == ""
    twin.same("POST", "review-queues/items/remove", {"queue_id": "{q}", "item_ids": ["{t3}", "tr-never"]})
    twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}"}, ordered=True)
    # A deleted trace leaves its queues.
    twin.api = "/api/2.0/mlflow"
    twin.same("POST", "traces/delete-traces", {"experiment_id": "{exp}", "request_ids": ["{t0}"]})
    twin.api = "/api/3.0/mlflow"
    twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}"}, ordered=True)
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "item_id": "{t0}"}, ordered=True)
    twin.same("POST", "review-queues/delete", {"queue_id": "{q}"})
    twin.same("POST", "review-queues/delete", {"queue_id": "{q}"})
    twin.same("GET", "review-queues/get", query={"queue_id": "{q}"})
    twin.same("GET", "review-queues/items/list", query={"queue_id": "{q}"})
    twin.same("GET", "review-queues/list", query={"experiment_id": "{exp}", "item_id": "{t1}"}, ordered=True)
    # The name is free again.
    twin.same(
        "POST",
        "review-queues/create",
        {"experiment_id": "{exp}", "name": "triage two", "queue_type": "CUSTOM"},
        bind=("q2", "review_queue.queue_id"),
    )
