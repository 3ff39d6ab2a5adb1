"""Throttling within the function's time (issue 41). DynamoDB refuses every write for throughput, on the wire (a
throttling engine in front of DynamoDB Local: ``throttling_engine``), so botocore's retries, the transaction
retries and the answer all run as deployed. A deployed API function ends at 29 s, as API Gateway's integration
does; the local runtime gives each invocation the same 29 s (``local.events.LambdaContext``). The request must
answer 429 REQUEST_LIMIT_EXCEEDED before then (a client seeing a gateway timeout cannot tell it was not
written), after retrying, and with nothing written."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import runtime_process, unique
from tests.foundation.throttling_engine import WRITES, ThrottlingEngine

pytestmark = pytest.mark.e2e

API = "/api/2.0/mlflow"
BUDGET_SECONDS = 29.0  # infra/constructs/functions.py API_TIMEOUT, and the local runtime's context


@pytest.fixture(scope="module")
def throttled_runtime(server: str) -> Iterator[tuple[str, ThrottlingEngine]]:
    engine = ThrottlingEngine(os.environ["DYNAMODB_ENDPOINT_URL"]).start()
    try:
        env = {"DYNAMODB_ENDPOINT_URL": engine.url, "TABLE_NAME": unique("throttle"), "BUCKET_NAME": unique("throttle")}
        with runtime_process(env) as url:
            yield url, engine
    finally:
        engine.stop()


def _throttled(
    engine: ThrottlingEngine, url: str, path: str, body: dict[str, Any], operations: frozenset[str] = WRITES
) -> tuple[requests.Response, float]:
    engine.refused.clear()
    engine.operations = operations
    engine.throttling = True
    start = time.monotonic()
    try:
        answer = requests.post(f"{url}{API}/{path}", json=body, timeout=120)
    finally:
        elapsed = time.monotonic() - start
        engine.throttling = False
    return answer, elapsed


def _assert_429_in_time(answer: requests.Response, elapsed: float, engine: ThrottlingEngine, operation: str) -> None:
    assert (answer.status_code, answer.json()["error_code"]) == (429, "REQUEST_LIMIT_EXCEEDED"), answer.text
    assert elapsed < BUDGET_SECONDS, f"answered after {elapsed:.1f} s: past the function's {BUDGET_SECONDS:g} s"
    # It retried (not a first refusal passed straight on).
    assert engine.refused[operation] >= 3, engine.refused


def test_a_throttled_transaction_answers_429_in_time_and_writes_nothing(throttled_runtime: tuple[str, ThrottlingEngine]) -> None:
    url, engine = throttled_runtime
    name = unique("throttled")
    for refused, operations in (("UpdateItem", WRITES), ("TransactWriteItems", frozenset({"TransactWriteItems"}))):
        # Every write (the experiment id's counter is the first), then the creating transaction only.
        answer, elapsed = _throttled(engine, url, "experiments/create", {"name": name}, operations)
        _assert_429_in_time(answer, elapsed, engine, refused)
        missing = requests.get(f"{url}{API}/experiments/get-by-name", params={"experiment_name": name}, timeout=30)
        assert missing.status_code == 404, missing.text
    again = requests.post(f"{url}{API}/experiments/create", json={"name": name}, timeout=60)
    assert again.status_code == 200, "the name was never taken: " + again.text


def test_a_throttled_single_write_answers_429_in_time_and_writes_nothing(throttled_runtime: tuple[str, ThrottlingEngine]) -> None:
    """A run's tag is one UpdateItem/PutItem: botocore's own retries of it are the ones bounded here."""
    url, engine = throttled_runtime
    experiment_id = requests.post(f"{url}{API}/experiments/create", json={"name": unique("throttled")}, timeout=60).json()["experiment_id"]
    run_id = requests.post(f"{url}{API}/runs/create", json={"experiment_id": experiment_id}, timeout=60).json()["run"]["info"]["run_id"]
    answer, elapsed = _throttled(engine, url, "runs/set-tag", {"run_id": run_id, "key": "k", "value": "v"})
    refused = max(engine.refused, key=engine.refused.__getitem__)
    _assert_429_in_time(answer, elapsed, engine, refused)
    tags = requests.get(f"{url}{API}/runs/get", params={"run_id": run_id}, timeout=30).json()["run"]["data"].get("tags", [])
    assert "k" not in {tag["key"] for tag in tags}


def test_retries_stop_at_the_deadline(throttled_runtime: tuple[str, ThrottlingEngine], monkeypatch: pytest.MonkeyPatch) -> None:
    """With less time left than the retry count would take, the deadline ends the retries: a write refused for
    throughput gives up before a 3 s context is out, where without a context it makes every attempt."""
    from botocore.exceptions import ClientError

    from local.events import LambdaContext
    from serverless_mlflow.storage import table
    from serverless_mlflow.storage.table import connection, deadline

    _, engine = throttled_runtime
    monkeypatch.setenv("DYNAMODB_ENDPOINT_URL", engine.url)
    monkeypatch.setattr(connection, "_client", None)  # this process's own client, on the throttling engine

    def put(context: Any) -> float:
        engine.refused.clear()
        engine.throttling = True
        start = time.monotonic()
        try:
            with deadline.bound(context), pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
                table.put({"pk": unique("throttled"), "sk": "x"})
        finally:
            engine.throttling = False
        return time.monotonic() - start

    assert put(None) and engine.refused["PutItem"] == connection.MAX_ATTEMPTS
    elapsed = put(LambdaContext("experiments", timeout_seconds=3))
    assert elapsed < 3 - deadline.ANSWER_RESERVE_SECONDS + 0.5, elapsed
    assert 2 <= engine.refused["PutItem"] < connection.MAX_ATTEMPTS, engine.refused


def test_a_call_that_hangs_answers_503_in_time(server: str, tmp_path: Path) -> None:
    """DynamoDB does not answer (a stalled connection): each attempt gives up after the read timeout, retries only
    while a whole attempt still fits, and the function answers MLflow's 503 before API Gateway's 29 s."""
    engine = ThrottlingEngine(os.environ["DYNAMODB_ENDPOINT_URL"]).start()
    env = {
        "DYNAMODB_ENDPOINT_URL": engine.url,
        "TABLE_NAME": unique("stall"),
        "BUCKET_NAME": unique("stall"),
        "DYNAMODB_READ_TIMEOUT_SECONDS": "5",
    }
    try:
        with runtime_process(env, output=tmp_path / "runtime.log") as url:
            created = requests.post(f"{url}{API}/experiments/create", json={"name": unique("stalled")}, timeout=60)
            engine.operations = WRITES
            engine.stalling = True
            start = time.monotonic()
            try:
                answer = requests.post(
                    f"{url}{API}/experiments/set-experiment-tag",
                    json={"experiment_id": created.json()["experiment_id"], "key": "k", "value": "v"},
                    timeout=120,
                )
            finally:
                elapsed = time.monotonic() - start
                engine.stalling = False
            assert (answer.status_code, answer.json().get("error_code")) == (503, "TEMPORARILY_UNAVAILABLE"), (elapsed, answer.text)
            assert elapsed < BUDGET_SECONDS, f"answered after {elapsed:.1f} s: past the function's {BUDGET_SECONDS:g} s"
            assert sum(engine.stalled.values()) >= 2, engine.stalled  # it retried the hung call
    finally:
        engine.stalling = False
        engine.stop()
