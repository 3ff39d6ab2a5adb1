"""Online scoring runs by itself (issue #42): judges started with ``Scorer.start(sampling_config=...)`` judge new
traces on the monitor's pass (EventBridge Scheduler's tick; locally ``runtime.monitor``, invoked here with ``tick``
so the test decides when a pass happens), through a gateway endpoint on the mock provider (``tools/mock_llm.py``).

Checked as MLflow's online scoring behaves: every new trace matching the filter gets the judge's assessment; the
sample rate picks exactly the traces MLflow's dense sampling picks (a hash of trace id and scorer name); a trace is
never judged twice (the experiment's checkpoint); ``stop()`` and deleting the scorer stop it; a judge that fails
logs an error assessment and leaves the trace's spans as they were, and the job says it failed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.gateway_runtime.test_runtime_e2e import LOOSE_API_BASE
from tests.jobs.test_gateway_judge import _judge_endpoint
from tests.jobs.test_invoke import stored
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

JOB_NAME = "run_online_trace_scorer"
FINAL = ("SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED")


@pytest.fixture
def mock(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    for name, value in LOOSE_API_BASE.items():
        monkeypatch.setenv(name, value)
    # MLflow leaves traces younger than 5 minutes for a later pass (they may still be running): none here.
    monkeypatch.setenv("MLFLOW_ONLINE_SCORING_DEFAULT_TRACE_COMPLETION_BUFFER_SECONDS", "0")
    # A failing judge call is not retried (MLflow retries with backoff, minutes against a provider that always fails).
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_RETRIES", "0")
    llm = MockLLM().start()
    yield llm
    llm.stop()


def _traces(experiment_id: str, count: int, tags: dict[str, str] | None = None, marker: str = "JUDGE") -> list[str]:
    """Traces whose output the judge's prompt carries: the marker steers the mock provider's answer."""
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(question: str) -> str:
        if tags:
            mlflow.update_current_trace(tags=tags)
        return f"{marker}: answer to {question}"

    ids = []
    for number in range(count):
        answer(f"q{number}")
        ids.append(mlflow.get_last_active_trace_id())
    stored(ids)
    return ids


def _jobs(server: str, experiment_id: str) -> list[dict[str, Any]]:
    found = requests.post(f"{server}/ajax-api/3.0/jobs/search", json={"job_name": JOB_NAME}, timeout=60).json()["jobs"]
    return [job for job in found if job["params"]["experiment_id"] == experiment_id]


def _pass(local_runtime: Any, server: str, experiment_id: str) -> list[dict[str, Any]]:
    """One monitor pass, then every online scoring job of the experiment once finished."""
    time.sleep(0.01)  # the pass's window ends after the traces just logged (millisecond timestamps)
    local_runtime.monitor.tick()
    deadline = time.monotonic() + 120
    while True:
        jobs = _jobs(server, experiment_id)
        if all(job["status"] in FINAL for job in jobs):
            return jobs
        assert time.monotonic() < deadline, jobs
        time.sleep(0.3)


def _judged(client: Any, trace_ids: list[str], name: str) -> dict[str, list[Any]]:
    return {trace_id: [a for a in client.get_trace(trace_id).info.assessments if a.name == name] for trace_id in trace_ids}


def _sampled(trace_id: str, name: str, rate: float) -> bool:
    """MLflow's ``OnlineScorerSampler.sample`` for one scorer."""
    return int(hashlib.sha256(f"{trace_id}:{name}".encode()).hexdigest(), 16) / (2**256) <= rate


def _judge(name: str, endpoint: str, instructions: str = "JUDGE whether {{ outputs }} answers well.") -> Any:
    from mlflow.genai.judges import make_judge

    return make_judge(name=name, instructions=instructions, model=f"gateway:/{endpoint}")


def test_started_judges_score_new_traces_once_at_their_rate_and_filter(local_runtime: Any, server: str, client: Any, mock: MockLLM) -> None:
    from mlflow.genai.scorers import ScorerSamplingConfig

    endpoint = _judge_endpoint(server, mock.url)["name"]
    experiment_id = client.create_experiment(unique("online"))
    everything = _judge("helpful", endpoint).register(experiment_id=experiment_id)
    everything.start(experiment_id=experiment_id, sampling_config=ScorerSamplingConfig(sample_rate=1.0))
    prod_half = _judge("prod_half", endpoint).register(experiment_id=experiment_id)
    prod_half.start(experiment_id=experiment_id, sampling_config=ScorerSamplingConfig(sample_rate=0.5, filter_string="tags.env = 'prod'"))

    prod, other = _traces(experiment_id, 8, tags={"env": "prod"}), _traces(experiment_id, 2)
    jobs = _pass(local_runtime, server, experiment_id)
    assert jobs and all(job["status"] == "SUCCEEDED" for job in jobs), jobs
    assert sum(job["result"]["traces_scored"] for job in jobs) == len(prod + other)

    helpful = _judged(client, prod + other, "helpful")
    assert all(len(found) == 1 and found[0].value == "yes" and found[0].source.source_type == "LLM_JUDGE" for found in helpful.values()), (
        helpful
    )
    sampled = {trace_id for trace_id, found in _judged(client, prod + other, "prod_half").items() if found}
    assert sampled == {trace_id for trace_id in prod if _sampled(trace_id, "prod_half", 0.5)}
    assert 0 < len(sampled) < len(prod)  # the rate held, not all or nothing (these ids: a fresh draw each run)

    # A second pass judges nothing again; a trace logged since is judged once.
    calls = len(mock.requests)
    assert all(job["status"] == "SUCCEEDED" for job in _pass(local_runtime, server, experiment_id))
    assert len(mock.requests) == calls
    (later,) = _traces(experiment_id, 1)
    _pass(local_runtime, server, experiment_id)
    assert all(len(found) == 1 for found in _judged(client, [*prod, *other, later], "helpful").values())

    # stop() (sample rate 0) and delete: no job any more, new traces stay unjudged.
    everything.stop(experiment_id=experiment_id)
    from mlflow.genai.scorers import delete_scorer

    delete_scorer(name="prod_half", experiment_id=experiment_id, version="all")
    before = len(_jobs(server, experiment_id))
    (unjudged,) = _traces(experiment_id, 1, tags={"env": "prod"})
    assert len(_pass(local_runtime, server, experiment_id)) == before
    assert client.get_trace(unjudged).info.assessments == []


def test_a_failing_judge_leaves_the_trace_and_fails_the_job(local_runtime: Any, server: str, client: Any, mock: MockLLM) -> None:
    from mlflow.genai.scorers import ScorerSamplingConfig

    endpoint = _judge_endpoint(server, mock.url)["name"]
    experiment_id = client.create_experiment(unique("online-fail"))
    broken = _judge("broken", endpoint).register(experiment_id=experiment_id)
    broken.start(experiment_id=experiment_id, sampling_config=ScorerSamplingConfig(sample_rate=1.0))
    (trace_id,) = _traces(experiment_id, 1, marker="JUDGE FAIL400")  # the provider refuses the judge's call (400, not retried)
    spans_before = [span.to_dict() for span in client.get_trace(trace_id).data.spans]

    (job,) = _pass(local_runtime, server, experiment_id)
    assert job["status"] == "FAILED", job
    assert job["error_message"].startswith("RuntimeError: 1 of 1 judgments failed") and f"broken on {trace_id}" in job["error_message"]
    trace = client.get_trace(trace_id)
    assert [span.to_dict() for span in trace.data.spans] == spans_before and trace.info.state.value == "OK"
    (error,) = [a for a in trace.info.assessments if a.name == "broken"]
    assert error.error is not None and error.value is None
