"""What DynamoDB would refuse never reaches it (issue 22): a key past its 2,048 / 1,024-byte limits or holding a
lone surrogate, a number past 38 digits, a map nested past 32 levels. A read of a key that cannot exist finds
nothing (no call is made); a write is refused with INVALID_PARAMETER_VALUE before anything is written. An id
written raw into a key is cut and tagged with a digest past 400 bytes, so that it fits."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.storage.table import connection

LONG = "x" * 3000


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    # botocore's Stubber stands in for DynamoDB: a call the test did not expect fails it.
    monkeypatch.setenv("TABLE_NAME", "stubbed")
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(connection, "_client", client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
    monkeypatch.setattr(connection, "_client", None)


def _refused(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(MlflowError) as raised:
        call(*args, **kwargs)  # type: ignore[operator]
    assert raised.value.error_code == "INVALID_PARAMETER_VALUE" and raised.value.http_status == 400
    return raised.value.message


@pytest.mark.parametrize("value", [LONG, "a\ud800b", "é" * 1100])
def test_reads_of_keys_that_cannot_exist_find_nothing_without_a_call(stubbed: Stubber, value: str) -> None:
    assert table.get({"pk": value, "sk": "x"}) is None
    assert table.get({"pk": "x", "sk": value}) is None
    assert table.batch_get([{"pk": value, "sk": "x"}, {"pk": "x", "sk": value}]) == []
    assert table.query(value) == []
    assert table.query("x", value) == []  # a prefix no key can start with
    table.delete({"pk": value, "sk": "x"})  # deletes nothing
    with pytest.raises(table.ConditionFailed):
        table.delete({"pk": value, "sk": "x"}, condition="attribute_exists(pk)")
    with pytest.raises(table.ConditionFailed):
        table.update({"pk": value, "sk": "x"}, "SET a = :a", values={":a": 1}, condition="attribute_exists(pk)")


def test_writes_of_what_dynamodb_refuses_answer_400_before_any_call(stubbed: Stubber) -> None:
    assert "too long to store" in _refused(table.put, {"pk": "p", "sk": "y" * 1025})
    assert "too long to store" in _refused(table.put, {"pk": "p" * 2049, "sk": "s"})
    assert "too long to store" in _refused(table.put, {"pk": "p", "sk": "s", "gsi1sk": "z" * 1100})
    assert "lone surrogate" in _refused(table.put, {"pk": "p", "sk": "s", "description": "a\udfffb"})
    assert "lone surrogate" in _refused(table.put, {"pk": "p", "sk": "s", "tags": {"k\ud800": "v"}})
    assert "38" in _refused(table.put, {"pk": "p", "sk": "s", "n": 10**40})
    nested: dict[str, object] = {}
    for _ in range(40):
        nested = {"a": nested}
    assert "nested" in _refused(table.put, {"pk": "p", "sk": "s", "doc": nested})
    assert "too long to store" in _refused(table.put_op, {"pk": "p", "sk": LONG})
    assert "too long to store" in _refused(table.check_op, {"pk": LONG, "sk": "s"}, "attribute_exists(pk)")
    assert "lone surrogate" in _refused(table.update_op, {"pk": "p", "sk": "s"}, "SET a = :a", values={":a": "\ud800"})
    assert "too long to store" in _refused(table.batch_write, puts=[{"pk": "p", "sk": LONG}])


def test_a_range_end_no_key_can_hold_is_moved_and_the_rest_filtered(stubbed: Stubber) -> None:
    """A lower end past 1,024 bytes reads from its longest prefix a key can hold; the items below the real end
    are dropped (keys sort by UTF-8 bytes, which is code point order)."""
    low = "b" * 2000
    stubbed.add_response(
        "query",
        {"Items": [{"pk": {"S": "p"}, "sk": {"S": "b" * 1019}}, {"pk": {"S": "p"}, "sk": {"S": "bc"}}], "Count": 2, "ScannedCount": 2},
        {
            "TableName": "stubbed",
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {":pk": {"S": "p"}, ":lo": {"S": "b" * 1020}, ":hi": {"S": "c"}},
            "ScanIndexForward": True,
            "ConsistentRead": True,
        },
    )
    assert [item["sk"] for item in table.query("p", sk_between=(low, "c"))] == ["bc"]


def test_unprocessed_batches_that_never_clear_are_capacity_failures(stubbed: Stubber, monkeypatch: pytest.MonkeyPatch) -> None:
    from serverless_mlflow.http import api

    monkeypatch.setattr(connection, "MAX_UNPROCESSED_RETRIES", 1)
    monkeypatch.setattr(connection, "backoff", lambda attempt: None)
    pending = {"stubbed": [{"PutRequest": {"Item": {"pk": {"S": "p"}, "sk": {"S": "s"}}}}]}
    for _ in range(2):
        stubbed.add_response("batch_write_item", {"UnprocessedItems": pending})
    with pytest.raises(table.Unavailable) as raised:
        table.batch_write(puts=[{"pk": "p", "sk": "s"}])
    assert api.is_capacity_failure(raised.value)


def test_a_query_limit_past_int32_reads_page_by_page(stubbed: Stubber) -> None:
    stubbed.add_response(
        "query",
        {"Items": [], "Count": 0, "ScannedCount": 0},
        {
            "TableName": "stubbed",
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": {"S": "p"}},
            "ScanIndexForward": True,
            "ConsistentRead": True,
            "Limit": 2**31 - 1,
        },
    )
    assert table.query("p", limit=2**63) == []


def test_raw_ids_past_the_budget_are_cut_and_tagged_so_keys_fit() -> None:
    short = "m-" + "0" * 32
    assert keys.raw_id(short) == short
    long_key = ENTITY["run_output"].key(experiment_id="1", run_id="r" * 32, model_id=LONG)
    assert len(long_key["sk"].encode()) <= 1024
    other = ENTITY["run_output"].key(experiment_id="1", run_id="r" * 32, model_id=LONG + "y")
    assert long_key["sk"] != other["sk"], "two long ids keep distinct keys"
    assert len(keys.raw_id("é" * 1000).encode()) <= keys.RAW_ID_BUDGET
    # A string with a lone surrogate still encodes into a key; such a key is never read or written.
    assert keys.text("a\ud800") == "a\ud800\x01"
