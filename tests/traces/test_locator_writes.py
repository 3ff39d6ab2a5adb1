"""Span batches write no count: the batch that places a trace writes its locator, the root's batch records the
root's state on it, and every other batch writes its span items only (issue 39: about 10 of a 10-span trace's
write units were one locator update per batch). The info's range is read from the spans stored, so batches out
of the usual order (each ends after the ones before; the root's also starts first) still leave the info exact,
and start_trace counts the spans stored."""

from __future__ import annotations

import json
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
def _writes(trace_id: str) -> Iterator[list[tuple[str, str]]]:
    """Every write (alone, batched or in a transaction) of the trace's locator, spans and info while the block
    runs, as (operation, ``locator`` | ``span`` | ``info``); the indexer's writes of other items are left out."""
    import boto3

    key = store.LOCATOR.key(trace_id=trace_id)
    seen: list[tuple[str, str]] = []

    def what(raw: dict[str, Any]) -> str:
        pk, sk = raw.get("pk", {}).get("S", ""), raw.get("sk", {}).get("S", "")
        if pk == key["pk"]:
            return "locator" if sk == key["sk"] else "span" if sk.startswith("S#") else "other"
        return "info" if sk.startswith("T#") and sk.endswith(trace_id) else "other"

    def single(params: dict[str, Any], model: Any, **_: Any) -> None:
        seen.append((model.name, what(params.get("Key") or params.get("Item") or {})))

    def batched(params: dict[str, Any], **_: Any) -> None:
        for requests_ in params.get("RequestItems", {}).values():
            for request in requests_:
                body = request.get("PutRequest", {}).get("Item") or request.get("DeleteRequest", {}).get("Key") or {}
                seen.append(("BatchWriteItem", what(body)))

    def transaction(params: dict[str, Any], **_: Any) -> None:
        for op in params.get("TransactItems", []):
            for kind, body in op.items():
                seen.append((f"Transact{kind}", what(body.get("Key") or body.get("Item") or {})))

    events = boto3._get_default_session().events
    hooks = [(f"before-parameter-build.dynamodb.{name}", single) for name in ("PutItem", "UpdateItem", "DeleteItem")]
    hooks += [
        ("before-parameter-build.dynamodb.BatchWriteItem", batched),
        ("before-parameter-build.dynamodb.TransactWriteItems", transaction),
    ]
    for event, hook in hooks:
        events.register(event, hook)
    table.reset_client()
    try:
        yield seen
        seen[:] = [w for w in seen if w[1] != "other"]
    finally:
        for event, hook in hooks:
            events.unregister(event, hook)
        table.reset_client()


def _trace() -> tuple[bytes, str]:
    trace_bytes = uuid.uuid4().bytes
    return trace_bytes, "tr-" + trace_bytes.hex()


def _info(side: Side, trace_id: str) -> dict[str, Any]:
    answer = requests.get(f"{side.url}/api/3.0/mlflow/traces/{trace_id}", timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["trace"]["trace_info"]


def test_a_batch_between_the_first_and_the_root_writes_its_spans_only(server: str) -> None:
    side = Side(server)
    trace_bytes, trace_id = _trace()
    base = int(time.time() * 1000) - 60_000
    children = [(bytes([0x10 + i]) * 8, ROOT, base + 10 + 10 * i, base + 15 + 10 * i, False) for i in range(9)]
    with _writes(trace_id) as first:
        side.export(trace_bytes, children[:1])
    with _writes(trace_id) as middle:
        for child in children[1:]:  # each ends after the ones before: the client's per-span export
            side.export(trace_bytes, [child])
    with _writes(trace_id) as root:
        side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    # The first batch places the trace (its locator, then its info); the root's records its state and moves the
    # info to its start (an earlier millisecond), in one transaction with the locator.
    assert first == [("PutItem", "span"), ("UpdateItem", "locator"), ("PutItem", "info")], first
    assert middle == [("PutItem", "span")] * 8, middle
    assert root == [
        ("PutItem", "span"),
        ("UpdateItem", "locator"),
        ("TransactPut", "info"),
        ("TransactDelete", "info"),
        ("TransactUpdate", "locator"),
    ], root
    locator = store.locate(trace_id)
    assert "span_count" not in locator and locator["root_state"] == "OK"
    assert store.span_count(side.experiment_id, trace_id) == 10
    info = _info(side, trace_id)
    assert (info["state"], info["execution_duration"]) == ("OK", "1s")
    assert info["request_time"] == store.timestamp_json(base)
    # The client's info, after the root's batch: the locator already says all it would write (the info's place,
    # every announced span stored), so start_trace writes the info only.
    with _writes(trace_id) as finished:
        answer = _start_trace(side, trace_id, base, spans=10)
    assert finished == [("PutItem", "info")], finished
    assert answer["tags"]["mlflow.trace.spansLocation"] == "TRACKING_STORE"
    assert _info(side, trace_id)["trace_metadata"]["mlflow.trace.infoFinalized"] == "true"


def _start_trace(side: Side, trace_id: str, request_time: int, spans: int) -> dict[str, Any]:
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": side.experiment_id}},
        "request_time": store.timestamp_json(request_time),
        "execution_duration": "1s",
        "state": "OK",
        "trace_metadata": {"mlflow.trace.sizeStats": json.dumps({"num_spans": spans})},
    }
    answer = requests.post(f"{side.url}/api/3.0/mlflow/traces", json={"trace": {"trace_info": info}}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["trace"]["trace_info"]


def test_batches_out_of_the_usual_order_keep_the_info_exact(server: str) -> None:
    side = Side(server)
    trace_bytes, trace_id = _trace()
    base = int(time.time() * 1000) - 60_000
    side.export(trace_bytes, [(ROOT, None, base, base + 2000, False)])
    # Ends before the root: the info stays as the root made it.
    side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 15, False)])
    info = _info(side, trace_id)
    assert info["request_time"] == store.timestamp_json(base)
    assert (info["state"], info["execution_duration"]) == ("OK", "2s")
    # Starts before the root (a skewed clock) and ends after it: both bounds widen, and the info with them.
    side.export(trace_bytes, [(GRANDCHILD, CHILD, base - 10, base + 2500, True)])
    assert store.span_count(side.experiment_id, trace_id) == 3
    info = _info(side, trace_id)
    assert info["request_time"] == store.timestamp_json(base - 10)
    assert (info["state"], info["execution_duration"]) == ("OK", "2.510s")
