"""Traces whose spans live in a traces.json artifact (older clients) still read; traces link to runs."""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import TraceInfo, TraceLocation, TraceState
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

from tests.conftest import unique

pytestmark = pytest.mark.usefixtures("tracing")


def test_trace_with_spans_in_a_traces_json_artifact_reads_back(server: str, reference_uri: str) -> None:
    # Spans as an older client leaves them: logged against another store, then carried over as traces.json.
    mlflow.set_tracking_uri(reference_uri)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("source")))

    @mlflow.trace(name="legacy")
    def legacy(x: int) -> int:
        with mlflow.start_span(name="inner") as span:
            span.set_outputs(x)
        return x

    legacy(7)
    source = MlflowClient(reference_uri).get_trace(mlflow.get_last_active_trace_id())

    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("legacy"))
    trace_id = "tr-" + uuid.uuid4().hex
    store = MlflowClient(server)._tracing_client.store
    info = store.start_trace(
        TraceInfo(
            trace_id=trace_id,
            trace_location=TraceLocation.from_experiment_id(experiment_id),
            request_time=source.info.request_time,
            execution_duration=source.info.execution_duration,
            state=TraceState.OK,
            tags={"mlflow.traceName": "legacy"},
        )
    )
    # No span reached the store: the info does not claim them, and points at its artifact location.
    assert "mlflow.trace.spansLocation" not in info.tags
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "traces.json")
        path.write_text(json.dumps(source.data.to_dict()))
        get_artifact_repository(info.tags["mlflow.artifactLocation"]).log_artifact(str(path))

    fetched = MlflowClient().get_trace(trace_id)
    assert sorted(s.name for s in fetched.data.spans) == ["inner", "legacy"]
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert [(t.info.trace_id, len(t.data.spans)) for t in listed] == [(trace_id, 2)]
    # The UI's trace-data download is sent to the artifact that holds the spans.
    import requests

    artifact = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": trace_id}, timeout=30)
    assert artifact.status_code == 200
    assert sorted(span["name"] for span in artifact.json()["spans"]) == ["inner", "legacy"]


def _linked(uri: str) -> dict[str, object]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("links"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def f(x: int) -> int:
        return x

    with mlflow.start_run() as run:
        f(1)
    in_run = mlflow.get_last_active_trace_id()
    f(2)
    outside = mlflow.get_last_active_trace_id()
    f(3)
    client = MlflowClient(uri)
    with mlflow.start_run() as other:
        pass
    client.link_traces_to_run([outside], other.info.run_id)
    first = mlflow.search_traces(locations=[experiment_id], run_id=run.info.run_id, return_type="list")
    second = mlflow.search_traces(locations=[experiment_id], run_id=other.info.run_id, return_type="list")
    return {
        "first": [t.info.trace_id == in_run for t in first],
        "second": [t.info.trace_id == outside for t in second],
    }


def test_link_traces_to_run_matches_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _linked(server)
    assert ours == _linked(reference_uri)
    assert ours == {"first": [True], "second": [True]}


def test_get_trace_artifact_answers_the_trace_data_the_client_reads(server: str) -> None:
    import requests

    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("artifact")))

    @mlflow.trace(span_type="LLM")
    def answer(question: str) -> dict:
        with mlflow.start_span(name="lookup") as span:
            span.set_attribute("hits", [1, 2, 3])
            span.add_event(mlflow.entities.SpanEvent(name="cache-miss", attributes={"key": "q"}))
        return {"answer": question.upper(), "score": 0.5}

    answer("why")
    trace_id = mlflow.get_last_active_trace_id()
    response = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": trace_id}, timeout=30)
    assert response.status_code == 200
    served = response.json()["spans"]
    expected = MlflowClient().get_trace(trace_id).data.to_dict()["spans"]
    # The 3.17 client's span dicts, plus 3.18's "kind" (tests/clients/core checks it against 3.18's own to_dict).
    assert {s["kind"] for s in served} == {"SPAN_KIND_INTERNAL"}
    served = [{k: v for k, v in s.items() if k != "kind"} for s in served]
    assert sorted(served, key=lambda s: s["name"]) == sorted(expected, key=lambda s: s["name"])

    missing = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", timeout=30)
    assert (missing.status_code, missing.json()["error_code"]) == (400, "BAD_REQUEST")
