"""Scheduled issue detection (MLflow 3.18, issue #42) fires on its cadence: a schedule saved as the 3.18 UI saves it
(the trace-filter tag, then the schedule tag, through the generic tag route, then ``issues/schedule/state``) is
dispatched by the monitor's pass (``runtime.monitor.tick()``, with the wall clock moved to the fire time so the test
decides when a pass happens) as MLflow's ``scheduled_issue_detection`` job with MLflow's params; the job worker runs
the detection against the mock provider (``tools/mock_llm.py``) and the issues appear. Nothing is submitted twice
for one occurrence; a paused schedule stops; a failing detection fails its run and its job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests

from serverless_mlflow.core import clock
from tests.conftest import unique
from tests.mlflow_reference import asgi_reference_server_of
from tests.review.test_issue_detection_invoke import DISCOVERY_SCRIPT, ISSUE_NAME
from tools.client_venvs import by_version, ensure
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

JOB_NAME = "scheduled_issue_detection"
SYNC = "/ajax-api/3.0/mlflow/issues/schedule/state"
HOUR_MS = 3600 * 1000


@pytest.fixture
def mock_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    llm = MockLLM().start()
    for marker, answer in DISCOVERY_SCRIPT:
        llm.script(marker, answer)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_BASE", f"{llm.url}/v1")
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    yield llm
    llm.stop()


def _traces(experiment_id: str, tags: dict[str, str]) -> list[str]:
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(question: str) -> str:
        mlflow.update_current_trace(tags=tags)
        return "42"

    ids = []
    for question in ("why?", "how?"):
        answer(question)
        ids.append(mlflow.get_last_active_trace_id())
    return ids


def _save_schedule(client: Any, server: str, experiment_id: str, schedule: dict[str, Any], filters: list[dict[str, str]]) -> int | None:
    """As the 3.18 dialog saves: the filters first, then the cadence, then asks when it next runs."""
    client.set_experiment_tag(experiment_id, "mlflow.issueDetection.scheduleTraceFilter", json.dumps(filters))
    client.set_experiment_tag(experiment_id, "mlflow.issueDetection.schedule", json.dumps({"version": 1, **schedule}))
    response = requests.post(f"{server}{SYNC}", json={"experiment_id": experiment_id}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["next_fire_time_ms"]


def _pass(local_runtime: Any, monkeypatch: pytest.MonkeyPatch, at_ms: int) -> None:
    """One monitor pass with the wall clock at ``at_ms`` (the runtime's own timer may pass too: the jobs are counted
    on the jobs API, not from this pass's answer)."""
    with monkeypatch.context() as patched:
        patched.setattr(clock, "now_millis", lambda: at_ms)
        local_runtime.monitor.tick()


def _jobs(server: str, experiment_id: str) -> list[dict[str, Any]]:
    found = requests.post(f"{server}/ajax-api/3.0/jobs/search", json={"job_name": JOB_NAME}, timeout=60).json()["jobs"]
    return [job for job in found if job["params"]["experiment_id"] == experiment_id]


def _finished(server: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while (job := requests.get(f"{server}/ajax-api/3.0/jobs/{job_id}", timeout=60).json())["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    return job


def test_a_schedule_fires_on_its_cadence_once_and_stops_when_paused(
    local_runtime: Any, server: str, client: Any, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment_id = client.create_experiment(unique("scheduled"))
    prod = _traces(experiment_id, {"env": "prod"})
    _traces(experiment_id, {"env": "dev"})  # in the window, outside the schedule's filter
    client.set_experiment_tag(
        experiment_id, "mlflow.issueDetection.priorities", json.dumps({"categories": {"correctness": True, "latency": False}})
    )
    schedule = {"cadence": "hourly", "timezone": "UTC", "paused": False, "fireTime": "09:15", "weekday": 0}
    model = {"provider": "openai", "model": "gpt-4o-mini"}
    filters = [{"field": "tag", "operator": "=", "key": "env", "value": "prod"}]
    saved_at = clock.now_millis()
    next_fire = _save_schedule(client, server, experiment_id, {**schedule, "model": model}, filters)
    assert next_fire is not None and saved_at < next_fire <= saved_at + HOUR_MS and next_fire % HOUR_MS == 15 * 60 * 1000

    # Before its fire time a pass submits nothing; at it, exactly one job with MLflow's params.
    _pass(local_runtime, monkeypatch, next_fire - 1)
    assert _jobs(server, experiment_id) == []
    _pass(local_runtime, monkeypatch, next_fire + 1000)
    _pass(local_runtime, monkeypatch, next_fire + 2000)  # claimed: never twice for one occurrence
    (job,) = _jobs(server, experiment_id)
    job_id = job["job_id"]
    assert job["params"] == {
        "experiment_id": experiment_id,
        "window_lower_bound_ms": next_fire - HOUR_MS,
        "window_upper_bound_ms": next_fire,
        "categories": ["correctness"],
        "instructions": "",
        "trace_filter": "tags.`env` = 'prod'",
        "model": "openai:/gpt-4o-mini",
    }
    state = json.loads(client.get_experiment(experiment_id).tags["mlflow.issueDetection.scheduleState"])
    assert (state["lastFireTimeMs"], state["nextFireTimeMs"], state["timing"]) == (next_fire, next_fire + HOUR_MS, "hourly|09:15|0|UTC")

    final = _finished(server, job_id)
    assert final["status"] == "SUCCEEDED", final
    assert (final["result"]["issues"], final["result"]["total_traces_analyzed"], final["result"]["traces_in_window"]) == (1, 2, 2)
    run = client.get_run(final["result"]["run_id"])
    assert run.info.status == "FINISHED"
    assert {key: run.data.tags.get(key) for key in ("mlflow.runType", "mlflow.issueDetection.trigger", "model", "total_traces")} == {
        "mlflow.runType": "issue_detection",
        "mlflow.issueDetection.trigger": "schedule",
        "model": "openai:/gpt-4o-mini",
        "total_traces": "2",
    }
    assert run.data.tags["mlflow.issueDetection.jobId"] == job_id
    assert (run.data.tags["mlflow.issueDetection.windowStart"], run.data.tags["mlflow.issueDetection.windowEnd"]) == (
        str(next_fire - HOUR_MS),
        str(next_fire),
    )
    issues = requests.post(f"{server}/api/3.0/mlflow/issues/search", json={"experiment_id": experiment_id}, timeout=60).json()["issues"]
    assert [(issue["name"], issue["source_run_id"]) for issue in issues] == [(ISSUE_NAME, run.info.run_id)]
    linked = {a.name for trace_id in prod for a in client.get_trace(trace_id).info.assessments}
    assert issues[0]["issue_id"] in linked
    checkpoint = json.loads(client.get_experiment(experiment_id).tags["mlflow.issueDetection.checkpoint"])
    assert checkpoint["version"] == 1 and checkpoint["lastRunUuid"] == run.info.run_id

    # The next occurrence covers only what arrived since the watermark: nothing, so a quiet run over zero traces.
    _pass(local_runtime, monkeypatch, next_fire + HOUR_MS + 1000)
    (quiet_id,) = {job["job_id"] for job in _jobs(server, experiment_id)} - {job_id}
    quiet = _finished(server, quiet_id)
    assert quiet["status"] == "SUCCEEDED" and quiet["result"]["traces_in_window"] == 0, quiet
    assert client.get_run(quiet["result"]["run_id"]).data.tags["total_traces"] == "0"

    # "Off" in the UI: the schedule is kept, paused, and no pass runs it.
    _save_schedule(client, server, experiment_id, {**schedule, "paused": True, "model": model}, filters)
    _pass(local_runtime, monkeypatch, next_fire + 3 * HOUR_MS + 1000)
    _pass(local_runtime, monkeypatch, next_fire + 30 * HOUR_MS)
    assert len(_jobs(server, experiment_id)) == 2


def test_a_failing_detection_fails_its_run_and_job(
    local_runtime: Any, server: str, client: Any, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schedule arrives with the experiment (a client's ``create_experiment(tags=...)``, no dialog): the monitor's
    first pass anchors it (its first run is at its next fire time, not now), as MLflow's dispatcher does."""
    schedule = {
        "version": 1,
        "cadence": "daily",
        "timezone": "Europe/Paris",
        "fireTime": "06:30",
        "model": {"endpointName": "no-such-endpoint"},
    }
    experiment_id = client.create_experiment(unique("scheduled-fails"), tags={"mlflow.issueDetection.schedule": json.dumps(schedule)})
    _traces(experiment_id, {"env": "prod"})
    created_at = client.get_experiment(experiment_id).creation_time
    seen_at = clock.now_millis()
    _pass(local_runtime, monkeypatch, seen_at)
    assert _jobs(server, experiment_id) == []
    state = json.loads(client.get_experiment(experiment_id).tags["mlflow.issueDetection.scheduleState"])
    next_fire = state["nextFireTimeMs"]
    assert created_at <= state["lastFireTimeMs"] <= seen_at < next_fire <= state["lastFireTimeMs"] + 24 * HOUR_MS
    _pass(local_runtime, monkeypatch, next_fire + 1000)
    (job,) = _jobs(server, experiment_id)
    job_id = job["job_id"]
    assert job["params"]["window_upper_bound_ms"] == next_fire
    assert job["params"]["model"] == "gateway:/no-such-endpoint"
    final = _finished(server, job_id)
    assert final["status"] == "FAILED" and "no-such-endpoint" in final["error_message"], final
    (run,) = client.search_runs([experiment_id], filter_string="tags.`mlflow.issueDetection.trigger` = 'schedule'")
    assert run.info.status == "FAILED"
    assert "no-such-endpoint" in run.data.tags["mlflow.issueDetection.error"]
    assert "mlflow.issueDetection.checkpoint" not in client.get_experiment(experiment_id).tags  # the window is covered again


def test_server_info_reports_the_feature_as_stock_mlflow_3_18(server: str) -> None:
    """``features_enabled`` as ``mlflow server`` 3.18.0 answers it with its defaults (job execution and periodic tasks
    on, which the test session turns off for the stock servers it compares with), from the 3.18.0 client venv
    (``tools.client_venvs``, built on first use)."""
    python = str(ensure(by_version("3.18.0")) / "bin" / "python")
    stock = asgi_reference_server_of(python, (("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "true"),)).url
    ours, theirs = (requests.get(f"{url}/api/3.0/mlflow/server-info", timeout=60).json()["features_enabled"] for url in (server, stock))
    assert ours == theirs == {"gateway": True, "scheduled_issue_detection": True}


def test_a_schedule_saved_by_an_earlier_release_runs_after_migrate(
    local_runtime: Any, server: str, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier release kept the schedule in the experiment's tags only, without the monitor's item: no pass sees
    it until the ``issue_schedules`` migration step (``make migrate``) indexes it; then the monitor's first pass
    anchors it and its fire time submits the job, as for a schedule saved today."""
    from serverless_mlflow.storage import layout, table
    from serverless_mlflow.store import experiment_items
    from tools import issue_schedules

    schedule = {"version": 1, "cadence": "hourly", "timezone": "UTC", "fireTime": "00:45", "model": {"endpointName": "no-such-endpoint"}}
    experiment_id = client.create_experiment(unique("scheduled-earlier"), tags={"mlflow.issueDetection.schedule": json.dumps(schedule)})
    table.delete(experiment_items.ISSUE_SCHEDULE.key(experiment_id=experiment_id))  # as the earlier release left it
    table.update(layout.LAYOUT_KEY, "DELETE steps :s", values={":s": {layout.ISSUE_SCHEDULES}})
    layout.forget()
    try:
        _pass(local_runtime, monkeypatch, clock.now_millis())
        assert "mlflow.issueDetection.scheduleState" not in client.get_experiment(experiment_id).tags  # never seen

        other = client.create_experiment(unique("scheduled-today"), tags={"mlflow.issueDetection.schedule": json.dumps(schedule)})
        kept = table.get(experiment_items.ISSUE_SCHEDULE.key(experiment_id=other))
        assert issue_schedules.run([experiment_id, other]) == 1  # the item saved today is left as it is
        assert table.get(experiment_items.ISSUE_SCHEDULE.key(experiment_id=other)) == kept
        layout.forget()
        assert layout.ISSUE_SCHEDULES in layout.steps_done()
        assert issue_schedules.run([experiment_id]) == 0  # idempotent
    finally:
        layout.record_steps([layout.ISSUE_SCHEDULES])

    seen_at = clock.now_millis()
    _pass(local_runtime, monkeypatch, seen_at)
    assert _jobs(server, experiment_id) == []
    next_fire = json.loads(client.get_experiment(experiment_id).tags["mlflow.issueDetection.scheduleState"])["nextFireTimeMs"]
    assert seen_at < next_fire <= seen_at + HOUR_MS
    _pass(local_runtime, monkeypatch, next_fire + 1000)
    (job,) = _jobs(server, experiment_id)
    assert job["params"]["window_upper_bound_ms"] == next_fire
    final = _finished(server, job["job_id"])
    assert final["status"] == "SUCCEEDED" and final["result"]["traces_in_window"] == 0, final  # no traces: no model call
