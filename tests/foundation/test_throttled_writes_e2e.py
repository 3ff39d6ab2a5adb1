"""Throttled writes, end to end (issues 11 and 22). DynamoDB refuses a write for throughput: a transaction is
cancelled with ThrottlingError reasons (the real botocore TransactionCanceledException), a single write or a
batch fails with ProvisionedThroughputExceededException, once botocore's own retries are spent (raised by a
wrapper around the real DynamoDB Local client). A cancelled transaction is retried and usually succeeds; when
DynamoDB keeps refusing, the request answers 429 REQUEST_LIMIT_EXCEEDED with nothing written (never 503, never
RESOURCE_ALREADY_EXISTS for a name nobody took), and MLflow's client sends it again.

MLflow 3.18's client sends a write that is not safe to repeat (create_run, create_model_version, the upsert of
dataset records, create_assessment) again only on 408 and 429 (``mlflow.utils.rest_utils``:
``_UNPROCESSED_REQUEST_RESPONSE_CODES``); on a 503 it gives up at once. The installed 3.17.2 client retries
more codes, so the client tests below apply 3.18's rule to it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from serverless_mlflow.storage import table
from serverless_mlflow.storage.table import connection
from tests.conftest import unique

pytestmark = pytest.mark.e2e

API = "/api/2.0/mlflow"
# MLflow 3.18: a POST whose answer is not on its retry-safe list is sent again only on these statuses.
UNPROCESSED_REQUEST_CODES = frozenset([408, 429])
_SINGLE_WRITES = ("put_item", "update_item", "delete_item", "batch_write_item")


class ThrottledWrites:
    """The real DynamoDB client, except that the next ``throttle`` writes are refused for throughput (a
    transaction cancelled with ThrottlingError; any other write with ProvisionedThroughputExceededException)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.throttle = 0
        self.refused: list[str] = []
        self.operations: frozenset[str] | None = None  # None: every write

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._real, name)
        if name not in _SINGLE_WRITES:
            return attribute

        def write(**kwargs: Any) -> Any:
            if self._refuse(name):
                error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "The level of configured provisioned throughput for the table was exceeded."}}  # fmt: skip
                raise self._real.exceptions.ProvisionedThroughputExceededException(error, name)
            return attribute(**kwargs)

        return write

    def _refuse(self, operation: str) -> bool:
        if not self.throttle or (self.operations is not None and operation not in self.operations):
            return False
        self.throttle -= 1
        self.refused.append(operation)
        return True

    def transact_write_items(self, **kwargs: Any) -> Any:
        if self._refuse("transact_write_items"):
            reasons = [
                {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity for one or more global secondary indexes."}
            ]
            reasons += [{"Code": "None"}] * (len(kwargs["TransactItems"]) - 1)
            error = {
                "Error": {
                    "Code": "TransactionCanceledException",
                    "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]",
                },
                "CancellationReasons": reasons,
            }
            raise self._real.exceptions.TransactionCanceledException(error, "TransactWriteItems")
        return self._real.transact_write_items(**kwargs)


@pytest.fixture
def throttled(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThrottledWrites]:
    wrapper = ThrottledWrites(table.client())
    monkeypatch.setattr(connection, "_client", wrapper)
    monkeypatch.setattr(connection, "MAX_UNPROCESSED_RETRIES", 1)
    yield wrapper


def test_a_throttled_transaction_is_retried_and_succeeds(server: str, throttled: ThrottledWrites) -> None:
    name = unique("throttled")
    throttled.operations = frozenset({"transact_write_items"})
    throttled.throttle = 1
    created = requests.post(f"{server}{API}/experiments/create", json={"name": name}, timeout=60)
    assert created.status_code == 200, created.text
    assert throttled.refused == ["transact_write_items"]
    got = requests.get(f"{server}{API}/experiments/get-by-name", params={"experiment_name": name}, timeout=30)
    assert got.json()["experiment"]["experiment_id"] == created.json()["experiment_id"]

    model = unique("throttled-model")
    throttled.throttle = 1
    answer = requests.post(f"{server}{API}/registered-models/create", json={"name": model}, timeout=60)
    assert answer.status_code == 200, answer.text


def test_throttling_that_never_ends_is_429_and_writes_nothing(server: str, throttled: ThrottledWrites) -> None:
    name = unique("throttled")
    for path, body, lookup in (
        ("experiments/create", {"name": name}, ("experiments/get-by-name", {"experiment_name": name})),
        ("registered-models/create", {"name": name}, ("registered-models/get", {"name": name})),
    ):
        throttled.throttle = 10**6
        answer = requests.post(f"{server}{API}/{path}", json=body, timeout=60)
        assert (answer.status_code, answer.json()["error_code"]) == (429, "REQUEST_LIMIT_EXCEEDED"), answer.text
        throttled.throttle = 0
        missing = requests.get(f"{server}{API}/{lookup[0]}", params=lookup[1], timeout=30)
        assert missing.status_code == 404, missing.text
        again = requests.post(f"{server}{API}/{path}", json=body, timeout=60)
        assert again.status_code == 200, "the name was never taken: " + again.text


def test_a_throttled_single_write_is_429(server: str, throttled: ThrottledWrites) -> None:
    """A write that is not a transaction (here a run's tag, a PutItem) refused for throughput: 429, not a 500."""
    experiment_id = requests.post(f"{server}{API}/experiments/create", json={"name": unique("throttled")}, timeout=30).json()[
        "experiment_id"
    ]
    run_id = requests.post(f"{server}{API}/runs/create", json={"experiment_id": experiment_id}, timeout=30).json()["run"]["info"]["run_id"]
    throttled.throttle = 10**6
    answer = requests.post(f"{server}{API}/runs/set-tag", json={"run_id": run_id, "key": "k", "value": "v"}, timeout=60)
    throttled.throttle = 0
    assert (answer.status_code, answer.json()["error_code"]) == (429, "REQUEST_LIMIT_EXCEEDED"), answer.text
    assert set(throttled.refused) & set(_SINGLE_WRITES), throttled.refused
    tags = requests.get(f"{server}{API}/runs/get", params={"run_id": run_id}, timeout=30).json()["run"]["data"].get("tags", [])
    assert "k" not in {tag["key"] for tag in tags}


# --- MLflow's client sends a refused write again ---------------------------------------------------------


@pytest.fixture
def retrying_client(server: str, local_runtime: Any, throttled: ThrottledWrites, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The real client, retrying as MLflow 3.18's does (a non-idempotent POST only on 408 and 429), quickly;
    ``client.answers`` lists the (method, path, status) of every request the server answered."""
    import mlflow
    from mlflow.utils import rest_utils

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "4")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0")
    original = rest_utils.http_request

    def http_request(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("method") == "POST":
            kwargs["retry_codes"] = UNPROCESSED_REQUEST_CODES
        return original(*args, **kwargs)

    monkeypatch.setattr(rest_utils, "http_request", http_request)
    answers: list[tuple[str, str, int]] = []
    runtime_class = type(local_runtime)
    invoke = runtime_class.invoke

    def recording_invoke(self: Any, method: str, path: str, *rest: Any) -> dict[str, Any]:
        response = invoke(self, method, path, *rest)
        if self is local_runtime:
            answers.append((method, path, int(response["statusCode"])))
        return response

    # On the class, as tests/artifacts' meter does: patching the instance would leave its bound method in the
    # instance's __dict__ after the undo, and a later class-level wrapper would then never be called.
    monkeypatch.setattr(runtime_class, "invoke", recording_invoke)
    mlflow.set_tracking_uri(server)
    client = mlflow.MlflowClient(server, registry_uri=server)
    client.answers = answers  # type: ignore[attr-defined]
    yield client


def _throttled_then(client: Any, throttled: ThrottledWrites, path: str, call: Callable[[], Any]) -> Any:
    """``call()`` while DynamoDB refuses the next writes: the server answers ``path`` 429 at least once (the
    first attempt wrote nothing), and the client's retry succeeds."""
    client.answers.clear()
    throttled.throttle = 2  # a transaction is retried once (MAX_UNPROCESSED_RETRIES): both attempts refused
    result = call()
    statuses = [status for method, answered, status in client.answers if method == "POST" and answered.endswith(path)]
    assert 429 in statuses and statuses[-1] == 200, (path, client.answers, throttled.refused)
    assert throttled.throttle == 0
    return result


def test_mlflow_s_client_retries_throttled_creates(server: str, retrying_client: Any, throttled: ThrottledWrites) -> None:
    import mlflow

    client = retrying_client
    experiment_id = client.create_experiment(unique("throttled-client"))

    run = _throttled_then(client, throttled, "/runs/create", lambda: client.create_run(experiment_id))
    assert [r.info.run_id for r in client.search_runs([experiment_id])] == [run.info.run_id], "one run, not one per attempt"

    name = unique("throttled-model")
    client.create_registered_model(name)
    version = _throttled_then(
        client,
        throttled,
        "/model-versions/create",
        lambda: client.create_model_version(name, f"runs:/{run.info.run_id}/model", run.info.run_id),
    )
    assert version.version == "1"
    assert [v.version for v in client.search_model_versions(f"name = '{name}'")] == ["1"], "no version left by a refused attempt"

    from mlflow.genai.datasets import create_dataset

    dataset = create_dataset(name=unique("throttled-ds"), experiment_id=[experiment_id])
    records = [{"inputs": {"question": f"q{i}"}, "expectations": {"answer": f"a{i}"}} for i in range(3)]
    _throttled_then(client, throttled, f"/datasets/{dataset.dataset_id}/records", lambda: dataset.merge_records(records))
    stored = requests.get(f"{server}/api/3.0/mlflow/datasets/{dataset.dataset_id}/records", timeout=30).json()
    assert sorted(r["inputs"]["question"] for r in json.loads(stored["records"])) == ["q0", "q1", "q2"]

    trace_id = f"tr-{uuid.uuid4().hex}"
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
    info = {"trace_id": trace_id, "trace_location": location, "request_time": "2024-01-01T00:00:00Z", "state": "OK"}
    requests.post(f"{server}/api/3.0/mlflow/traces", json={"trace": {"trace_info": info}}, timeout=30).raise_for_status()
    _throttled_then(client, throttled, "/assessments", lambda: mlflow.log_feedback(trace_id=trace_id, name="quality", value=True))
    info = requests.get(f"{server}/api/3.0/mlflow/traces/{trace_id}", timeout=30).json()["trace"]["trace_info"]
    assessments = [(a["assessment_name"], a["feedback"]["value"]) for a in info.get("assessments", [])]
    assert assessments == [("quality", True)], "one assessment, not one per attempt"
