"""Experiments through the local runtime with the real mlflow client."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import mlflow
import pytest
from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def call(server: str, method: str, path: str, body: dict[str, Any] | None = None, query: str = "") -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server}/api/2.0/mlflow/{path}{query}", data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_set_experiment_creates_then_reuses(client: mlflow.MlflowClient) -> None:
    name = unique("set-exp")
    first = mlflow.set_experiment(name)
    second = mlflow.set_experiment(name)
    assert first.experiment_id == second.experiment_id
    fetched = client.get_experiment(first.experiment_id)
    assert fetched.name == name
    assert fetched.lifecycle_stage == "active"
    assert fetched.artifact_location == f"mlflow-artifacts:/{first.experiment_id}"
    assert fetched.creation_time == fetched.last_update_time > 0
    assert client.get_experiment_by_name(name).experiment_id == first.experiment_id


def test_default_experiment_exists(client: mlflow.MlflowClient) -> None:
    default = client.get_experiment("0")
    assert default.name == "Default"
    assert client.get_experiment_by_name("Default").experiment_id == "0"


def test_duplicate_name_is_resource_already_exists(client: mlflow.MlflowClient) -> None:
    name = unique("dup")
    client.create_experiment(name)
    with pytest.raises(MlflowException) as error:
        client.create_experiment(name)
    assert error.value.error_code == "RESOURCE_ALREADY_EXISTS"
    assert f"Experiment(name={name}) already exists." in error.value.message


def test_get_by_name_missing_is_none_and_404(client: mlflow.MlflowClient, server: str) -> None:
    assert client.get_experiment_by_name(unique("missing")) is None
    status, body = call(server, "GET", "experiments/get-by-name", query="?experiment_name=nope-xyz")
    assert status == 404
    assert body == {
        "error_code": "RESOURCE_DOES_NOT_EXIST",
        "message": "Could not find experiment with name 'nope-xyz'",
        "sqlstate": "KAM00",
        "error_class": "RESOURCE_NOT_FOUND",
    }


def test_get_errors(server: str) -> None:
    assert call(server, "GET", "experiments/get", query="?experiment_id=99999999") == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": "No Experiment with id=99999999 exists",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    assert call(server, "GET", "experiments/get", query="?experiment_id=abc") == (
        400,
        {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": "Invalid experiment ID 'abc'. Experiment ID must be a valid integer.",
            "sqlstate": "KAM00",
            "error_class": "INVALID_PARAMETER_VALUE",
        },
    )
    status, body = call(server, "GET", "experiments/get")
    assert status == 400 and body["message"].startswith("Missing value for required parameter 'experiment_id'.")


def test_zero_padded_id_reads_the_same_experiment(client: mlflow.MlflowClient, server: str) -> None:
    experiment_id = client.create_experiment(unique("pad"))
    status, body = call(server, "GET", "experiments/get", query=f"?experiment_id=00{experiment_id}")
    assert status == 200 and body["experiment"]["experiment_id"] == experiment_id


@pytest.mark.parametrize("name", ["a#b#c", "naïve ☃ 実験", "100%_done", "under_score", "x\x01y", " spaced "])
def test_tricky_names(client: mlflow.MlflowClient, name: str) -> None:
    name = name + unique("")
    experiment_id = client.create_experiment(name, tags={"k.1": "v%#", "ü": "☃"})
    experiment = client.get_experiment_by_name(name)
    assert experiment is not None and experiment.experiment_id == experiment_id
    assert experiment.tags == {"k.1": "v%#", "ü": "☃"}
    found = client.search_experiments(filter_string=f"name = '{name}'") if "'" not in name else []
    assert [e.experiment_id for e in found] == [experiment_id]


def test_rename(client: mlflow.MlflowClient) -> None:
    old, new = unique("old"), unique("new")
    experiment_id = client.create_experiment(old)
    before = client.get_experiment(experiment_id)
    client.rename_experiment(experiment_id, new)
    after = client.get_experiment(experiment_id)
    assert after.name == new and after.last_update_time >= before.last_update_time
    assert client.get_experiment_by_name(old) is None
    assert client.get_experiment_by_name(new).experiment_id == experiment_id
    # The old name is free again.
    assert client.create_experiment(old) != experiment_id
    # Renaming onto a taken name fails and changes nothing.
    with pytest.raises(MlflowException) as error:
        client.rename_experiment(experiment_id, old)
    assert error.value.error_code == "BAD_REQUEST"
    assert client.get_experiment(experiment_id).name == new
    # Renaming to its own name is fine.
    client.rename_experiment(experiment_id, new)


def test_delete_restore(client: mlflow.MlflowClient, server: str) -> None:
    name = unique("del")
    experiment_id = client.create_experiment(name)
    client.delete_experiment(experiment_id)
    deleted = client.get_experiment(experiment_id)
    assert deleted.lifecycle_stage == "deleted"
    assert client.get_experiment_by_name(name).lifecycle_stage == "deleted"
    # Deleted experiments cannot be renamed, tagged or deleted again.
    # MLflow's server answers INVALID_STATE with 500; a request this server can tell is wrong answers 400 (issue 22:
    # never a 500 on bad input), with MLflow's error code and message.
    assert call(server, "POST", "experiments/update", {"experiment_id": experiment_id, "new_name": unique("x")}) == (
        400,
        {
            "error_code": "INVALID_STATE",
            "message": "Cannot rename a non-active experiment.",
            "sqlstate": "XXM00",
            "error_class": "CLIENT_INTERNAL_ERROR",
        },
    )
    with pytest.raises(MlflowException) as error:
        client.set_experiment_tag(experiment_id, "k", "v")
    assert (
        error.value.message
        == f"INVALID_PARAMETER_VALUE: The experiment {experiment_id} must be in the 'active' state. Current state is deleted."
    )
    assert call(server, "POST", "experiments/delete", {"experiment_id": experiment_id}) == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": f"No Experiment with id={experiment_id} exists",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    # A new experiment may not take the name of a deleted one.
    with pytest.raises(MlflowException) as error:
        client.create_experiment(name)
    assert error.value.error_code == "RESOURCE_ALREADY_EXISTS"
    client.restore_experiment(experiment_id)
    assert client.get_experiment(experiment_id).lifecycle_stage == "active"
    assert call(server, "POST", "experiments/restore", {"experiment_id": experiment_id})[0] == 404


def test_delete_marks_runs_deleted_and_restore_revives_them(client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("runs"))
    run = client.create_run(experiment_id)
    client.delete_experiment(experiment_id)
    assert client.get_run(run.info.run_id).info.lifecycle_stage == "deleted"
    client.restore_experiment(experiment_id)
    assert client.get_run(run.info.run_id).info.lifecycle_stage == "active"


def test_tags(client: mlflow.MlflowClient, server: str) -> None:
    experiment_id = client.create_experiment(unique("tags"), tags={"a": "1"})
    client.set_experiment_tag(experiment_id, "b", "2")
    client.set_experiment_tag(experiment_id, "a", "3")
    assert client.get_experiment(experiment_id).tags == {"a": "3", "b": "2"}
    client.delete_experiment_tag(experiment_id, "a")
    assert client.get_experiment(experiment_id).tags == {"b": "2"}
    assert call(server, "POST", "experiments/delete-experiment-tag", {"experiment_id": experiment_id, "key": "a"}) == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": f"No tag with name: a in experiment with id {experiment_id}",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    status, body = call(server, "POST", "experiments/set-experiment-tag", {"experiment_id": experiment_id, "key": "../x", "value": "v"})
    assert status == 400 and "Names may be treated as files" in body["message"]
    status, body = call(
        server, "POST", "experiments/set-experiment-tag", {"experiment_id": experiment_id, "key": "k", "value": "v" * 20001}
    )
    assert (status, body["message"]) == (400, "'value' exceeds the maximum length of 20000 characters")


def test_create_validation(server: str) -> None:
    status, body = call(server, "POST", "experiments/create", {"name": ""})
    assert status == 400 and body["message"].startswith("Missing value for required parameter 'name'.")
    status, body = call(server, "POST", "experiments/create", {"name": "x" * 501})
    assert (status, body["message"]) == (400, "'name' exceeds the maximum length of 500 characters")
    status, body = call(server, "POST", "experiments/create", {"name": unique("r"), "artifact_location": "runs:/abc/x"})
    assert (status, body["message"]) == (400, "Artifact location cannot be a runs:/ URI. Given: 'runs:/abc/x'")
    name = unique("badtag")
    status, body = call(server, "POST", "experiments/create", {"name": name, "tags": [{"key": "a/../b", "value": "v"}]})
    assert status == 400
    # Nothing was written for the rejected request.
    assert call(server, "GET", "experiments/get-by-name", query=f"?experiment_name={name}")[0] == 404


def test_many_tags_and_custom_artifact_location(client: mlflow.MlflowClient) -> None:
    tags = {f"t{i:03d}": str(i) for i in range(120)}
    experiment_id = client.create_experiment(unique("many"), artifact_location="s3://bucket/prefix", tags=tags)
    experiment = client.get_experiment(experiment_id)
    assert experiment.tags == tags
    assert experiment.artifact_location == "s3://bucket/prefix"
    found = client.search_experiments(filter_string=f"tags.t119 = '119' AND name = '{experiment.name}'")
    assert [e.experiment_id for e in found] == [experiment_id]
    assert found[0].tags == tags


@pytest.fixture
def atomic_moto(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the in-process moto DynamoDB behave atomically under concurrent requests, as DynamoDB does.

    moto's TransactWriteItems snapshots the whole table and, when a condition fails, restores that
    snapshot, erasing writes other threads committed meanwhile (and deep-copies while they mutate).
    Serializing moto's request handling removes that artefact, so the test exercises our conditions.
    """
    from moto.dynamodb.responses import DynamoHandler

    lock = threading.Lock()
    original = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with lock:
            return original(self)

    monkeypatch.setattr(DynamoHandler, "call_action", call_action)


@pytest.mark.usefixtures("atomic_moto")
def test_concurrent_creates_of_one_name_have_one_winner(server: str) -> None:
    name = unique("race")
    results: list[tuple[int, dict[str, Any]]] = []
    lock = threading.Lock()

    def create() -> None:
        outcome = call(server, "POST", "experiments/create", {"name": name})
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [body for status, body in results if status == 200]
    losers = [body for status, body in results if status != 200]
    assert len(winners) == 1, results
    assert all(body["error_code"] == "RESOURCE_ALREADY_EXISTS" for body in losers)
    status, body = call(server, "GET", "experiments/get-by-name", query=f"?experiment_name={name}")
    assert status == 200 and body["experiment"]["experiment_id"] == winners[0]["experiment_id"]


def test_search_sees_writes_immediately(client: mlflow.MlflowClient) -> None:
    prefix = unique("seen")
    ids = [client.create_experiment(f"{prefix}-{i}") for i in range(3)]
    found = client.search_experiments(filter_string=f"name LIKE '{prefix}-%'", order_by=["name DESC"])
    assert [e.experiment_id for e in found] == ids[::-1]
    client.delete_experiment(ids[0])
    assert {e.experiment_id for e in client.search_experiments(filter_string=f"name LIKE '{prefix}-%'")} == set(ids[1:])
    deleted = client.search_experiments(view_type=ViewType.DELETED_ONLY, filter_string=f"name LIKE '{prefix}-%'")
    assert [e.experiment_id for e in deleted] == [ids[0]]
    client.set_experiment_tag(ids[1], "team", "x")
    assert [e.experiment_id for e in client.search_experiments(filter_string=f"name LIKE '{prefix}-%' AND tags.team = 'x'")] == [ids[1]]
    client.rename_experiment(ids[2], f"{prefix}-renamed")
    assert [e.name for e in client.search_experiments(filter_string=f"name = '{prefix}-renamed'")] == [f"{prefix}-renamed"]


def test_search_pages(client: mlflow.MlflowClient) -> None:
    prefix = unique("page")
    ids = [client.create_experiment(f"{prefix}-{i}") for i in range(5)]
    page = client.search_experiments(filter_string=f"name LIKE '{prefix}%'", max_results=2, order_by=["name ASC"])
    seen = [e.experiment_id for e in page]
    while page.token:
        page = client.search_experiments(
            filter_string=f"name LIKE '{prefix}%'", max_results=2, order_by=["name ASC"], page_token=page.token
        )
        seen += [e.experiment_id for e in page]
    assert seen == ids


def test_search_errors(server: str) -> None:
    status, body = call(server, "POST", "experiments/search", {"max_results": 50001})
    assert (status, body["message"]) == (400, "Invalid value 50001 for parameter 'max_results' supplied. It must be at most 50000")
    status, body = call(server, "POST", "experiments/search", {"max_results": 10, "filter": "foo = 'x'"})
    assert status == 400 and "Invalid attribute key 'foo' specified" in body["message"]
    status, body = call(server, "POST", "experiments/search", {"max_results": 10, "page_token": "!!"})
    assert status == 400
    status, body = call(server, "GET", "experiments/search", query="?max_results=2&order_by=name%20ASC&order_by=experiment_id%20DESC")
    assert status == 200 and len(body["experiments"]) == 2
