"""A throttled create, end to end (issue 11): DynamoDB cancels the transaction for throttling (the real
botocore TransactionCanceledException with its cancellation reasons, raised by a wrapper around the real
DynamoDB Local client). The create is retried and succeeds; if throttling never ends the client gets 503
TEMPORARILY_UNAVAILABLE with nothing written - never RESOURCE_ALREADY_EXISTS for a name nobody took."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from serverless_mlflow import table
from tests.conftest import unique

pytestmark = pytest.mark.e2e

API = "/api/2.0/mlflow"


class ThrottledTransactions:
    """The real DynamoDB client, except that the next ``throttle`` transactions are cancelled for throttling."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.throttle = 0
        self.cancelled = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def transact_write_items(self, **kwargs: Any) -> Any:
        if self.throttle:
            self.throttle -= 1
            self.cancelled += 1
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
def throttled(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThrottledTransactions]:
    wrapper = ThrottledTransactions(table.client())
    monkeypatch.setattr(table, "_client", wrapper)
    monkeypatch.setattr(table, "MAX_UNPROCESSED_RETRIES", 3)
    yield wrapper


def test_a_throttled_create_is_retried_and_succeeds(server: str, throttled: ThrottledTransactions) -> None:
    name = unique("throttled")
    throttled.throttle = 2
    created = requests.post(f"{server}{API}/experiments/create", json={"name": name}, timeout=60)
    assert created.status_code == 200, created.text
    assert throttled.cancelled == 2
    got = requests.get(f"{server}{API}/experiments/get-by-name", params={"experiment_name": name}, timeout=30)
    assert got.json()["experiment"]["experiment_id"] == created.json()["experiment_id"]

    model = unique("throttled-model")
    throttled.throttle = 1
    answer = requests.post(f"{server}{API}/registered-models/create", json={"name": model}, timeout=60)
    assert answer.status_code == 200, answer.text


def test_throttling_that_never_ends_is_503_and_writes_nothing(server: str, throttled: ThrottledTransactions) -> None:
    name = unique("throttled")
    for path, body, lookup in (
        ("experiments/create", {"name": name}, ("experiments/get-by-name", {"experiment_name": name})),
        ("registered-models/create", {"name": name}, ("registered-models/get", {"name": name})),
    ):
        throttled.throttle = 10**6
        answer = requests.post(f"{server}{API}/{path}", json=body, timeout=60)
        assert (answer.status_code, answer.json()["error_code"]) == (503, "TEMPORARILY_UNAVAILABLE"), answer.text
        throttled.throttle = 0
        missing = requests.get(f"{server}{API}/{lookup[0]}", params=lookup[1], timeout=30)
        assert missing.status_code == 404, missing.text
        again = requests.post(f"{server}{API}/{path}", json=body, timeout=60)
        assert again.status_code == 200, "the name was never taken: " + again.text
