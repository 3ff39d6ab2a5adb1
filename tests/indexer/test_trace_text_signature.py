"""The span-content signature's stored form: compressed when shorter, so a small trace's item costs one write
unit (under 1 KB), and a raw filter written by an earlier release still reads the same."""

from __future__ import annotations

import os

import pytest

from serverless_mlflow.index import trace_text
from serverless_mlflow.storage.item_size import item_bytes
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.storage.table import to_item

TEXTS = [f'{{"i": {i}, "j": {j}, "ok": true, "question": "q{i}"}}' for i in range(3) for j in range(10)]


def test_small_trace_signature_item_is_under_one_kilobyte() -> None:
    bits = trace_text.signature(TEXTS)
    item = ENTITY["trace_text_signature"].item(
        {"trace_id": "tr-" + "a" * 32, "bits": trace_text.stored(bits), "spans": 10},
        experiment_id="123456789012345678",
        bucket=499074,
        shard=31,
        request_time=1796668515097,
        trace_id="tr-" + "a" * 32,
    )
    assert item_bytes(to_item(item)) < 1024
    assert trace_text.loaded(trace_text.stored(bits)) == bits


def test_raw_and_compressed_filters_answer_alike() -> None:
    bits = trace_text.signature(TEXTS)
    assert len(bits) == trace_text.BITS // 8
    assert trace_text.loaded(bits) == bits  # an earlier release's raw filter
    for pattern in ("%question%", "%q1%", "%nothing here%", '%ok": true%'):
        tokens = trace_text.pattern_tokens(pattern) or []
        assert trace_text.may_contain(trace_text.loaded(trace_text.stored(bits)), tokens) == trace_text.may_contain(bits, tokens)
    assert not trace_text.may_contain(trace_text.loaded(trace_text.stored(bits)), trace_text.pattern_tokens("%zebra%") or [])


def test_an_incompressible_filter_stays_raw() -> None:
    noise = os.urandom(trace_text.BITS // 8)
    assert trace_text.stored(noise) == noise
    assert trace_text.loaded(noise) == noise


# --- written once per trace, when it ends -------------------------------------------------------------


def _signature_of(trace_id: str) -> dict[str, object] | None:
    """The signature item beside the trace's info (where a search reads it), or None."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import trace_partitions
    from serverless_mlflow.store import traces as store

    info = store.info_item_or_none(trace_id)
    assert info is not None
    fields = trace_partitions.fields_of(info)
    return table.get(ENTITY["trace_text_signature"].key(**fields, request_time=int(info["request_time"]), trace_id=trace_id))


def _found_by_content(side: object, pattern: str) -> list[str]:
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": side.experiment_id}}  # type: ignore[attr-defined]
    status, body = side.call("POST", "traces/search", {"locations": [location], "filter": f"trace.text ILIKE '{pattern}'"})  # type: ignore[attr-defined]
    assert status == 200, body
    return [info["trace_id"] for info in body.get("traces", [])]


@pytest.mark.e2e
def test_a_trace_in_progress_has_no_signature_and_is_found_by_its_spans_until_it_ends(paused_runtime: object) -> None:
    """The indexer aggregates a trace in progress (MLflow counts it) but writes its content signature only once
    it ends: a search checks the spans of a trace without one, so it finds content of spans logged after the
    indexer last saw the trace, and the signature is not written twice (and deleted once, when the root's start
    moves the info)."""
    import time
    import uuid

    from serverless_mlflow.index import trace_aggregates
    from tests.indexer.test_partial_trace_metrics import _drain, _start_trace
    from tests.traces.test_spans_only_reference import CHILD, GRANDCHILD, ROOT, Side

    side = Side(paused_runtime.url)  # type: ignore[attr-defined]
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    side.export(trace_bytes, [(GRANDCHILD, CHILD, t0 + 20, t0 + 30, False)])
    _drain(paused_runtime)  # aggregated in progress (admin verify agrees: no signature expected)
    record = trace_aggregates.load(trace_id).record
    assert record is not None and record["in_progress"] and record.get("signature_key") is None
    assert _signature_of(trace_id) is None
    side.export(trace_bytes, [(CHILD, ROOT, t0 + 10, t0 + 40, False)])  # not yet seen by the indexer
    assert _found_by_content(side, f"%{CHILD.hex()}%") == [trace_id]

    side.export(trace_bytes, [(ROOT, None, t0, t0 + 50, False)])
    _start_trace(side, trace_id, t0, spans=3)
    _drain(paused_runtime)
    signature = _signature_of(trace_id)
    assert signature is not None and int(signature["spans"]) == 3  # type: ignore[call-overload]
    assert _found_by_content(side, f"%{CHILD.hex()}%") == [trace_id]
    assert _found_by_content(side, "%no such content anywhere%") == []
