"""The span-content signature's stored form: compressed when shorter, so a small trace's item costs one write
unit (under 1 KB), and a raw filter written by an earlier release still reads the same."""

from __future__ import annotations

import os

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
