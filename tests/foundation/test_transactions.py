"""A cancelled transaction is read by its cancellation reasons: only a failed condition is a conflict;
contention and throttling are retried, then answered 429 REQUEST_LIMIT_EXCEEDED - never a conflict that did not happen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from serverless_mlflow.http import api
from serverless_mlflow.storage import table
from serverless_mlflow.storage.table import connection


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    # botocore's Stubber stands in for DynamoDB (AWS), answering with the real error shapes.
    monkeypatch.setenv("TABLE_NAME", "stubbed")
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(connection, "_client", client)
    with Stubber(client) as stubber:
        yield stubber
    monkeypatch.setattr(connection, "_client", None)


def _cancelled(stubber: Stubber, *reasons: str) -> None:
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        service_message=f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(reasons)}]",
        modeled_fields={"CancellationReasons": [{"Code": code} for code in reasons]},
    )


OPS: list[dict[str, Any]] = [
    {"Put": {"TableName": "stubbed", "Item": {"pk": {"S": "a"}, "sk": {"S": "b"}}}},
    {"Put": {"TableName": "stubbed", "Item": {"pk": {"S": "a"}, "sk": {"S": "c"}}, "ConditionExpression": "attribute_not_exists(pk)"}},
]


def test_throttling_and_contention_are_retried(stubbed: Stubber) -> None:
    _cancelled(stubbed, "ThrottlingError", "None")
    _cancelled(stubbed, "None", "TransactionConflict")
    stubbed.add_response("transact_write_items", {})
    table.transact(OPS)
    stubbed.assert_no_pending_responses()


def test_a_failed_condition_is_the_only_conflict(stubbed: Stubber) -> None:
    _cancelled(stubbed, "None", "ConditionalCheckFailed")
    with pytest.raises(table.ConditionFailed) as raised:
        table.transact(OPS)
    assert raised.value.reasons == ["None", "ConditionalCheckFailed"]


def test_throttling_that_never_ends_is_unavailable_not_a_conflict(stubbed: Stubber, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "MAX_UNPROCESSED_RETRIES", 2)
    for _ in range(3):
        _cancelled(stubbed, "ThrottlingError", "None")
    with pytest.raises(table.Unavailable) as raised:
        table.transact(OPS)
    assert not isinstance(raised.value, table.ConditionFailed)
    assert api.is_capacity_failure(raised.value)


def test_other_cancellations_are_errors_not_conflicts(stubbed: Stubber) -> None:
    _cancelled(stubbed, "ValidationError", "None")
    with pytest.raises(Exception) as raised:
        table.transact(OPS)
    assert not isinstance(raised.value, (table.ConditionFailed, table.Unavailable))


def test_request_tokens_are_scoped_to_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # DynamoDB scopes ClientRequestToken to the account: two tables (two stacks) must not share one.
    monkeypatch.setenv("TABLE_NAME", "one")
    first = table.request_token("create-experiment-1")
    assert table.request_token("create-experiment-1") == first and len(first) <= 36
    monkeypatch.setenv("TABLE_NAME", "two")
    assert table.request_token("create-experiment-1") != first


def test_capacity_errors_are_capacity_failures() -> None:
    from botocore.exceptions import ClientError

    throttled = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}, "PutItem")
    assert api.is_capacity_failure(throttled)
    assert not api.is_capacity_failure(ClientError({"Error": {"Code": "ValidationException", "Message": "bad"}}, "PutItem"))
