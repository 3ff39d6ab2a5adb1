"""A model mapping's weight and fallback order as MLflow's server reads them (issue 22). MLflow parses the request
with protobuf: a value it refuses (a bare ``NaN``, a number past a float's range, a word) leaves the field at its
default (weight 1.0), the strings "Infinity"/"-Infinity" are read, and protobuf JSON answers an infinite weight
as a string. Before, a ``NaN`` weight was stored as is and every later ``endpoints/get`` and ``endpoints/list``
failed with a 500; a mapping an older version stored that way must still be answered."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

GW = "/api/3.0/mlflow/gateway"


def _endpoint(url: str) -> tuple[str, str]:
    """(endpoint id, an unattached model definition id) on the server at ``url``."""
    name = unique("w")

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = requests.post(f"{url}{GW}/{path}", json=body, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    secret = post("secrets/create", {"secret_name": name, "secret_value": {"api_key": "sk-1"}, "provider": "openai"})["secret"]["secret_id"]
    first, second = (
        post("model-definitions/create", {"name": f"{name}-{i}", "secret_id": secret, "provider": "openai", "model_name": "gpt-4o"})[
            "model_definition"
        ]["model_definition_id"]
        for i in (1, 2)
    )
    config = {"model_definition_id": first, "linkage_type": "PRIMARY", "weight": 1}
    endpoint = post("endpoints/create", {"name": name, "model_configs": [config], "usage_tracking": False})["endpoint"]["endpoint_id"]
    return endpoint, second


def _attach(url: str, weight: str, order: str) -> tuple[int, Any, list[tuple[Any, Any]], int]:
    """(status, the answer's (weight, fallback order) or error code, the endpoint's mappings after, list status)."""
    endpoint, definition = _endpoint(url)
    body = f'{{"endpoint_id":"{endpoint}","model_config":{{"model_definition_id":"{definition}","linkage_type":"FALLBACK","weight":{weight},"fallback_order":{order}}}}}'
    answer = requests.post(f"{url}{GW}/endpoints/models/attach", data=body, headers={"content-type": "application/json"}, timeout=30)
    mapping = answer.json().get("mapping", {}) if answer.status_code == 200 else {}
    shown = (mapping.get("weight"), mapping.get("fallback_order")) if answer.status_code == 200 else answer.status_code
    got = requests.get(f"{url}{GW}/endpoints/get", params={"endpoint_id": endpoint}, timeout=30)
    assert got.status_code == 200, got.text
    mappings = sorted(
        (m.get("weight"), m.get("fallback_order")) for m in got.json()["endpoint"]["model_mappings"] if m.get("linkage_type") == "FALLBACK"
    )
    return answer.status_code, shown, mappings, requests.get(f"{url}{GW}/endpoints/list", timeout=30).status_code


@pytest.mark.parametrize(
    ("weight", "order"),
    [
        ("NaN", "3"),  # the request: protobuf refuses a bare NaN (MLflow then also drops the fields after it)
        ("Infinity", "3"),
        ("1e39", "3"),
        ('"Infinity"', "3"),
        ('"-Infinity"', "3"),
        ('"1e309"', "3"),
        ('"abc"', "null"),
        ('{"a": 1}', "null"),
        ("[1]", "null"),
        ("true", "3"),
        ("false", "3"),
        ('"0.5"', "3"),
        ("0.25", '"2"'),
        ("0.25", "null"),
    ],
)
def test_weights_and_orders_read_as_mlflow_reads_them(server: str, weight: str, order: str) -> None:
    ours, theirs = _attach(server, weight, order), _attach(reference_server().url, weight, order)
    if weight in ("NaN", "Infinity", "1e39"):
        # MLflow's parse stops at the refused weight, so it also loses the order given after it; here only the
        # refused field takes its default.
        assert theirs[1:] == ((1.0, None), [(1.0, None)], 200)
        assert ours == (200, (1.0, 3), [(1.0, 3)], 200)
        return
    assert ours == theirs


def test_a_nan_weight_string_is_refused_before_anything_is_written(server: str) -> None:
    # MLflow stores "NaN" and its database refuses the row (a 400 RESOURCE_ALREADY_EXISTS); here it never reaches
    # the store: a 400 saying why, and the endpoint unchanged.
    ours, theirs = _attach(server, '"NaN"', "3"), _attach(reference_server().url, '"NaN"', "3")
    assert theirs[:3] == (400, 400, [])
    assert ours == (400, 400, [], 200)


def test_a_mapping_stored_with_a_nan_weight_is_answered(server: str) -> None:
    """An older version stored a bare NaN weight as the text "nan": get and list answer it (as protobuf JSON
    writes a NaN float) instead of failing."""
    endpoint, definition = _endpoint(server)
    item = table.get(ENTITY["gateway_endpoint"].key(workspace="default", endpoint_id=endpoint))
    assert item is not None
    attributes = {
        "mapping_id": "m-old",
        "endpoint_id": endpoint,
        "model_definition_id": definition,
        "weight": "nan",  # str(float("nan")), as the attach of an older version wrote it
        "linkage_type": "FALLBACK",
        "position": 5,
        "created_at": 1,
    }
    table.put(ENTITY["gateway_endpoint_mapping"].item(attributes, workspace="default", **attributes))
    got = requests.get(f"{server}{GW}/endpoints/get", params={"endpoint_id": endpoint}, timeout=30)
    assert got.status_code == 200, got.text
    assert [m["weight"] for m in got.json()["endpoint"]["model_mappings"]] == [1.0, "NaN"]
    listed = requests.get(f"{server}{GW}/endpoints/list", timeout=30)
    assert listed.status_code == 200, listed.text
    (ours,) = [e for e in listed.json()["endpoints"] if e["endpoint_id"] == endpoint]
    assert [m["weight"] for m in ours["model_mappings"]] == [1.0, "NaN"]
