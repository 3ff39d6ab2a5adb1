"""Label schemas, review queues (their items and statuses) and issues in workspaces (issue 27), with the client's
REST store against the local runtime, compared call by call with MLflow's server run with workspaces enabled.

They hang off an experiment, so MLflow's workspace-aware store scopes them through it: the same names in two
workspaces' experiments are two objects, and an id of another workspace's schema, queue or issue does not exist for a
request (get, update, delete, items, statuses), nor does its experiment for the by-experiment routes; a search of
issues without an experiment sees only the request's workspace."""

from __future__ import annotations

import uuid
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities.issue import IssueStatus
from mlflow.genai.label_schemas.label_schemas import InputPassFail, InputText

from tests.conftest import unique
from tests.workspaces.support import assert_same, outcome, raw

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]


def _trace(url: str, workspace: str, experiment_id: str) -> str:
    trace_id = "tr-" + uuid.uuid4().hex
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
        "request_time": 1_700_000_000_000,
        "execution_duration": 10,
        "state": "OK",
    }
    status, body = raw(url, "POST", "/api/3.0/mlflow/traces", workspace, json={"trace": {"trace_info": info}})
    assert status == 200, body
    return trace_id


def _objects(store: Any, experiment_id: str, queue_id: str) -> Any:
    """What one workspace holds, by name (ids differ between the two servers)."""
    schemas = sorted((s.name, s.is_default) for s in store.list_label_schemas(experiment_id))
    queues = [(q.name, len(q.schema_ids), sorted(q.users)) for q in store.list_review_queues(experiment_id)]
    items = [i.status.value if hasattr(i.status, "value") else str(i.status) for i in store.list_review_queue_items(queue_id)]
    return schemas, queues, items


def scenario(url: str, suffix: str) -> list[Any]:
    mlflow.set_tracking_uri(url)
    client = MlflowClient(url)
    store = client._tracking_client.store
    team_a, team_b = f"rev-a-{suffix}", f"rev-b-{suffix}"
    transcript: list[Any] = []
    record = transcript.append
    mlflow.set_workspace(None)
    for name in (team_a, team_b):
        mlflow.create_workspace(name)

    made: dict[str, dict[str, str]] = {}
    for team, label in ((team_a, "a"), (team_b, "b")):
        mlflow.set_workspace(team)
        experiment_id = client.create_experiment("review")  # the same names in both workspaces
        trace_id = _trace(url, team, experiment_id)
        schema = store.create_label_schema(experiment_id, name="tone", type="feedback", input=InputPassFail("yes", "no"))
        queue = store.create_review_queue(experiment_id, name="weekly", queue_type="custom", users=["alice"], schema_ids=[schema.schema_id])
        store.add_items_to_review_queue(queue.queue_id, item_ids=[trace_id])
        issue = store.create_issue(experiment_id, f"slow-{label}", "answers are slow")
        made[label] = {
            "exp": experiment_id,
            "trace": trace_id,
            "schema": schema.schema_id,
            "queue": queue.queue_id,
            "issue": issue.issue_id,
        }
    a = made["a"]

    mlflow.set_workspace(team_b)
    for call in (
        lambda: store.get_label_schema(a["schema"]).name,
        lambda: store.update_label_schema(a["schema"], name="stolen").name,
        lambda: store.get_label_schema_by_name(a["exp"], "tone").name,
        lambda: store.list_label_schemas(a["exp"]),
        lambda: store.create_label_schema(a["exp"], name="x", type="feedback", input=InputText()).name,
        lambda: store.get_review_queue(a["queue"]).name,
        lambda: store.get_review_queue_by_name(a["exp"], name="weekly").name,
        lambda: store.list_review_queues(a["exp"]),
        lambda: store.create_review_queue(a["exp"], name="x", queue_type="custom").name,
        lambda: store.get_or_create_user_queue(a["exp"], user="bob").name,
        lambda: store.update_review_queue(a["queue"], name="stolen").name,
        lambda: store.list_review_queue_items(a["queue"]),
        lambda: store.set_review_queue_item_status(a["queue"], item_id=a["trace"], status="complete", completed_by="eve").status,
        lambda: store.add_items_to_review_queue(a["queue"], item_ids=[made["b"]["trace"]]),
        lambda: store.remove_items_from_review_queue(a["queue"], item_ids=[a["trace"]]),
        lambda: store.get_issue(a["issue"]).name,
        lambda: store.update_issue(a["issue"], status=IssueStatus.RESOLVED).status,
        # Deletes of another workspace's objects: whatever each server answers, nothing of A's goes (checked below).
        lambda: store.delete_label_schema(a["schema"]),
        lambda: store.delete_review_queue(a["queue"]),
    ):
        record(outcome(lambda call=call: call() and None))
    record(sorted(i.name for i in store.search_issues()))  # the workspace's issues only
    record([i.name for i in store.search_issues(experiment_id=a["exp"])])  # A's experiment holds none for B
    record(_objects(store, made["b"]["exp"], made["b"]["queue"]))

    mlflow.set_workspace(None)  # default sees none of them
    record([i.name for i in store.search_issues() if i.name.endswith(("-a", "-b"))] == [] or "leak")
    record(outcome(lambda: store.get_issue(made["b"]["issue"]).name))

    mlflow.set_workspace(team_a)  # A's objects are untouched
    record(_objects(store, a["exp"], a["queue"]))
    record(store.get_label_schema(a["schema"]).name)
    record(store.get_review_queue(a["queue"]).name)
    record((store.get_issue(a["issue"]).name, str(store.get_issue(a["issue"]).status)))
    record(sorted(i.name for i in store.search_issues()))
    record(outcome(lambda: store.get_label_schema(made["b"]["schema"]).name))
    store.set_review_queue_item_status(a["queue"], item_id=a["trace"], status="complete", completed_by="alice")
    record(_objects(store, a["exp"], a["queue"]))
    store.delete_review_queue(a["queue"])
    record(outcome(lambda: store.get_review_queue(a["queue"]).name))
    mlflow.set_workspace(team_b)
    record(store.get_review_queue(made["b"]["queue"]).name)  # B's same-named queue stays
    return transcript


def test_review_objects_in_two_workspaces_as_mlflow_server(ours: str, reference: str) -> None:
    suffix = unique("v")[-6:]
    assert_same(scenario(ours, suffix), scenario(reference, suffix))
