"""The trace locator is written once per span batch: the counting update widens the span range itself when the
batch widens it as exported batches usually do (each ends after the ones before; the root's also starts first),
and batches out of that order still leave the range, the count and the info exact."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests

from serverless_mlflow.storage import table
from serverless_mlflow.store import traces as store
from tests.traces.test_spans_only_reference import CHILD, GRANDCHILD, ROOT, Side

pytestmark = pytest.mark.e2e


@contextmanager
def _locator_updates(trace_id: str) -> Iterator[list[str]]:
    """Every UpdateItem (alone or in a transaction) on the trace's locator while the block runs."""
    import boto3

    key = store.LOCATOR.key(trace_id=trace_id)
    seen: list[str] = []

    def names_locator(raw: dict[str, Any]) -> bool:
        return raw.get("pk", {}).get("S") == key["pk"] and raw.get("sk", {}).get("S") == key["sk"]

    def single(params: dict[str, Any], **_: Any) -> None:
        if names_locator(params.get("Key") or {}):
            seen.append("UpdateItem")

    def transaction(params: dict[str, Any], **_: Any) -> None:
        seen.extend("Transact" for op in params.get("TransactItems", []) if names_locator((op.get("Update") or {}).get("Key") or {}))

    events = boto3._get_default_session().events
    events.register("before-parameter-build.dynamodb.UpdateItem", single)
    events.register("before-parameter-build.dynamodb.TransactWriteItems", transaction)
    table.reset_client()
    try:
        yield seen
    finally:
        events.unregister("before-parameter-build.dynamodb.UpdateItem", single)
        events.unregister("before-parameter-build.dynamodb.TransactWriteItems", transaction)
        table.reset_client()


def _trace() -> tuple[bytes, str]:
    trace_bytes = uuid.uuid4().bytes
    return trace_bytes, "tr-" + trace_bytes.hex()


def _info(side: Side, trace_id: str) -> dict[str, Any]:
    answer = requests.get(f"{side.url}/api/3.0/mlflow/traces/{trace_id}", timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["trace"]["trace_info"]


def test_one_locator_write_per_batch_when_spans_are_exported_as_they_end(server: str) -> None:
    side = Side(server)
    trace_bytes, trace_id = _trace()
    base = int(time.time() * 1000) - 60_000
    children = [(bytes([0x10 + i]) * 8, ROOT, base + 10 + 10 * i, base + 15 + 10 * i, False) for i in range(9)]
    with _locator_updates(trace_id) as updates:
        for child in children:  # each ends after the ones before: the client's per-span export
            side.export(trace_bytes, [child])
        side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    # One counting update per batch (it widened the range too), and the root's move of the info.
    assert updates == ["UpdateItem"] * 10 + ["Transact"], updates
    locator = store.locate(trace_id)
    assert (locator["span_count"], locator["span_start"], locator["span_end"], locator["root_state"]) == (10, base, base + 1000, "OK")
    info = _info(side, trace_id)
    assert (info["state"], info["execution_duration"]) == ("OK", "1s")
    assert info["request_time"] == store.timestamp_json(base)


def test_batches_out_of_the_usual_order_keep_the_range_exact(server: str) -> None:
    side = Side(server)
    trace_bytes, trace_id = _trace()
    base = int(time.time() * 1000) - 60_000
    side.export(trace_bytes, [(ROOT, None, base, base + 2000, False)])
    # Ends before the stored end: the widening update's condition fails, the plain one counts the span.
    side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 15, False)])
    locator = store.locate(trace_id)
    assert (locator["span_count"], locator["span_start"], locator["span_end"]) == (2, base, base + 2000)
    # Starts before the root (a skewed clock) and ends after it: both bounds widen, and the info with them.
    side.export(trace_bytes, [(GRANDCHILD, CHILD, base - 10, base + 2500, True)])
    locator = store.locate(trace_id)
    assert (locator["span_count"], locator["span_start"], locator["span_end"], locator["root_state"]) == (3, base - 10, base + 2500, "OK")
    info = _info(side, trace_id)
    assert info["request_time"] == store.timestamp_json(base - 10)
    assert (info["state"], info["execution_duration"]) == ("OK", "2.510s")
