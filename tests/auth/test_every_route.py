"""Generated from the route table: on every route, every field that names a resource is pointed at another
user's resource, and that user's DENY must hold (issue #22).

For each declared request (``route_requests.SHAPES``) gbob first sends it with galice's resource in one field
and his own in the others, once per field, to ours and to MLflow's basic-auth app: ours must answer 403, or
exactly what MLflow answers (status and error code; the whole JSON for GraphQL), and never with anything of
galice's (``CANARY`` is written into her run, experiment, model, trace). Then he sends it with his own
resources in every field: ours must not refuse it (so the refusals above are about galice's field). A route
of ``routes.ROUTES`` that is declared nowhere fails until its ids are declared.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests

from serverless_mlflow.request.routes import ROUTES
from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, WITH_MLFLOW, basic_env, basic_runtime
from tests.auth.route_requests import (
    ARTIFACT,
    ASSESSMENT,
    DATASET,
    EXPERIMENT,
    EXPERIMENT_LOCATION,
    EXPERIMENT_NAME,
    ISSUE,
    LABEL_SCHEMA,
    LOGGED_MODEL,
    M2,
    M3,
    MODEL,
    NO_RESOURCE_ID,
    RECORD,
    REVIEW_QUEUE,
    RUN,
    RUN_SOURCE,
    S3_SOURCE,
    SCORER,
    SCORER_ID,
    SHAPES,
    TRACE,
    TRACE_HEX,
    USER,
    Call,
    Shape,
    route_key_of,
)

pytestmark = WITH_MLFLOW

ALICE, BOB = "galice", "gbob"
PASSWORDS = {ADMIN: ADMIN_PASSWORD, ALICE: "galice-password-1", BOB: "gbob-password-12"}
CANARY = "alice-canary-" + uuid.uuid4().hex[:8]
SUFFIX = uuid.uuid4().hex[:6]


class Answer:
    def __init__(self, response: requests.Response) -> None:
        self.status = response.status_code
        self.text = response.text
        try:
            self.body: Any = response.json()
        except ValueError:
            self.body = response.text

    def __repr__(self) -> str:
        return f"{self.status} {self.text[:300]!r}"


class Server:
    """One server (ours or MLflow's) and what each user owns there."""

    def __init__(self, url: str, bucket: str) -> None:
        self.url, self.bucket = url, bucket
        self.worlds: dict[tuple[str, str], World] = {}

    def send(self, user: str, method: str, path: str, call: Call) -> Answer:
        url = self.url + re.sub(r"\{(\w+)\+?\}", lambda m: call.path[m.group(1)], path)
        kwargs: dict[str, Any] = {"auth": (user, PASSWORDS[user]), "timeout": 60, "allow_redirects": False, "headers": call.headers}
        if call.raw is not None:
            kwargs["data"] = call.raw
            kwargs["params"] = call.params  # with a raw body, any params travel in the query
        elif method in ("GET", "HEAD"):
            kwargs["params"] = call.params
        else:
            kwargs["json"] = call.params if call.params is not None else {}
        return Answer(requests.request(method, url, **kwargs))

    def ok(self, user: str, method: str, path: str, params: Any = None, **call: Any) -> Any:
        answer = self.send(user, method, path, Call(params=params, **call))
        assert answer.status == 200, (self.url, method, path, answer)
        return answer.body

    def world(self, owner: str, tag: str = "") -> World:
        if (owner, tag) not in self.worlds:
            self.worlds[owner, tag] = World(self, owner, tag)
        return self.worlds[owner, tag]


class World:
    """One user's resources on one server, made when first asked for (galice's experiment and registered
    model are made with a DENY grant for gbob)."""

    def __init__(self, server: Server, owner: str, tag: str) -> None:
        self.server, self.owner, self.tag = server, owner, tag
        self.values: dict[str, Any] = {}
        self.secret = CANARY if owner == ALICE else "gbob-value"

    def get(self, kind: str) -> Any:
        if kind not in self.values:
            self.values[kind] = MAKERS[kind](self)
        return self.values[kind]

    def call(self, method: str, path: str, params: Any = None, **call: Any) -> Any:
        return self.server.ok(self.owner, method, path, params, **call)

    def deny_bob(self, resource_type: str, resource_id: str) -> None:
        if self.owner == ALICE:
            grant = {"username": BOB, "resource_type": resource_type, "resource_id": resource_id, "permission": "DENY"}
            self.call("POST", f"{M3}/users/permissions/grant", grant)


def _experiment(w: World) -> str:
    name = f"{w.owner}-exp-{SUFFIX}{w.tag}"
    experiment_id = w.call("POST", f"{M2}/experiments/create", {"name": name})["experiment_id"]
    w.values[EXPERIMENT_NAME] = name
    w.call("POST", f"{M2}/experiments/set-experiment-tag", {"experiment_id": experiment_id, "key": "k", "value": w.secret})
    w.deny_bob("experiment", experiment_id)
    return experiment_id


def _run(w: World) -> str:
    info = w.call("POST", f"{M2}/runs/create", {"experiment_id": w.get(EXPERIMENT), "run_name": f"{w.owner}-run"})["run"]["info"]
    run_id = info["run_id"]
    w.values["artifact_uri"] = info["artifact_uri"]
    w.call("POST", f"{M2}/runs/log-parameter", {"run_id": run_id, "key": "secret", "value": w.secret})
    w.call("POST", f"{M2}/runs/log-metric", {"run_id": run_id, "key": "m", "value": 1.0, "timestamp": 1, "step": 0})
    w.call("POST", f"{M2}/runs/set-tag", {"run_id": run_id, "key": "t", "value": w.secret})
    return run_id


def _artifact(w: World) -> str:
    path = f"{w.get(EXPERIMENT)}/{w.get(RUN)}/artifacts/f.txt"
    w.call("PUT", f"/api/2.0/mlflow-artifacts/artifacts/{path}", raw=w.secret.encode())
    return path


def _logged_model(w: World) -> str:
    model_id = w.call("POST", f"{M2}/logged-models", {"experiment_id": w.get(EXPERIMENT), "name": f"{w.owner}-lm"})["model"]["info"][
        "model_id"
    ]
    w.call("PATCH", f"{M2}/logged-models/{model_id}/tags", {"tags": [{"key": "t", "value": w.secret}]})
    return model_id


def _model(w: World) -> str:
    name = f"{w.owner}-model-{SUFFIX}{w.tag}"
    w.call("POST", f"{M2}/registered-models/create", {"name": name, "description": w.secret})
    w.call("POST", f"{M2}/model-versions/create", {"name": name, "source": w.get(RUN_SOURCE)[1], "run_id": w.get(RUN)})
    w.call("POST", f"{M2}/registered-models/alias", {"name": name, "alias": "champ", "version": "1"})
    w.call("POST", f"{M2}/registered-models/set-tag", {"name": name, "key": "k", "value": w.secret})
    w.call("POST", f"{M2}/model-versions/set-tag", {"name": name, "version": "1", "key": "k", "value": w.secret})
    w.deny_bob("registered_model", name)
    return name


def _trace(w: World) -> str:
    trace_id = "tr-" + uuid.uuid4().hex
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": w.get(EXPERIMENT)}}
    info = {
        "trace_id": trace_id,
        "trace_location": location,
        "request_time": "2024-01-01T00:00:00Z",
        "execution_duration": "1s",
        "state": "OK",
        "request_preview": w.secret,
    }
    w.call("POST", f"{M3}/traces", {"trace": {"trace_info": info}})
    w.call("PATCH", f"{M3}/traces/{trace_id}/tags", {"key": "k", "value": w.secret})
    return trace_id


def _assessment(w: World) -> tuple[str, str]:
    trace_id = w.get(TRACE)
    body = {"assessment": {"assessment_name": "a", "feedback": {"value": 1}, "rationale": w.secret}}
    return trace_id, w.call("POST", f"{M3}/traces/{trace_id}/assessments", body)["assessment"]["assessment_id"]


def _dataset(w: World) -> str:
    dataset_id = w.call("POST", f"{M3}/datasets/create", {"name": f"{w.owner}-data", "experiment_ids": [w.get(EXPERIMENT)]})["dataset"][
        "dataset_id"
    ]
    w.call("PATCH", f"{M3}/datasets/{dataset_id}/tags", {"tags": json.dumps({"k": w.secret})})
    w.call("POST", f"{M3}/datasets/{dataset_id}/records", {"records": json.dumps([{"inputs": {"q": w.secret}, "expectations": {"a": 1}}])})
    return dataset_id


def _record(w: World) -> str:
    records = json.loads(w.call("GET", f"{M3}/datasets/{w.get(DATASET)}/records")["records"])
    return records[0]["dataset_record_id"]


def _scorer(w: World) -> tuple[str, str]:
    experiment_id = w.get(EXPERIMENT)
    body = {"experiment_id": experiment_id, "name": "sc", "serialized_scorer": json.dumps({"name": "sc", "secret": w.secret})}
    w.values[SCORER_ID] = w.call("POST", f"{M3}/scorers/register", body)["scorer_id"]
    w.call("PUT", f"{M3}/scorers/online-config", {"experiment_id": experiment_id, "name": "sc", "sample_rate": 0})
    return experiment_id, "sc"


def _scorer_id(w: World) -> str:
    w.get(SCORER)
    return w.values[SCORER_ID]


def _label_schema(w: World) -> str:
    body = {"experiment_id": w.get(EXPERIMENT), "name": "q", "type": "FEEDBACK", "input": {"text": {}}, "instruction": w.secret}
    return w.call("POST", f"{M3}/label-schemas/create", body)["label_schema"]["schema_id"]


def _review_queue(w: World) -> tuple[str, str]:
    """(queue id, the id of its item): the owner's queue, the owner assigned, the owner's trace in it."""
    body = {"experiment_id": w.get(EXPERIMENT), "name": "rq", "queue_type": "CUSTOM", "users": [w.owner]}
    queue_id = w.call("POST", f"{M3}/review-queues/create", body)["review_queue"]["queue_id"]
    w.call("POST", f"{M3}/review-queues/items/add", {"queue_id": queue_id, "item_type": "TRACE", "item_ids": [w.get(TRACE)]})
    items = w.call("GET", f"{M3}/review-queues/items/list", {"queue_id": queue_id})["items"]
    return queue_id, items[0]["item_id"]


def _issue(w: World) -> str:
    body = {"experiment_id": w.get(EXPERIMENT), "name": "x", "description": w.secret}
    return w.call("POST", f"{M3}/issues", body)["issue"]["issue_id"]


MAKERS: dict[str, Callable[[World], Any]] = {
    EXPERIMENT: _experiment,
    EXPERIMENT_NAME: lambda w: w.get(EXPERIMENT) and w.values[EXPERIMENT_NAME],
    EXPERIMENT_LOCATION: lambda w: w.call("GET", f"{M2}/experiments/get", {"experiment_id": w.get(EXPERIMENT)})["experiment"][
        "artifact_location"
    ],
    RUN: _run,
    RUN_SOURCE: lambda w: (w.get(RUN), w.values["artifact_uri"] + "/model"),
    ARTIFACT: _artifact,
    LOGGED_MODEL: _logged_model,
    MODEL: _model,
    TRACE: _trace,
    TRACE_HEX: lambda w: w.get(TRACE).removeprefix("tr-"),
    ASSESSMENT: _assessment,
    DATASET: _dataset,
    RECORD: _record,
    SCORER: _scorer,
    SCORER_ID: _scorer_id,
    LABEL_SCHEMA: _label_schema,
    REVIEW_QUEUE: _review_queue,
    ISSUE: _issue,
    USER: lambda w: w.owner,
    S3_SOURCE: lambda w: f"s3://{w.server.bucket}/mlartifacts/{w.get(EXPERIMENT)}/{w.get(RUN)}/artifacts/model",
}


# --- the servers ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers(server: str, mlflow_server: str) -> Any:
    env = basic_env()
    with basic_runtime(env=env) as ours:
        pair = (Server(ours, env["BUCKET_NAME"]), Server(mlflow_server, "any-bucket"))
        for side in pair:
            for user in (ALICE, BOB):
                side.ok(ADMIN, "POST", f"{M2}/users/create", {"username": user, "password": PASSWORDS[user]})
        yield pair


def _values(server: Server, shape: Shape, tag: str, alice_field: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {"unique": uuid.uuid4().hex[:8], "alice": ALICE, "bob": BOB}
    for name, kind in shape.ids.items():
        owner = ALICE if name == alice_field else BOB
        values[name] = server.world(owner, "" if owner == ALICE else tag).get(kind)
        values[f"owner:{name}"] = "alice" if owner == ALICE else "bob"
    return values


def _send(server: Server, shape_key: str, shape: Shape, tag: str, alice_field: str | None) -> Answer:
    method, _, path = route_key_of(shape_key).partition(" ")
    return server.send(BOB, method, path, shape.build(_values(server, shape, tag, alice_field)))


def _error_code(answer: Answer) -> Any:
    return answer.body.get("error_code") if isinstance(answer.body, dict) else None


ROUTE_KEYS = {route.route_key for route in ROUTES}


@pytest.mark.parametrize("shape_key", sorted(SHAPES))
def test_another_users_resource_in_any_field_is_refused(servers: tuple[Server, Server], shape_key: str) -> None:
    ours, theirs = servers
    shape = SHAPES[shape_key]
    tag = f"-{uuid.uuid4().hex[:6]}" if shape.fresh else ""
    for field in shape.ids:
        mine = _send(ours, shape_key, shape, tag, field)
        where = f"{shape_key} with galice's {field}: ours {mine!r}"
        assert CANARY not in mine.text, where
        assert shape.closes is None or mine.status == 403, f"{where} ({shape.closes}: ours must refuse)"
        if mine.status == 403 and not shape.graphql_fields:
            continue  # refused: MLflow's answer is not needed (nor sent: the reference server is asked only here)
        if shape.graphql_fields:
            # A refused GraphQL field answers null (MLflow's middleware), the others as MLflow's do.
            assert mine.status == 200 and mine.body["data"][shape.graphql_fields[field]] is None, where
        assert shape.mlflow_broken is None or shape.graphql_fields, f"{where} ({shape.mlflow_broken}: ours must refuse)"
        if shape.mlflow_broken is not None:
            continue
        reference = _send(theirs, shape_key, shape, tag, field)
        where += f", MLflow {reference!r}"
        if shape.graphql_fields:
            assert mine.body == reference.body, where
        else:
            assert (mine.status, _error_code(mine)) == (reference.status, _error_code(reference)), where
    own = _send(ours, shape_key, shape, tag, None)
    if shape.admin_only:
        assert own.status == 403, f"{shape_key}: an admin-only route answered gbob {own!r}"
    else:
        assert own.status != 403 and own.status < 500, f"{shape_key} with gbob's own resources: {own!r}"


def test_every_route_is_declared() -> None:
    declared = {route_key_of(key) for key in SHAPES}
    missing = sorted(ROUTE_KEYS - declared - set(NO_RESOURCE_ID))
    assert not missing, f"declare how these routes' ids are built in tests/auth/route_requests.py: {missing}"
    assert declared <= ROUTE_KEYS and set(NO_RESOURCE_ID) <= ROUTE_KEYS, "entries for routes that no longer exist"
    assert not declared & set(NO_RESOURCE_ID), "a route both declared and listed as naming no resource"
