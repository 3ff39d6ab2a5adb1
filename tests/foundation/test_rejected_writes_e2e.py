"""Issue 41's requests that answered 500, and the rejected writes that left state every later read failed on.

Each request goes to the local runtime over HTTP: it answers MLflow's 4xx JSON error (the gateway runtime's and the
job routes' FastAPI ``{"detail": ...}``), and the reads that the old bug broke answer 200 afterwards (the trace's
info and ``traces/search`` over its experiment, ``jobs/search``), with nothing of the refused write stored.

Where ``mlflow server`` answers 4xx (a negative ``max_results``, a scorer version that cannot exist) the answer is
its; where it answers 500 or 200 with a wrong value stored (a time past int64 read as 0), it is a 400 here."""

from __future__ import annotations

import base64
import json
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

M2, M3, JOBS = "/api/2.0/mlflow", "/api/3.0/mlflow", "/ajax-api/3.0/jobs"
# The gateway's upstream is the local mock provider (loopback http, as the gateway runtime tests allow it).
LOOSE_API_BASE = {"MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https", "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "true"}


@dataclass
class World:
    url: str
    experiment_id: str
    run_id: str
    trace_id: str
    v2_trace_id: str
    assessment_id: str
    artifact_dir: str
    scorer_id: str
    endpoint: str

    def send(self, method: str, path: str, body: str | None = None, query: str = "") -> requests.Response:
        headers = {"content-type": "application/json"} if body is not None else {}
        data = body.encode("utf-8", "surrogatepass") if body is not None else None
        return requests.request(method, self.url + path + (f"?{query}" if query else ""), data=data, headers=headers, timeout=120)

    def ok(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = self.send(method, path, json.dumps(body) if body is not None else None)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])
        return response.json()


@pytest.fixture(scope="module")
def world(server: str) -> Iterator[World]:
    mock = MockLLM().start()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LOOSE_API_BASE.items():
            patch.setenv(name, value)
        yield _world(server, mock)
    mock.stop()


def _world(url: str, mock: MockLLM) -> World:
    w = World(url, "", "", "", "", "", "", "", "")
    suffix = uuid.uuid4().hex[:10]
    w.experiment_id = w.ok("POST", f"{M2}/experiments/create", {"name": f"rejected-{suffix}"})["experiment_id"]
    run = w.ok("POST", f"{M2}/runs/create", {"experiment_id": w.experiment_id})["run"]["info"]
    w.run_id, w.artifact_dir = run["run_id"], run["artifact_uri"].removeprefix("mlflow-artifacts:/")
    w.trace_id = f"tr-{uuid.uuid4().hex}"
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": w.experiment_id}}
    info = {"trace_id": w.trace_id, "trace_location": location, "request_time": "2024-01-01T00:00:00Z", "state": "OK"}
    w.ok("POST", f"{M3}/traces", {"trace": {"trace_info": info}})
    w.v2_trace_id = w.ok("POST", f"{M2}/traces", {"experiment_id": w.experiment_id, "timestamp_ms": 1000})["trace_info"]["request_id"]
    source = {"source_type": "HUMAN", "source_id": "t"}
    assessment = {"assessment_name": "q", "trace_id": w.trace_id, "source": source, "feedback": {"value": True}}
    w.assessment_id = w.ok("POST", f"{M3}/traces/{w.trace_id}/assessments", {"assessment": assessment})["assessment"]["assessment_id"]
    scorer = {"experiment_id": w.experiment_id, "name": "s1", "serialized_scorer": json.dumps({"name": "s1"})}
    w.scorer_id = w.ok("POST", f"{M3}/scorers/register", scorer)["scorer_id"]
    secret = {
        "secret_name": f"s-{suffix}",
        "secret_value": {"api_key": "sk-test-0123456789"},
        "provider": "openai",
        "auth_config": {"api_base": f"{mock.url}/v1"},
    }
    secret_id = w.ok("POST", f"{M3}/gateway/secrets/create", secret)["secret"]["secret_id"]
    definition = {"name": f"d-{suffix}", "secret_id": secret_id, "provider": "openai", "model_name": "gpt-4o"}
    definition_id = w.ok("POST", f"{M3}/gateway/model-definitions/create", definition)["model_definition"]["model_definition_id"]
    w.endpoint = f"e-{suffix}"
    config = {"model_definition_id": definition_id, "linkage_type": "PRIMARY", "weight": 1.0}
    w.ok("POST", f"{M3}/gateway/endpoints/create", {"name": w.endpoint, "model_configs": [config], "usage_tracking": False})
    return w


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # "{trace}", "{v2}", "{assessment}", "{dir}" filled from the world
    body: str | None = None  # JSON text as sent ("{exp}", "{run}", "{trace}", "{scorer}", "{endpoint}" filled)
    query: str = ""
    status: int = 400
    error_code: str | None = "INVALID_PARAMETER_VALUE"  # None: a FastAPI {"detail": ...} answer


DEEP_TOKEN = urllib.parse.quote(base64.b64encode(("[" * 5000 + "]" * 5000).encode()).decode())
CHAT = '{"model": "{endpoint}", "messages": "notalist"}'
SURROGATE_CHAT = '{"model": "{endpoint}", "messages": [{"role": "user", "content": "a\\ud800b"}]}'
# fmt: off
CASES = [
    Case("v2 search max_results -1", "GET", f"{M2}/traces", query="experiment_ids={exp}&max_results=-1"),
    Case("v2 search max_results -2147483649", "GET", f"{M2}/traces", query="experiment_ids={exp}&max_results=-2147483649"),
    Case(
        "delete-traces max_traces 10^60",
        "POST",
        f"{M3}/traces/delete-traces",
        '{"experiment_id": "{exp}", "max_timestamp_millis": 1, "max_traces": 1' + "0" * 60 + "}",
    ),
    Case("v2 start timestamp -2^63-1", "POST", f"{M2}/traces", '{"experiment_id": "{exp}", "timestamp_ms": -9223372036854775809}'),
    Case("v2 start timestamp 10^29", "POST", f"{M2}/traces", '{"experiment_id": "{exp}", "timestamp_ms": 1' + "0" * 29 + "}"),
    # The half-written trace: the end used to store a duration protobuf cannot write, and every read of it failed.
    Case("v2 end timestamp 2^63", "PATCH", f"{M2}/traces/{{v2}}", '{"timestamp_ms": 9223372036854775808, "status": "OK"}'),
    Case(
        "v2 end timestamp 2^62 (a year past 9999)", "PATCH", f"{M2}/traces/{{v2}}", '{"timestamp_ms": 4611686018427387904, "status": "OK"}'
    ),
    Case(
        "v3 search nested experiment",
        "POST",
        f"{M3}/traces/search",
        '{"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": [[1]]}]}',
    ),
    Case(
        "assessment feedback Infinity",
        "PATCH",
        f"{M3}/traces/{{trace}}/assessments/{{assessment}}",
        '{"assessment": {"feedback": {"value": Infinity}}, "update_mask": "feedback"}',
    ),
    Case(
        "assessment created with NaN",
        "POST",
        f"{M3}/traces/{{trace}}/assessments",
        '{"assessment": {"assessment_name": "n", "trace_id": "{trace}", "source": {"source_type": "HUMAN", "source_id": "t"}, "feedback": {"value": NaN}}}',
    ),
    Case("jobs/search statuses 1E400", "POST", f"{JOBS}/search", '{"statuses": 1E400}', error_code=None),
    Case(
        "log-inputs dataset tags 2^63",
        "POST",
        f"{M2}/runs/log-inputs",
        '{"run_id": "{run}", "datasets": [{"dataset": {"name": "d", "digest": "d", "source_type": "local", "source": "{}"}, "tags": 9223372036854775808}]}',
    ),
    Case(
        "mpu complete part_number 1e309",
        "POST",
        f"{M2}-artifacts/mpu/complete/{{dir}}",
        '{"path": "f.bin", "upload_id": "u", "parts": [{"part_number": 1e309, "etag": "e"}]}',
    ),
    Case(
        "mpu complete upload_id 500,000 chars",
        "POST",
        f"{M2}-artifacts/mpu/complete/{{dir}}",
        '{"path": "f.bin", "upload_id": "' + "u" * 500_000 + '", "parts": [{"part_number": 1, "etag": "e"}]}',
    ),
    Case(
        "mpu abort upload_id 500,000 chars",
        "POST",
        f"{M2}-artifacts/mpu/abort/{{dir}}",
        '{"path": "f.bin", "upload_id": "' + "u" * 500_000 + '"}',
    ),
    # mlflow server answers this 404 (no scorer version -1).
    Case(
        "guardrail scorer_version -1",
        "POST",
        f"{M3}/gateway/guardrails/create",
        '{"name": "g", "scorer_id": "{scorer}", "scorer_version": "-1", "stage": "BEFORE", "action": "VALIDATION"}',
        status=404,
        error_code="RESOURCE_DOES_NOT_EXIST",
    ),
    Case("guardrails list deep page token", "GET", f"{M3}/gateway/guardrails/list", query=f"page_token={DEEP_TOKEN}"),
    # The half-written jobs: a NaN or an infinity stored in a job made every jobs/search fail.
    Case(
        "issues/invoke categories -Infinity",
        "POST",
        "/ajax-api/3.0/mlflow/issues/invoke",
        '{"experiment_id": "{exp}", "trace_ids": ["{trace}"], "categories": [-Infinity], "provider": "openai", "endpoint_name": "{endpoint}"}',
    ),
    Case("job params NaN", "POST", f"{JOBS}/", '{"job_name": "demo_delete", "params": {"x": NaN}}', error_code=None),
    Case("job timeout Infinity", "POST", f"{JOBS}/", '{"job_name": "demo_delete", "params": {}, "timeout": Infinity}', error_code=None),
    *(
        Case(f"gateway {path} {label}", "POST", path, body, error_code=None)
        for path in ("/gateway/mlflow/v1/chat/completions", "/gateway/openai/v1/chat/completions")
        for label, body in (("messages notalist", CHAT), ("lone surrogate", SURROGATE_CHAT))
    ),
    Case(
        "gateway embeddings lone surrogate",
        "POST",
        "/gateway/openai/v1/embeddings",
        '{"model": "{endpoint}", "input": "\\udc00"}',
        error_code=None,
    ),
    Case(
        "gateway responses input a number", "POST", "/gateway/openai/v1/responses", '{"model": "{endpoint}", "input": 5}', error_code=None
    ),
    Case(
        "gateway responses lone surrogate",
        "POST",
        "/gateway/openai/v1/responses",
        '{"model": "{endpoint}", "input": "\\ud800"}',
        error_code=None,
    ),
]
# fmt: on


def _fill(text: str, w: World) -> str:
    values = {"exp": w.experiment_id, "run": w.run_id, "trace": w.trace_id, "v2": w.v2_trace_id, "assessment": w.assessment_id}
    values.update({"dir": w.artifact_dir, "scorer": w.scorer_id, "endpoint": w.endpoint})
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def _jobs(w: World) -> list[dict[str, Any]]:
    return w.ok("POST", f"{JOBS}/search", {})["jobs"]


def _job_ids(w: World) -> set[str]:
    return {job["job_id"] for job in _jobs(w)}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_refused_with_mlflow_s_error_and_every_read_still_answers(world: World, case: Case) -> None:
    w = world
    jobs_before = _job_ids(w)
    response = w.send(case.method, _fill(case.path, w), _fill(case.body, w) if case.body is not None else None, _fill(case.query, w))
    where = f"{case.name}: {response.status_code} {response.text[:400]}"
    assert response.status_code == case.status, where
    body = response.json()
    if case.error_code is None:
        assert isinstance(body["detail"], str) and body["detail"], where
    else:
        assert body["error_code"] == case.error_code and body["message"], where
    # The reads the old answers broke: the traces' infos, the experiment's trace search, the jobs (none added).
    for trace_id in (w.trace_id, w.v2_trace_id):
        w.ok("GET", f"{M3}/traces/{trace_id}")
    w.ok("GET", f"{M2}/traces/{w.v2_trace_id}/info")
    found = w.ok(
        "POST",
        f"{M3}/traces/search",
        {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": w.experiment_id}}]},
    )
    assert {t["trace_id"] for t in found["traces"]} == {w.trace_id, w.v2_trace_id}
    assessment = w.ok("GET", f"{M3}/traces/{w.trace_id}/assessments/{w.assessment_id}")["assessment"]
    assert assessment["feedback"]["value"] is True
    assert _job_ids(w) == jobs_before


def test_an_info_stored_with_a_duration_protobuf_cannot_write_still_reads(world: World) -> None:
    """An info written by the old v2 end (a duration of 2^63 ms) reads with the duration clamped, not a 500."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import traces as store

    w = world
    trace_id = w.ok("POST", f"{M2}/traces", {"experiment_id": w.experiment_id, "timestamp_ms": 5})["trace_info"]["request_id"]
    item = store.get_info_item(trace_id)
    table.put({**item, "execution_duration": 2**63 - 1, "request_time": 2**62})
    info = w.ok("GET", f"{M3}/traces/{trace_id}")["trace"]["trace_info"]
    assert info["execution_duration"] == "315576000000s" and info["request_time"].startswith("9999-12-31")
    w.ok("GET", f"{M2}/traces/{trace_id}/info")
    w.ok(
        "POST",
        f"{M3}/traces/search",
        {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": w.experiment_id}}]},
    )


def test_a_job_stored_with_nan_still_reads(world: World) -> None:
    """A job an older release stored with NaN in its parameters answers them as protobuf's JSON strings."""
    from serverless_mlflow.storage import table

    w = world
    from serverless_mlflow.store import jobs

    job = w.ok("POST", f"{JOBS}/", {"job_name": "demo_delete", "params": {}})
    table.put({**jobs.get(job["job_id"]), "params": json.dumps({"x": float("nan"), "y": [float("-inf")]})})
    found = [j for j in _jobs(w) if j["job_id"] == job["job_id"]]
    assert found and found[0]["params"] == {"x": "NaN", "y": ["-Infinity"]}
