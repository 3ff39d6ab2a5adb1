"""The client's async export sends a trace's info and its last spans at once. When the info comes first,
start_trace waits briefly for the spans in flight, and the spans' own request must be served meanwhile (as a
second Lambda environment would serve it), so the answer tells the client its spans are stored."""

from __future__ import annotations

import json
import threading
import time
import uuid

import mlflow
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from traces import ingest

from tests.conftest import unique

pytestmark = pytest.mark.e2e

SPANS_DELAY_SECONDS = 0.4


def _spans(trace_bytes: bytes) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_bytes, b"\x01" * 8, "root"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_000_100_000_000
    return request.SerializeToString()


def test_start_trace_sees_spans_that_arrive_while_it_waits(server: str) -> None:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("span-wait"))
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
        "request_time": "2023-11-14T22:13:20Z",
        "execution_duration": "0.100s",
        "state": "OK",
        "trace_metadata": {"mlflow.trace.sizeStats": json.dumps({"num_spans": 1})},
    }

    def send_spans_later() -> None:
        time.sleep(SPANS_DELAY_SECONDS)
        headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
        requests.post(f"{server}/v1/traces", data=_spans(trace_bytes), headers=headers, timeout=30).raise_for_status()

    spans_sender = threading.Thread(target=send_spans_later)
    started = time.monotonic()
    spans_sender.start()
    answer = requests.post(f"{server}/api/3.0/mlflow/traces", json={"trace": {"trace_info": info}}, timeout=30)
    elapsed = time.monotonic() - started
    spans_sender.join()

    assert answer.status_code == 200, answer.text
    assert answer.json()["trace"]["trace_info"]["tags"].get("mlflow.trace.spansLocation") == "TRACKING_STORE"
    assert SPANS_DELAY_SECONDS <= elapsed < ingest.SPAN_WAIT_SECONDS
    assert [span.name for span in mlflow.get_trace(trace_id).data.spans] == ["root"]
