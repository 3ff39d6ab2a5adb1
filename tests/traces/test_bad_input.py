"""Bad trace input gets MLflow's error code (never a 500) and writes nothing."""

from __future__ import annotations

import gzip
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import unique

pytestmark = pytest.mark.usefixtures("tracing")

UNKNOWN = "tr-" + "0" * 32


def _error_code(call: Any) -> str:
    with pytest.raises(MlflowException) as raised:
        call()
    return raised.value.error_code


def _unknown_trace_errors(uri: str) -> dict[str, str]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("bad"))
    client = MlflowClient(uri)
    return {
        "get_trace": _error_code(lambda: client.get_trace(UNKNOWN)),
        "get_trace_info": _error_code(lambda: client._tracing_client.get_trace_info(UNKNOWN)),
        "set_tag": _error_code(lambda: client.set_trace_tag(UNKNOWN, "k", "v")),
        "delete_tag": _error_code(lambda: client.delete_trace_tag(UNKNOWN, "k")),
        "feedback": _error_code(lambda: mlflow.log_feedback(trace_id=UNKNOWN, name="n", value=1)),
        "bad_filter": _error_code(lambda: mlflow.search_traces(locations=[experiment_id], filter_string="foo.bar = 'x'")),
        "bad_comparator": _error_code(lambda: mlflow.search_traces(locations=[experiment_id], filter_string="tag.a > 'x'")),
        "bad_order": _error_code(lambda: mlflow.search_traces(locations=[experiment_id], order_by=["nope DESC"])),
        "delete_neither": _error_code(lambda: client.delete_traces(experiment_id, max_traces=3)),
    }


def test_unknown_traces_and_bad_searches_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _unknown_trace_errors(server)
    assert ours == _unknown_trace_errors(reference_uri)
    assert ours["get_trace_info"] == "RESOURCE_DOES_NOT_EXIST"


def _otlp(server: str, body: bytes, headers: dict[str, str]) -> requests.Response:
    return requests.post(f"{server}/v1/traces", data=body, headers=headers, timeout=30)


def _span_request(trace_id: bytes, span_id: bytes) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_id, span_id, "s"
    span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    return request.SerializeToString()


def test_malformed_otlp_is_refused_without_a_write(server: str) -> None:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("otlp"))
    protobuf = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    garbage = _otlp(server, b"\xff\xfe not a protobuf", protobuf)
    assert (garbage.status_code, garbage.json()["detail"]) == (400, "Invalid OpenTelemetry format")
    empty = _otlp(server, b"", protobuf)
    assert empty.status_code == 400 and "no spans" in empty.json()["detail"]
    wrong_type = _otlp(server, _span_request(b"\x01" * 16, b"\x02" * 8), {**protobuf, "Content-Type": "text/plain"})
    assert wrong_type.status_code == 400
    no_header = _otlp(server, _span_request(b"\x01" * 16, b"\x02" * 8), {"Content-Type": "application/x-protobuf"})
    assert no_header.status_code == 422
    bad_ids = _otlp(server, _span_request(b"\x01" * 3, b"\x02" * 8), protobuf)
    assert bad_ids.status_code == 422
    bad_gzip = _otlp(server, b"not gzip", {**protobuf, "Content-Encoding": "gzip"})
    assert bad_gzip.status_code == 400
    unknown_experiment = _otlp(server, _span_request(b"\x03" * 16, b"\x04" * 8), {**protobuf, "x-mlflow-experiment-id": "987654321"})
    assert (unknown_experiment.status_code, unknown_experiment.json()["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST")
    # Nothing of the refused requests was stored; a good (gzip) request is.
    assert mlflow.search_traces(locations=[experiment_id], return_type="list") == []
    for trace_byte in (b"\x01", b"\x03"):
        with pytest.raises(MlflowException):
            MlflowClient().get_trace("tr-" + (trace_byte * 16).hex())
    good = _otlp(server, gzip.compress(_span_request(b"\x05" * 16, b"\x06" * 8)), {**protobuf, "Content-Encoding": "gzip"})
    assert good.status_code == 200


def test_oversized_assessment_is_refused_and_changes_nothing(server: str) -> None:
    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("big-assessment")))

    @mlflow.trace
    def f() -> int:
        return 1

    f()
    trace_id = mlflow.get_last_active_trace_id()
    kept = mlflow.log_feedback(trace_id=trace_id, name="ok", value=True)
    with pytest.raises(MlflowException) as raised:
        mlflow.log_feedback(trace_id=trace_id, name="huge", value="v", rationale="r" * (450 * 1024))
    assert raised.value.error_code == "INVALID_PARAMETER_VALUE"
    with pytest.raises(MlflowException) as raised:
        mlflow.update_assessment(
            trace_id, kept.assessment_id, mlflow.entities.Feedback(name="ok", value=False, rationale="r" * (450 * 1024))
        )
    assert raised.value.error_code == "INVALID_PARAMETER_VALUE"
    assessments = MlflowClient().get_trace(trace_id).info.assessments
    assert [(a.name, a.feedback.value, a.rationale) for a in assessments] == [("ok", True, None)]


def test_spans_without_start_trace_make_a_searchable_trace(server: str) -> None:
    # Any OTLP exporter (not only MLflow's, which also sends start_trace) must not lose its traces.
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("otel-only"))
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    trace_bytes = bytes.fromhex("ab" * 16)
    root, child = spans.add(), spans.add()
    root.trace_id, root.span_id, root.name = trace_bytes, b"\x01" * 8, "otel-root"
    root.start_time_unix_nano, root.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_250_000_000
    child.trace_id, child.span_id, child.parent_span_id, child.name = trace_bytes, b"\x02" * 8, b"\x01" * 8, "otel-child"
    child.start_time_unix_nano, child.end_time_unix_nano = 1_700_000_000_100_000_000, 1_700_000_000_200_000_000
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    assert _otlp(server, request.SerializeToString(), headers).status_code == 200

    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert [(t.info.trace_id, t.info.request_time, t.info.execution_duration, str(t.info.state)) for t in listed] == [
        ("tr-" + "ab" * 16, 1_700_000_000_000, 250, "OK")
    ]
    assert sorted(s.name for s in listed[0].data.spans) == ["otel-child", "otel-root"]
