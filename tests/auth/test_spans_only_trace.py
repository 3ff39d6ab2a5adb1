"""Under basic auth, a trace known only by its spans (OTLP export, no root span yet) is a trace:
MLflow's ``log_spans`` creates the trace's row, and its auth app resolves the trace's experiment for link-to-run
(validate_can_link_traces_to_run) and every trace-id route. Ours resolves it from the locator ``log_spans`` writes.
The same steps are played against ours and MLflow's own basic-auth app and must answer the same."""

from __future__ import annotations

import time
import uuid
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient
from mlflow.server import get_app_client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, WITH_MLFLOW
from tests.auth.test_client import PASSWORD, as_user
from tests.conftest import unique

pytestmark = [pytest.mark.e2e, WITH_MLFLOW]

M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
ADMIN_AUTH = (ADMIN, ADMIN_PASSWORD)


def _call(url: str, method: str, path: str, auth: tuple[str, str], body: dict[str, Any] | None = None) -> requests.Response:
    if method == "GET":
        return requests.get(url + path, params=body, auth=auth, timeout=60)
    return requests.request(method, url + path, json=body, auth=auth, timeout=60)


def _ok(answer: requests.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _export_span(url: str, experiment_id: str, trace_bytes: bytes, *, root: bool) -> None:
    """One span of the trace over OTLP, as the admin: a child span (a parent id, so no info is made from it) or
    the root span."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.name = trace_bytes, "root" if root else "child"
    span.span_id = (b"\x01" if root else b"\x02") * 8
    if not root:
        span.parent_span_id = b"\x01" * 8
    span.start_time_unix_nano, span.end_time_unix_nano = time.time_ns() - 1_000_000, time.time_ns()
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    answer = requests.post(f"{url}/v1/traces", data=request.SerializeToString(), headers=headers, auth=ADMIN_AUTH, timeout=60)
    assert answer.status_code == 200, answer.text


def _grant(url: str, experiment_id: str, username: str, permission: str, *, update: bool = False) -> None:
    with as_user(*ADMIN_AUTH):
        auth = get_app_client("basic-auth", tracking_uri=url)
        if update:
            auth.revoke_user_permission(username, "experiment", experiment_id)
        auth.grant_user_permission(username, "experiment", experiment_id, permission)


def _play(url: str) -> dict[str, Any]:
    """The steps; each answer as (status, body). Trace ids are fresh per server, so bodies name them by role."""
    user = unique("spans-only")
    _ok(_call(url, "POST", f"{M2}/users/create", ADMIN_AUTH, {"username": user, "password": PASSWORD}))
    bob = (user, PASSWORD)
    experiment_id = _ok(_call(url, "POST", f"{M2}/experiments/create", ADMIN_AUTH, {"name": unique("her")}))["experiment_id"]
    her_run = _ok(_call(url, "POST", f"{M2}/runs/create", ADMIN_AUTH, {"experiment_id": experiment_id}))["run"]["info"]["run_id"]
    own = _ok(_call(url, "POST", f"{M2}/experiments/create", bob, {"name": unique("his")}))["experiment_id"]
    his_run = _ok(_call(url, "POST", f"{M2}/runs/create", bob, {"experiment_id": own}))["run"]["info"]["run_id"]
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    _export_span(url, experiment_id, trace_bytes, root=False)
    _grant(url, experiment_id, user, "DENY")
    unknown = "tr-" + uuid.uuid4().hex

    def answer(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        got = _call(url, method, path.replace("{t}", trace_id), bob, body)
        try:
            return got.status_code, got.json()
        except ValueError:
            return got.status_code, got.text

    def link(trace_ids: list[str], run_id: str) -> tuple[int, Any]:
        return answer("POST", f"{M2}/traces/link-to-run", {"trace_ids": trace_ids, "run_id": run_id})

    out: dict[str, Any] = {
        "denied: link her spans-only trace to his run": link([trace_id], his_run),
        "denied: link an unknown trace to his run": link([unknown], his_run),
        "denied: get_trace": answer("GET", f"{M3}/traces/{{t}}"),
        "denied: get_trace_info v2": answer("GET", f"{M2}/traces/{{t}}/info"),
        "denied: batch get": answer("GET", f"{M3}/traces/batchGet", {"trace_ids": [trace_id]}),
        "denied: set tag": answer("PATCH", f"{M3}/traces/{{t}}/tags", {"key": "k", "value": "v"}),
        "denied: delete tag": answer("DELETE", f"{M3}/traces/{{t}}/tags", {"key": "k"}),
        "denied: assess": answer(
            "POST",
            f"{M3}/traces/{{t}}/assessments",
            {"assessment": {"trace_id": trace_id, "assessment_name": "a", "source": {"source_type": "HUMAN", "source_id": "x"}}},
        ),
        "denied: link prompts": answer("POST", f"{M2}/traces/link-prompts", {"trace_id": trace_id, "prompt_versions": []}),
    }
    _grant(url, experiment_id, user, "READ", update=True)
    out["read: link her trace to her run"] = link([trace_id], her_run)
    for name, path in [("get_trace", f"{M3}/traces/{{t}}"), ("get_trace_info v2", f"{M2}/traces/{{t}}/info")]:
        status, body = answer("GET", path)
        out[f"read: {name}"] = (status, body if status != 200 else "(found)")
    out["read: set tag"] = answer("PATCH", f"{M3}/traces/{{t}}/tags", {"key": "k", "value": "v"})
    out["read: link her trace to his run"] = link([trace_id], his_run)
    _grant(url, experiment_id, user, "EDIT", update=True)
    out["edit: link her trace to her run"] = link([trace_id], her_run)
    out["edit: link an unknown trace to her run"] = link([unknown], her_run)
    _export_span(url, experiment_id, trace_bytes, root=True)  # the root span: the info widens to it
    with as_user(*bob):
        mlflow.set_tracking_uri(url)
        runs = {"her": her_run, "his": his_run}
        out["linked"] = {
            name: [
                t.info.trace_id == trace_id for t in mlflow.search_traces(locations=[experiment_id, own], run_id=run, return_type="list")
            ]
            for name, run in runs.items()
        }
        out["tags"] = MlflowClient(url).get_trace(trace_id).info.tags.get("k")
    return out


READS = ("read: get_trace", "read: get_trace_info v2")


@pytest.fixture(scope="module")
def played(basic_server: str, mlflow_server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return _play(basic_server), _play(mlflow_server)


def test_a_trace_known_only_by_its_spans_is_checked_as_mlflow_does(played: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, theirs = ({k: v for k, v in answers.items() if k not in READS} for answers in played)
    assert ours == theirs
    denied = (403, "Permission denied")  # MLflow's auth app answers a plain-text 403
    assert ours["denied: link her spans-only trace to his run"] == denied
    assert ours["denied: link an unknown trace to his run"] == denied  # get_trace_info raises: the validator denies
    assert ours["read: link her trace to her run"] == denied  # UPDATE on the run
    assert ours["read: link her trace to his run"] == (200, {})  # READ on the trace suffices
    assert ours["edit: link her trace to her run"] == (200, {})
    assert ours["edit: link an unknown trace to her run"] == denied
    assert ours["linked"] == {"her": [True], "his": [True]}  # the links apply to the info the child span made


def test_a_trace_known_only_by_its_spans_reads_as_in_mlflow(played: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, theirs = played
    assert [ours[k][0] for k in READS] == [theirs[k][0] for k in READS] == [200, 200]
