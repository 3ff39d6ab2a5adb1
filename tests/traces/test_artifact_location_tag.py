"""A trace info's ``mlflow.artifactLocation`` tag is composed from its experiment's artifact location when read
(infos no longer store it: ``store.traces.tags_of``). It reads as MLflow's server answers it, for an info made
from spans and one written by start_trace, and deleting it removes it as in MLflow."""

from __future__ import annotations

import uuid

import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import unique
from tests.mlflow_reference import asgi_reference_server

pytestmark = pytest.mark.e2e

M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
TAG = "mlflow.artifactLocation"


def _experiment(url: str) -> tuple[str, str]:
    answer = requests.post(f"{url}{M2}/experiments/create", json={"name": unique("artifact tag")}, timeout=60)
    assert answer.status_code == 200, answer.text
    experiment_id = answer.json()["experiment_id"]
    got = requests.get(f"{url}{M2}/experiments/get", params={"experiment_id": experiment_id}, timeout=60).json()
    return experiment_id, got["experiment"]["artifact_location"]


def _export_root(url: str, experiment_id: str, trace_bytes: bytes) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_bytes, b"\x01" * 8, "root"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_001_000_000_000
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    answer = requests.post(f"{url}/v1/traces", data=request.SerializeToString(), headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text


def _tags(url: str, trace_id: str) -> dict[str, str]:
    answer = requests.get(f"{url}{M3}/traces/{trace_id}", timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["trace"]["trace_info"].get("tags") or {}


def _walk(url: str) -> list[object]:
    experiment_id, location = _experiment(url)
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    _export_root(url, experiment_id, trace_bytes)
    out: list[object] = [_tags(url, trace_id).get(TAG) == f"{location}/traces/{trace_id}/artifacts"]
    started = requests.post(
        f"{url}{M3}/traces",
        json={
            "trace": {
                "trace_info": {
                    "trace_id": trace_id,
                    "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
                    "request_time": "2023-11-14T22:13:20Z",
                    "execution_duration": "1s",
                    "state": "OK",
                    "tags": {TAG: "s3://elsewhere/x", "t": "v"},
                }
            }
        },
        timeout=60,
    )
    assert started.status_code == 200, started.text
    answered = started.json()["trace"]["trace_info"]["tags"]
    out += [answered.get(TAG) == f"{location}/traces/{trace_id}/artifacts", _tags(url, trace_id).get(TAG) == answered.get(TAG)]
    found = requests.post(
        f"{url}{M3}/traces/search",
        json={"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}]},
        timeout=60,
    )
    assert found.status_code == 200, found.text
    out.append([info["tags"].get(TAG) == answered.get(TAG) for info in found.json()["traces"]])
    deleted = requests.delete(f"{url}{M3}/traces/{trace_id}/tags", params={"key": TAG}, timeout=60)
    out += [deleted.status_code, TAG in _tags(url, trace_id), _tags(url, trace_id).get("t")]
    again = requests.delete(f"{url}{M3}/traces/{trace_id}/tags", params={"key": TAG}, timeout=60)
    out.append((again.status_code, again.json().get("error_code")))
    return out


def test_infos_do_not_store_it(server: str) -> None:
    from serverless_mlflow.store import traces

    experiment_id, location = _experiment(server)
    trace_bytes = uuid.uuid4().bytes
    _export_root(server, experiment_id, trace_bytes)
    stored = traces.info_item_or_none("tr-" + trace_bytes.hex())
    assert stored is not None and TAG not in (stored.get("tags") or {})
    assert traces.tags_of(stored)[TAG] == f"{location}/traces/tr-{trace_bytes.hex()}/artifacts"


def test_artifact_location_tag_reads_as_mlflow(server: str) -> None:
    ours = _walk(server)
    assert ours == _walk(asgi_reference_server().url)
    assert ours[:4] == [True, True, True, [True]]
