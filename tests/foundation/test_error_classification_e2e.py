"""MLflow 3.17+'s error classification fields (``sqlstate``, ``error_class``) in every error body, as MLflow's
``MlflowException.serialize_as_json`` writes them: checked against MLflow's own exception for every error code, and
end to end against MLflow's own server (its Flask app on sqlite) and its client's ``RestException``."""

from __future__ import annotations

import json
from typing import Any

import mlflow
import pytest
import requests
from mlflow.exceptions import MlflowException, RestException
from mlflow.protos.databricks_pb2 import ErrorCode

from serverless_mlflow.core.errors import ATTRIBUTE_NOT_FOUND, MlflowError
from tests.conftest import unique
from tests.mlflow_reference import reference_server


@pytest.mark.parametrize("code", ErrorCode.keys())
def test_every_error_code_is_classified_as_mlflow(code: str) -> None:
    ours = MlflowError("why", code).to_json()
    theirs = json.loads(MlflowException("why", ErrorCode.Value(code)).serialize_as_json())
    # Same fields in the same order (a client reading the raw text sees the same body).
    assert list(ours.items()) == list(theirs.items())


def test_a_named_class_sets_its_own_sqlstate_as_mlflow() -> None:
    ours = MlflowError("why", "INVALID_PARAMETER_VALUE", error_class=ATTRIBUTE_NOT_FOUND).to_json()
    theirs = MlflowException.invalid_parameter_value("why", error_class="ATTRIBUTE_NOT_FOUND").serialize_as_json()
    assert list(ours.items()) == list(json.loads(theirs).items())


def _both(server: str, method: str, path: str, body: dict[str, Any] | None = None) -> list[tuple[int, Any]]:
    out = []
    for base in (server, reference_server().url):
        params, payload = (body, None) if method == "GET" else (None, body)
        response = requests.request(method, f"{base}{path}", params=params, json=payload, timeout=30)
        out.append((response.status_code, response.json()))
    return out


@pytest.mark.e2e
def test_error_bodies_carry_mlflows_classification(server: str) -> None:
    name = unique("classified")
    for base in (server, reference_server().url):
        requests.post(f"{base}/api/2.0/mlflow/registered-models/create", json={"name": name}, timeout=30).raise_for_status()
    cases = [
        # RESOURCE_DOES_NOT_EXIST, RESOURCE_ALREADY_EXISTS, INVALID_PARAMETER_VALUE: KAM00 with each code's class.
        ("GET", "/api/2.0/mlflow/experiments/get", {"experiment_id": "987654321"}),
        ("POST", "/api/2.0/mlflow/registered-models/create", {"name": name}),
        ("GET", "/api/2.0/mlflow/experiments/get", {"experiment_id": "abc"}),
        # An order_by field MLflow's model has no attribute for: ATTRIBUTE_NOT_FOUND, KAM04.
        ("POST", "/api/2.0/mlflow/logged-models/search", {"experiment_ids": ["0"], "order_by": [{"field_name": "nope"}]}),
    ]
    classified = []
    for method, path, body in cases:
        ours, theirs = _both(server, method, path, body)
        assert ours == theirs, (path, body)
        classified.append((ours[0], ours[1]["error_code"], ours[1].get("sqlstate"), ours[1].get("error_class")))
    assert classified == [
        (404, "RESOURCE_DOES_NOT_EXIST", "KAM00", "RESOURCE_NOT_FOUND"),
        (400, "RESOURCE_ALREADY_EXISTS", "KAM00", "RESOURCE_ALREADY_EXISTS"),
        (400, "INVALID_PARAMETER_VALUE", "KAM00", "INVALID_PARAMETER_VALUE"),
        (400, "INVALID_PARAMETER_VALUE", "KAM04", "ATTRIBUTE_NOT_FOUND"),
    ]


@pytest.mark.e2e
def test_the_client_reads_the_classification_as_from_mlflow(server: str) -> None:
    seen = []
    for base in (server, reference_server().url):
        with pytest.raises(RestException) as raised:
            mlflow.MlflowClient(base).get_experiment("987654321")
        seen.append((raised.value.error_code, raised.value.sqlstate, raised.value.error_class))
    assert seen[0] == seen[1] == ("RESOURCE_DOES_NOT_EXIST", "KAM00", "RESOURCE_NOT_FOUND")
