"""Trace archival against MLflow's own server (FastAPI app on sqlite, ``MLFLOW_TRACE_ARCHIVAL_CONFIG`` set): the same
steps on both sides, the answers compared.

MLflow's pass is driven directly (``SqlAlchemyStore.archive_traces`` on the reference's database, as its periodic
task calls it); ours by the monitor's ``tick``. Each side archives into its own store (a local directory there, the
stack's bucket here), so the archive location tag is compared by its MLflow path only.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import unique
from tests.mlflow_reference import _SERVE_ASGI, Reference, _start

pytestmark = pytest.mark.e2e

M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
RETENTION = "999999d"
ROOT, CHILD = b"\x01" * 8, b"\x02" * 8


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    directory = tmp_path_factory.mktemp("archival-reference")
    config = directory / "archival.yaml"
    archive = directory / "archive"
    config.write_text(f"trace_archival:\n  enabled: true\n  location: {archive.as_uri()}\n  retention: {RETENTION}\n")
    found = _start(_SERVE_ASGI, extra_env={"MLFLOW_TRACE_ARCHIVAL_CONFIG": str(config)})
    found.archive_uri = archive.as_uri()  # type: ignore[attr-defined]
    return found


@pytest.fixture
def ours(monkeypatch: pytest.MonkeyPatch, local_runtime: Any) -> Iterator[Any]:
    monkeypatch.setenv("TRACE_ARCHIVAL_INTERVAL_SECONDS", "60")  # every tick (the deployed default: 300 s)
    monkeypatch.setenv("TRACE_ARCHIVAL_RETENTION", RETENTION)
    yield local_runtime


class Side:
    def __init__(self, url: str) -> None:
        self.url = url
        answer = requests.post(f"{url}{M2}/experiments/create", json={"name": unique("archival-ref")}, timeout=60)
        assert answer.status_code == 200, answer.text
        self.experiment_id = answer.json()["experiment_id"]

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> tuple[int, Any]:
        answer = requests.request(method, f"{self.url}{path}", json=body, params=query, timeout=60)
        return answer.status_code, answer.json() if answer.content else {}

    def export(self, trace_bytes: bytes, spans: list[tuple[bytes, bytes | None, str]], start_ms: int) -> tuple[int, Any]:
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        for offset, (span_id, parent, text) in enumerate(spans):
            span = scope.spans.add()
            span.trace_id, span.span_id, span.name = trace_bytes, span_id, f"span-{span_id.hex()[:2]}"
            if parent:
                span.parent_span_id = parent
            attribute = span.attributes.add()
            attribute.key, attribute.value.string_value = "mlflow.spanInputs", json.dumps({"text": text})
            span.start_time_unix_nano = (start_ms + offset) * 1_000_000
            span.end_time_unix_nano = (start_ms + 10 - offset) * 1_000_000
        headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": self.experiment_id}
        answer = requests.post(f"{self.url}/v1/traces", data=request.SerializeToString(), headers=headers, timeout=60)
        return answer.status_code, answer.json() if answer.content else {}

    def info(self, trace_id: str) -> dict[str, Any]:
        status, body = self.call("GET", f"{M3}/traces/{trace_id}")
        assert status == 200, body
        info = body["trace"]["trace_info"]
        tags = dict(info.get("tags", {}))
        tags.pop("mlflow.artifactLocation", None)
        location = tags.pop("mlflow.trace.archiveLocation", None)
        # Each side's own archive root; MLflow's path below it.
        if location:
            experiment, *rest = location.rstrip("/").split("/")[-4:]
            tags["archive path"] = "/".join(["<exp>" if experiment == self.experiment_id else experiment, *rest])
        return {"state": info["state"], "tags": tags, "request_time": info["request_time"]}

    def raw_spans(self, trace_id: str) -> list[dict[str, Any]]:
        status, body = self.call("GET", f"{M3}/traces/get", query={"trace_id": trace_id})
        assert status == 200, body
        return body["trace"]["spans"]

    def spans(self, trace_id: str) -> list[tuple[Any, ...]]:
        """What both servers' span JSON says alike (their attribute encodings differ, archived or not)."""
        keys = ("span_id", "parent_span_id", "name", "start_time_unix_nano", "end_time_unix_nano")
        return [tuple(str(span.get(k)) for k in keys) for span in self.raw_spans(trace_id)]

    def search(self, filter_string: str) -> int:
        location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": self.experiment_id}}
        status, body = self.call("POST", f"{M3}/traces/search", {"locations": [location], "filter": filter_string, "max_results": 50})
        assert status == 200, body
        return len(body.get("traces", []))

    def experiment(self) -> dict[str, Any]:
        status, body = self.call("GET", f"{M2}/experiments/get", query={"experiment_id": self.experiment_id})
        assert status == 200, body
        experiment = body["experiment"]
        return {"tags": experiment.get("tags", []), "effective": experiment.get("effective_trace_archival_retention")}


def _reference_pass(reference: Reference) -> int:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = SqlAlchemyStore(f"sqlite:///{reference.directory / 'mlflow.db'}", "mlflow-artifacts:/")
    return store.archive_traces(resolved_trace_archival_location=reference.archive_uri, broader_retention=RETENTION)  # type: ignore[attr-defined]


def test_archival_answers_as_mlflow(reference: Reference, ours: Any, server: str) -> None:
    sides = (Side(server), Side(reference.url))
    seen: dict[str, tuple[Any, Any]] = {}

    def both(name: str, step: Any) -> tuple[Any, Any]:
        seen[name] = (step(sides[0]), step(sides[1]))
        return seen[name]

    both("server-info", lambda s: s.call("GET", f"{M3}/server-info")[1].get("trace_archival_enabled"))
    both("effective default", lambda s: s.experiment())
    for number, value in enumerate(
        ("7d", json.dumps({"type": "duration", "value": "2h"}), json.dumps({"type": "duration", "value": "0d"}))
    ):
        both(
            f"retention tag {number}",
            lambda s, v=value: s.call(
                "POST",
                f"{M2}/experiments/set-experiment-tag",
                {"experiment_id": s.experiment_id, "key": "mlflow.trace.archivalRetention", "value": v},
            )[0],
        )
    both("effective after tag", lambda s: s.experiment())

    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    start = int(time.time() * 1000) - 60_000
    both("export", lambda s: s.export(trace_bytes, [(ROOT, None, "hello archive"), (CHILD, ROOT, "child words")], start))
    both("info before", lambda s: s.info(trace_id))
    both("spans before", lambda s: s.spans(trace_id))
    before = [side.raw_spans(trace_id) for side in sides]
    both("content search before", lambda s: s.search("span.content LIKE '%child words%'"))

    both(
        "archive now",
        lambda s: s.call(
            "POST",
            f"{M2}/experiments/set-experiment-tag",
            {"experiment_id": s.experiment_id, "key": "mlflow.trace.archiveNow", "value": "{}"},
        )[0],
    )
    archived = (ours.monitor.tick()["archived_traces"], _reference_pass(reference))
    assert archived == (1, 1)

    both("info after", lambda s: s.info(trace_id))
    both("spans after", lambda s: s.spans(trace_id))
    after = [side.raw_spans(trace_id) for side in sides]
    both("content search after", lambda s: s.search("span.content LIKE '%child words%'"))
    both("name search after", lambda s: s.search("span.name = 'span-02'"))
    both("experiment after", lambda s: s.experiment())
    both("late span", lambda s: s.export(trace_bytes, [(b"\x03" * 8, ROOT, "late")], start))
    both("spans after late span", lambda s: s.spans(trace_id))
    both("second pass", lambda s: None)

    for step, (theirs_ours, theirs) in seen.items():
        assert theirs_ours == theirs, step
    assert after == before  # each side answers the archived spans exactly as before
    assert seen["info after"][0]["tags"]["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    assert seen["late span"][0][0] == 500
