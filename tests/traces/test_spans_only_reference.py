"""A trace known only by non-root spans, against MLflow's own server (FastAPI app: OTLP + every REST route).

SqlAlchemyStore.log_spans makes a trace's info from any span batch (earliest start, latest end, IN_PROGRESS
until the root span comes) and every later batch widens it; the root span's batch moves the request time to the
root's start and gives the root's state. (Ours widens it from the root's batch on: ``traces.span_infos``.) The same OTLP batches (same trace ids) go to both servers; after each,
the trace's info, its search listing and its tags and assessments must read the same.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.conftest import unique
from tests.mlflow_reference import asgi_reference_server

pytestmark = pytest.mark.e2e

M3 = "/api/3.0/mlflow"
ROOT, CHILD, GRANDCHILD = b"\x01" * 8, b"\x02" * 8, b"\x03" * 8


class Side:
    def __init__(self, url: str) -> None:
        self.url = url
        answer = requests.post(f"{url}/api/2.0/mlflow/experiments/create", json={"name": unique("spans-only")}, timeout=60)
        assert answer.status_code == 200, answer.text
        self.experiment_id = answer.json()["experiment_id"]

    def export(self, trace_bytes: bytes, spans: list[tuple[bytes, bytes | None, int, int, bool]]) -> None:
        """One OTLP request: (span id, parent id, start ms, end ms, error) per span."""
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        for span_id, parent, start, end, error in spans:
            span = scope.spans.add()
            span.trace_id, span.span_id, span.name = trace_bytes, span_id, span_id.hex()
            if parent:
                span.parent_span_id = parent
            span.start_time_unix_nano, span.end_time_unix_nano = start * 1_000_000, end * 1_000_000
            if error:
                span.status.code = Status.STATUS_CODE_ERROR
        headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": self.experiment_id}
        answer = requests.post(f"{self.url}/v1/traces", data=request.SerializeToString(), headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        answer = requests.request(method, f"{self.url}{M3}/{path}", json=body, timeout=60)
        return answer.status_code, answer.json() if answer.content else {}

    def info(self, trace_id: str) -> dict[str, Any]:
        status, body = self.call("GET", f"traces/{trace_id}")
        assert status == 200, body
        return _comparable(body["trace"]["trace_info"])

    def listed(self) -> list[dict[str, Any]]:
        location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": self.experiment_id}}
        status, body = self.call("POST", "traces/search", {"locations": [location], "max_results": 10})
        assert status == 200, body
        return [_comparable(info) for info in body.get("traces", [])]


def _comparable(info: dict[str, Any]) -> dict[str, Any]:
    """The info without what differs per server by nature (experiment ids, artifact locations, assessment ids and times)."""
    out = {k: v for k, v in info.items() if k not in ("trace_location",)}
    out["tags"] = {k: v for k, v in info.get("tags", {}).items() if k != "mlflow.artifactLocation"}
    out["assessments"] = [
        {k: v for k, v in a.items() if k not in ("assessment_id", "create_time", "last_update_time")} for a in info.get("assessments", [])
    ]
    return out


@pytest.fixture(scope="module")
def sides(server: str) -> tuple[Side, Side]:
    return Side(server), Side(asgi_reference_server().url)


def _both(sides: tuple[Side, Side], step: Any) -> tuple[Any, Any]:
    return step(sides[0]), step(sides[1])


def test_a_trace_made_from_child_spans_widens_to_its_root_as_in_mlflow(sides: tuple[Side, Side]) -> None:
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    seen: dict[str, tuple[Any, Any]] = {}

    # A grandchild first (as MLflow's exporter sends spans as they end): an IN_PROGRESS trace of its range.
    _both(sides, lambda s: s.export(trace_bytes, [(GRANDCHILD, CHILD, t0 + 20, t0 + 30, False)]))
    seen["grandchild"] = _both(sides, lambda s: s.info(trace_id))
    seen["listed"] = _both(sides, lambda s: s.listed())
    # Its parent, starting earlier and ending later (ours widens the info when the root comes: span_infos).
    _both(sides, lambda s: s.export(trace_bytes, [(CHILD, ROOT, t0 + 10, t0 + 40, False)]))
    # Tags and assessments on the trace before its root arrives, kept when the root moves it.
    seen["tag"] = _both(sides, lambda s: s.call("PATCH", f"traces/{trace_id}/tags", {"key": "k", "value": "v"}))
    assessment = {
        "trace_id": trace_id,
        "assessment_name": "q",
        "source": {"source_type": "HUMAN", "source_id": "u"},
        "feedback": {"value": 1},
    }
    statuses = _both(sides, lambda s: s.call("POST", f"traces/{trace_id}/assessments", {"assessment": assessment})[0])
    seen["tagged"] = _both(sides, lambda s: {k: v for k, v in s.info(trace_id).items() if k in ("tags", "assessments", "state")})
    # A re-sent span changes nothing; the root (an error) gives the trace its start, end and state.
    _both(sides, lambda s: s.export(trace_bytes, [(CHILD, ROOT, t0 + 10, t0 + 40, False)]))
    _both(sides, lambda s: s.export(trace_bytes, [(ROOT, None, t0, t0 + 50, True)]))
    seen["root"] = _both(sides, lambda s: s.info(trace_id))
    seen["listed after root"] = _both(sides, lambda s: s.listed())
    # A late span past the root's end still widens an info that start_trace never finalized.
    _both(sides, lambda s: s.export(trace_bytes, [(b"\x04" * 8, ROOT, t0 + 45, t0 + 70, False)]))
    seen["late"] = _both(sides, lambda s: s.info(trace_id))

    for step, (ours, theirs) in seen.items():
        assert ours == theirs, step
    assert statuses == (200, 200)
    ours = dict(seen)
    assert ours["grandchild"][0]["state"] == "IN_PROGRESS"
    assert ours["grandchild"][0]["execution_duration"] == "0.010s"
    assert len(ours["listed"][0]) == 1
    assert ours["root"][0]["state"] == "ERROR"
    assert ours["root"][0]["execution_duration"] == "0.050s"
    assert ours["root"][0]["tags"]["k"] == "v" and len(ours["root"][0]["assessments"]) == 1
    assert ours["late"][0]["execution_duration"] == "0.070s"


def test_a_batch_of_child_spans_only_makes_one_trace_of_their_range(sides: tuple[Side, Side]) -> None:
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 30_000
    batch = [(GRANDCHILD, CHILD, t0 + 5, t0 + 9, True), (CHILD, ROOT, t0 + 3, t0 + 12, False)]
    _both(sides, lambda s: s.export(trace_bytes, batch))
    ours, theirs = _both(sides, lambda s: s.info(trace_id))
    assert ours == theirs
    assert (ours["state"], ours["execution_duration"]) == ("IN_PROGRESS", "0.009s")  # a child's error is not the trace's
