"""AI gateway guardrails (create, get, list, delete; add to, order on, list for and remove from an endpoint)
with the real client's RestStore guardrail methods, compared with MLflow's own server (its Flask app on
sqlite, ``tests/mlflow_reference``) on the same calls: raw answers and errors alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from mlflow.entities import GatewayEndpointModelConfig
from mlflow.entities.gateway_endpoint import GatewayModelLinkageType
from mlflow.entities.gateway_guardrail import GuardrailAction, GuardrailStage
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.rest_store import RestStore
from mlflow.utils.rest_utils import MlflowHostCreds

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

GW = "/api/3.0/mlflow/gateway/guardrails"
# Differ by construction between two servers: generated ids, clock readings, and ``created_by`` (MLflow records
# its server process's OS user there; this server the signed-in user).
VOLATILE = {
    "guardrail_id",
    "endpoint_id",
    "scorer_id",
    "experiment_id",
    "created_at",
    "last_updated_at",
    "creation_time",
    "created_by",
    "last_updated_by",
}
JUDGE = {
    "name": "no_pii",
    "aggregations": [],
    "description": None,
    "mlflow_version": "3.17.2",
    "serialization_version": 1,
    "instructions_judge_pydantic_data": {
        "instructions": "Does {{ inputs }} contain personal data? Answer yes or no.",
        "model": "openai:/gpt-4o-mini",
        "feedback_value_type": {"type": "string"},
    },
    "builtin_scorer_class": None,
    "builtin_scorer_pydantic_data": None,
    "call_source": None,
    "call_signature": None,
    "original_func_name": None,
}


class Side:
    """One server: its URL, its RestStore, and the endpoint and scorer made on it."""

    def __init__(self, url: str, suffix: str) -> None:
        self.url = url
        self.store = RestStore(lambda: MlflowHostCreds(url))
        self.suffix = suffix
        self.endpoint_id = ""
        self.other_endpoint_id = ""
        self.scorer_id = ""

    def call(self, method: str, path: str, body: dict[str, Any]) -> requests.Response:
        args = {"params": body} if method == "GET" else {"json": body}
        return requests.request(method, f"{self.url}{GW}/{path}", **args, timeout=30)

    def ok(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.call(method, path, body)
        assert response.status_code == 200, response.text
        return response.json()


def _endpoint(store: RestStore, name: str, secret_id: str) -> str:
    definition = store.create_gateway_model_definition(f"def-{name}", secret_id, "openai", "gpt-4o-mini")
    config = GatewayEndpointModelConfig(
        model_definition_id=definition.model_definition_id, linkage_type=GatewayModelLinkageType.PRIMARY, weight=1.0
    )
    return store.create_gateway_endpoint(name, [config]).endpoint_id


@pytest.fixture
def sides(server: str) -> list[Side]:
    suffix = unique("")[1:]
    made = [Side(server, suffix), Side(reference_server().url, suffix)]
    for side in made:
        secret = side.store.create_gateway_secret(f"key-{suffix}", {"api_key": "sk-guardrails-0123456789"}, provider="openai")
        side.endpoint_id = _endpoint(side.store, f"chat-{suffix}", secret.secret_id)
        side.other_endpoint_id = _endpoint(side.store, f"sanitizer-{suffix}", secret.secret_id)
        experiment_id = side.store.create_experiment(f"guardrails-{suffix}")
        side.scorer_id = side.store.register_scorer(experiment_id, "no_pii", json.dumps(JUDGE)).scorer_id
        side.store.register_scorer(experiment_id, "no_pii", json.dumps(JUDGE))  # version 2
    return made


def _norm(value: Any, side: Side) -> Any:
    if isinstance(value, dict):
        return {k: _norm(v, side) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_norm(v, side) for v in value]
    if isinstance(value, str):
        return value.replace(side.suffix, "<s>")
    return value


def _same(answers: list[dict[str, Any]], sides: list[Side]) -> dict[str, Any]:
    shapes = [_norm(answer, side) for answer, side in zip(answers, sides, strict=True)]
    assert shapes[0] == shapes[1]
    return answers[0]


def _create(side: Side, name: str, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "scorer_id": side.scorer_id, "scorer_version": 1, "stage": "BEFORE", "action": "VALIDATION", **fields}
    return side.ok("POST", "create", body)["guardrail"]


def test_guardrail_lifecycle_matches_mlflow(sides: list[Side]) -> None:
    created = [_create(side, "pii-check") for side in sides]
    guardrail = _same([{"guardrail": g} for g in created], sides)["guardrail"]
    assert guardrail["guardrail_id"].startswith("gr-") and len(guardrail["guardrail_id"]) == 35
    assert guardrail["scorer"]["scorer_name"] == "no_pii" and guardrail["scorer"]["scorer_version"] == 1
    assert json.loads(guardrail["scorer"]["serialized_scorer"]) == JUDGE
    # A sanitizing guardrail names its action endpoint; MLflow answers that endpoint's name in the id field.
    sanitizers = [
        _create(side, "pii-mask", scorer_version=2, stage=2, action="SANITIZATION", action_endpoint_id=side.other_endpoint_id)
        for side in sides
    ]
    assert _same([{"g": g} for g in sanitizers], sides)["g"]["action_endpoint_id"] == f"sanitizer-{sides[0].suffix}"

    for side, g in zip(sides, created, strict=True):
        assert side.ok("GET", "get", {"guardrail_id": g["guardrail_id"]}) == {"guardrail": g}
    # The client parses every answer.
    parsed = sides[0].store.get_gateway_guardrail(created[0]["guardrail_id"])
    assert parsed.stage == GuardrailStage.BEFORE and parsed.action == GuardrailAction.VALIDATION
    assert parsed.scorer.scorer_id == sides[0].scorer_id

    # Listing is in guardrail id order and pages by offset.
    for side in sides:
        listed = [g.guardrail_id for g in side.store.list_gateway_guardrails()]
        assert listed == sorted(listed)
    ours = sides[0]
    ids = [g.guardrail_id for g in ours.store.list_gateway_guardrails()]
    first = ours.store.list_gateway_guardrails(max_results=1)
    assert [g.guardrail_id for g in first] == ids[:1] and first.token
    rest = ours.store.list_gateway_guardrails(max_results=len(ids), page_token=first.token)
    assert [g.guardrail_id for g in rest] == ids[1:] and rest.token is None

    # Deleting the action endpoint leaves the guardrail without one (ON DELETE SET NULL).
    for side, g in zip(sides, sanitizers, strict=True):
        side.store.delete_gateway_endpoint(side.other_endpoint_id)
        assert "action_endpoint_id" not in side.ok("GET", "get", {"guardrail_id": g["guardrail_id"]})["guardrail"]

    for side, g in zip(sides, created, strict=True):
        side.store.delete_gateway_guardrail(g["guardrail_id"])
        with pytest.raises(MlflowException) as excinfo:
            side.store.get_gateway_guardrail(g["guardrail_id"])
        assert excinfo.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert created[0]["guardrail_id"] not in [g.guardrail_id for g in ours.store.list_gateway_guardrails()]


def test_endpoint_guardrail_configs_match_mlflow(sides: list[Side]) -> None:
    guardrails = [[_create(side, f"g{i}")["guardrail_id"] for i in range(4)] for side in sides]
    # Added out of order, one without an order: ordered ones first, ascending, then by guardrail id.
    orders = [3, None, 1, 2]
    for side, ids in zip(sides, guardrails, strict=True):
        for guardrail_id, order in zip(ids, orders, strict=True):
            body = {"endpoint_id": side.endpoint_id, "guardrail_id": guardrail_id}
            answer = side.ok("POST", "add-to-endpoint", body if order is None else {**body, "execution_order": order})
            assert answer["config"]["guardrail"]["guardrail_id"] == guardrail_id
    listed = [side.ok("GET", "list-for-endpoint", {"endpoint_id": side.endpoint_id}) for side in sides]
    _same(listed, sides)
    assert [c["guardrail"]["name"] for c in listed[0]["configs"]] == ["g2", "g3", "g0", "g1"]

    # Reorder one, and clear another's order (no execution_order given).
    for side, ids in zip(sides, guardrails, strict=True):
        moved = side.ok("PATCH", "update-config", {"endpoint_id": side.endpoint_id, "guardrail_id": ids[1], "execution_order": 0})
        cleared = side.ok("PATCH", "update-config", {"endpoint_id": side.endpoint_id, "guardrail_id": ids[0]})
        assert moved["config"]["execution_order"] == 0 and "execution_order" not in cleared["config"]
    listed = [side.ok("GET", "list-for-endpoint", {"endpoint_id": side.endpoint_id}) for side in sides]
    _same(listed, sides)
    assert [c["guardrail"]["name"] for c in listed[0]["configs"]] == ["g1", "g2", "g3", "g0"]
    configs = sides[0].store.list_endpoint_guardrail_configs(sides[0].endpoint_id)
    assert [c.execution_order for c in configs] == [0, 1, 2, None]

    # Removing one config, and deleting a guardrail, take them off the endpoint.
    for side, ids in zip(sides, guardrails, strict=True):
        side.store.remove_guardrail_from_endpoint(side.endpoint_id, ids[2])
        side.store.delete_gateway_guardrail(ids[3])
    listed = [side.ok("GET", "list-for-endpoint", {"endpoint_id": side.endpoint_id}) for side in sides]
    _same(listed, sides)
    assert [c["guardrail"]["name"] for c in listed[0]["configs"]] == ["g1", "g0"]

    # Deleting the endpoint deletes its configs, not the guardrails.
    ours = sides[0]
    ours.store.delete_gateway_endpoint(ours.endpoint_id)
    from serverless_mlflow.llm_gateway import records
    from serverless_mlflow.storage import table

    assert table.query(records.partition(), f"E#{ours.endpoint_id}") == []
    assert ours.store.get_gateway_guardrail(guardrails[0][0]).name == "g0"


_BAD_ENUMS = {("create", "DURING", "VALIDATION"), ("create", "BEFORE", 7)}


def test_guardrail_errors_match_mlflow(sides: list[Side]) -> None:
    existing = [_create(side, "taken")["guardrail_id"] for side in sides]
    for side, guardrail_id in zip(sides, existing, strict=True):
        side.ok("POST", "add-to-endpoint", {"endpoint_id": side.endpoint_id, "guardrail_id": guardrail_id})
    good = {"name": "x", "scorer_version": 1, "stage": "BEFORE", "action": "VALIDATION"}
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "create", {**good, "scorer_id": "{scorer}", "name": ""}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "name": 5}),
        ("POST", "create", {**good, "scorer_id": ""}),
        ("POST", "create", {**good, "scorer_id": "missing-scorer"}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "scorer_version": 9}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "scorer_version": "x"}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "stage": None}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "stage": "DURING"}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "action": None}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "action": 7}),
        ("POST", "create", {**good, "scorer_id": "{scorer}", "action_endpoint_id": 3}),
        ("GET", "get", {}),
        ("GET", "get", {"guardrail_id": "gr-missing"}),
        ("DELETE", "delete", {"guardrail_id": "gr-missing"}),
        ("GET", "list", {"max_results": 0}),
        ("GET", "list", {"max_results": 50001}),
        ("GET", "list", {"max_results": "x"}),
        ("GET", "list", {"page_token": "not-a-token"}),
        ("POST", "add-to-endpoint", {"endpoint_id": "e-missing", "guardrail_id": "{guardrail}"}),
        ("POST", "add-to-endpoint", {"endpoint_id": "{endpoint}", "guardrail_id": "gr-missing"}),
        ("POST", "add-to-endpoint", {"endpoint_id": "{endpoint}", "guardrail_id": "{guardrail}"}),
        ("POST", "add-to-endpoint", {"endpoint_id": "{endpoint}"}),
        ("DELETE", "remove-from-endpoint", {"endpoint_id": "{endpoint}", "guardrail_id": "gr-missing"}),
        ("DELETE", "remove-from-endpoint", {"guardrail_id": "{guardrail}"}),
        ("GET", "list-for-endpoint", {"endpoint_id": "e-missing"}),
        ("GET", "list-for-endpoint", {}),
        ("PATCH", "update-config", {"endpoint_id": "{endpoint}", "guardrail_id": "gr-missing", "execution_order": 1}),
        ("PATCH", "update-config", {"endpoint_id": "{endpoint}"}),
    ]
    for method, path, body in cases:
        answers = []
        for side, guardrail_id in zip(sides, existing, strict=True):
            ids = {"{scorer}": side.scorer_id, "{guardrail}": guardrail_id, "{endpoint}": side.endpoint_id}
            filled = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
            response = side.call(method, path, filled)
            payload = (
                response.json()
                if response.headers.get("content-type", "").startswith("application/json")
                else {"message": response.text[:200]}
            )
            message = payload.get("message", "").replace(side.endpoint_id, "<e>").replace(guardrail_id, "<g>")
            answers.append((response.status_code, payload.get("error_code"), message.replace(side.scorer_id, "<sc>")))
        if (path, body.get("stage"), body.get("action")) in _BAD_ENUMS:
            # MLflow's enum constructor raises on a name or number outside the enum: a 500 page there.
            assert answers[1][0] == 500 and answers[0][:2] == (400, "INVALID_PARAMETER_VALUE"), answers
        else:
            assert answers[0] == answers[1], (method, path, body)
    # A missing action endpoint fails MLflow's foreign key (a 400 carrying the SQL statement); here a 404 naming it.
    for side in sides:
        response = side.call("POST", "create", {**good, "scorer_id": side.scorer_id, "action_endpoint_id": "e-missing"})
        payload = response.json()
        if side is sides[0]:
            assert (response.status_code, payload["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST")
            assert payload["message"] == "Endpoint not found (endpoint_id='e-missing')"
        else:
            assert (response.status_code, payload["error_code"]) == (400, "BAD_REQUEST")
    assert [g.name for g in sides[0].store.list_gateway_guardrails()].count("x") == 0
