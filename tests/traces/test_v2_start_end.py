"""The v2 trace routes mlflow 2.x clients write with: ``POST /api/2.0/mlflow/traces`` starts a trace (the server
picks its id), ``PATCH /api/2.0/mlflow/traces/<request_id>`` ends it. MLflow's REST test
``test_legacy_start_and_end_trace_v2`` run against ours and against MLflow's own server; the raw answers compared.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from mlflow import MlflowClient
from mlflow.entities.trace_status import TraceStatus

from tests.conftest import unique
from tests.mlflow_reference import reference_server


def _user_tags(tags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in tags.items() if not k.startswith("mlflow.")}


def _legacy_start_and_end(uri: str) -> list[tuple[Any, ...]]:
    """MLflow's test_legacy_start_and_end_trace_v2 (tests/tracking/test_rest_tracking.py), with what it asserts."""
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(unique("start end trace"))
    store = client._tracing_client.store
    started = store.deprecated_start_trace_v2(
        experiment_id=experiment_id,
        timestamp_ms=1000,
        request_metadata={"meta1": "apple", "meta2": "grape"},
        tags={"tag1": "football", "tag2": "basketball"},
    )
    artifact_location = started.tags["mlflow.artifactLocation"]
    assert artifact_location.endswith(f"/{experiment_id}/traces/{started.request_id}/artifacts")
    ended = store.deprecated_end_trace_v2(
        request_id=started.request_id,
        timestamp_ms=3000,
        status=TraceStatus.OK,
        request_metadata={"meta1": "orange", "meta3": "banana"},
        tags={"tag1": "soccer", "tag3": "tennis"},
    )
    out = []
    for info in (started, ended):
        assert info.experiment_id == experiment_id and len(info.request_id) == 32
        out.append((info.timestamp_ms, info.execution_time_ms, info.status, info.request_metadata, _user_tags(info.tags)))
    return out


def test_legacy_start_and_end_trace_v2_as_mlflow(server: str) -> None:
    ours = _legacy_start_and_end(server)
    assert ours == _legacy_start_and_end(reference_server().url)
    assert ours == [
        (1000, 0, TraceStatus.IN_PROGRESS, {"meta1": "apple", "meta2": "grape"}, {"tag1": "football", "tag2": "basketball"}),
        (
            1000,
            2000,
            TraceStatus.OK,
            {"meta1": "orange", "meta2": "grape", "meta3": "banana"},
            {"tag1": "soccer", "tag2": "basketball", "tag3": "tennis"},
        ),
    ]


def _raw(base: str, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = requests.request(method, f"{base}/api/2.0/mlflow/traces{path}", json=body, timeout=30)
    return response.status_code, response.json()


def _shape(status: int, body: dict[str, Any]) -> tuple[int, Any]:
    if status != 200:
        return status, body.get("error_code")
    info = dict(body["trace_info"])
    info.pop("request_id")
    info.pop("experiment_id")
    info["tags"] = sorted(t["key"] for t in info.get("tags", []))
    return status, info


@pytest.mark.parametrize(
    "start",
    [
        {"timestamp_ms": 5, "request_metadata": [{"key": "a", "value": "1"}], "tags": [{"key": "mlflow.traceName", "value": "n"}]},
        {},
        {"timestamp_ms": "x"},
        {"tags": [{"value": "no key"}]},
        {"request_metadata": "nope"},
    ],
)
def test_start_and_end_answers_as_mlflow(server: str, start: dict[str, Any]) -> None:
    answers = []
    for base in (server, reference_server().url):
        experiment_id = MlflowClient(base).create_experiment(unique("v2"))
        status, body = _raw(base, "POST", "", {"experiment_id": experiment_id, **start})
        answer = [_shape(status, body)]
        if status == 200:
            request_id = body["trace_info"]["request_id"]
            for end in ({"timestamp_ms": 9, "status": "ERROR", "tags": [{"key": "t", "value": "v"}]}, {"status": 7}, {"tags": [{}]}):
                answer.append(_shape(*_raw(base, "PATCH", f"/{request_id}", end)))
            answer.append(_shape(*_raw(base, "PATCH", "/no-such-trace", {"timestamp_ms": 1, "status": "OK"})))
        answers.append(answer)
    assert answers[0] == answers[1]


def test_start_in_a_missing_experiment_is_refused_as_mlflow(server: str) -> None:
    ours = _raw(server, "POST", "", {"experiment_id": "987654321", "timestamp_ms": 1})
    reference = _raw(reference_server().url, "POST", "", {"experiment_id": "987654321", "timestamp_ms": 1})
    assert (ours[0], ours[1]["error_code"]) == (reference[0], reference[1]["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST")
