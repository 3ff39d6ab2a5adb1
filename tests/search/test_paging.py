"""Keyset page tokens: stable under concurrent inserts, MLflow's errors for malformed tokens."""

from __future__ import annotations

import base64
import json
import math
import random
from typing import Any

import pytest
from mlflow.utils.search_utils import SearchUtils

from serverless_mlflow import search
from serverless_mlflow.core.errors import MlflowError
from tests.search.helpers import outcome


def _run(i: int, rng: random.Random) -> dict[str, Any]:
    metrics = {} if rng.random() < 0.2 else {"m": rng.choice([1.0, 2.0, math.nan, math.inf, -3.5, 2.0])}
    return {
        "info": {
            "run_id": f"{i:032x}",
            "run_name": f"r{i}",
            "experiment_id": "1",
            "user_id": "u",
            "status": "FINISHED",
            "start_time": rng.choice([1, 2, 2, 3]),
            "end_time": None,
            "artifact_uri": "x",
            "lifecycle_stage": "active",
        },
        "metrics": metrics,
        "params": {"p": rng.choice(["a", "b", "é"])} if rng.random() < 0.7 else {},
        "tags": {},
        "datasets": [],
    }


@pytest.mark.parametrize("order_by", [None, ["metrics.m DESC"], ["params.p", "metrics.m"], ["attributes.end_time DESC"]])
def test_keyset_pages_survive_inserts(order_by: list[str] | None) -> None:
    """Entities inserted between pages never make a page repeat or skip an entity that existed at the start;
    new entities after the current position show up, new ones before it do not."""
    rng = random.Random(11)
    runs = [_run(i, rng) for i in range(60)]
    original = {r["info"]["run_id"] for r in runs}
    seen: list[str] = []
    token = None
    next_id = 1000
    while True:
        q = search.prepare_run_search("", order_by, 7, token)
        page, token = q.run(runs)
        seen.extend(r["info"]["run_id"] for r in page)
        if not token:
            break
        for _ in range(3):  # concurrent writers
            runs.append(_run(next_id, rng))
            next_id += 1
    assert len(seen) == len(set(seen)), "a run was returned twice"
    assert original <= set(seen), "a run that existed before the first page was skipped"
    # Every returned run after the first page sorts after everything before it (one global order).
    final_order = [r["info"]["run_id"] for r in search.sort(runs, search.parse_run_order_by(order_by))]
    positions = [final_order.index(x) for x in seen]
    assert positions == sorted(positions)


def test_page_tokens_round_trip_and_end() -> None:
    rng = random.Random(3)
    runs = search.sort([_run(i, rng) for i in range(10)], search.parse_run_order_by(None))
    order = search.parse_run_order_by(None)
    first, token = search.page(runs, order, 4, None)
    assert [r["info"]["run_id"] for r in first] == [r["info"]["run_id"] for r in runs[:4]] and token
    assert search.decode_page_token(token, order) == search.position(runs[3], order)
    rest, token2 = search.page(runs, order, 6, token)
    assert rest == runs[4:] and token2 is None  # exactly the last page: no token, like MLflow
    assert search.page(runs, order, 100, None) == (runs, None)
    assert search.page(runs, order, None, token) == (runs[4:], None)


@pytest.mark.parametrize(
    "token",
    ["!!!!", "YWJj", "bm90IGpzb24=", "abc", "e30=", base64.b64encode(b"[1, 2]").decode(), base64.b64encode(b'{"offset": 5}').decode()],
)
def test_malformed_tokens_fail_like_mlflow(token: str) -> None:
    order = search.parse_run_order_by(None)
    ours = outcome(search.decode_page_token, token, order)
    assert ours[0] == "err" and ours[1] == "INVALID_PARAMETER_VALUE", ours
    theirs = outcome(SearchUtils.parse_start_offset_from_page_token, token)
    if theirs[0] == "err":
        # Same text for the encoding-level failures; MLflow accepts its own offsets, we reject them with its
        # "parsed value" message.
        if "base64" in theirs[2] or "decoded value" in theirs[2]:
            assert ours == theirs
        else:
            assert ours[2].startswith("Invalid page token, parsed value=")
    else:
        assert ours[2].startswith("Invalid page token, parsed value=")


def test_token_for_another_ordering_is_rejected() -> None:
    rng = random.Random(4)
    runs = [_run(i, rng) for i in range(5)]
    _, token = search.prepare_run_search("", ["metrics.m"], 2, None).run(runs)
    assert token
    with pytest.raises(MlflowError) as exc:
        search.prepare_run_search("", ["params.p"], 2, token)
    assert exc.value.error_code == "INVALID_PARAMETER_VALUE" and exc.value.message.startswith("Invalid page token, parsed value=")
    # A forged token whose values do not fit the ordering must not crash the comparison.
    forged = json.loads(base64.b64decode(token))
    forged["p"][0] = [0, "not-a-number"]
    forged_token = base64.b64encode(json.dumps(forged).encode()).decode()
    with pytest.raises(MlflowError) as exc:
        search.prepare_run_search("", ["metrics.m"], 2, forged_token).run(runs)
    assert exc.value.error_code == "INVALID_PARAMETER_VALUE"


def test_max_results_messages() -> None:
    with pytest.raises(MlflowError, match="It must be at most 50000"):
        search.prepare_run_search(max_results=50001)
    with pytest.raises(MlflowError, match="It must be a positive integer"):
        search.prepare_run_search(max_results=0)
    assert search.prepare_run_search(max_results=None).max_results is None
    with pytest.raises(MlflowError, match="It must be at most 1000, but got value 1001"):
        search.prepare_registered_model_search(max_results=1001)
    with pytest.raises(MlflowError, match="It must be a positive integer, but got 0"):
        search.prepare_model_version_search(max_results=0)


def test_model_version_numbers_may_be_strings() -> None:
    mvs = [{"name": "m", "version": str(v), "current_stage": "None", "last_updated_timestamp": 1, "tags": {}} for v in (1, 2, 10)]
    page, _ = search.prepare_model_version_search("version_number >= 2").run(mvs)
    assert [m["version"] for m in page] == ["10", "2"]  # integer order, not string order


def test_dynamodb_decimals_are_accepted() -> None:
    from decimal import Decimal

    rng = random.Random(1)
    runs = [_run(i, rng) for i in range(6)]
    for r in runs:
        r["info"]["start_time"] = Decimal(r["info"]["start_time"])
        r["metrics"] = {k: Decimal(str(v)) if math.isfinite(v) else v for k, v in r["metrics"].items()}
    q = search.prepare_run_search("", ["metrics.m DESC"], 2)
    page, token = q.run(runs)
    assert token and len(page) == 2
    rest, _ = search.prepare_run_search("", ["metrics.m DESC"], 10, token).run(runs)
    assert len(page) + len(rest) == 6


def test_fit_payload_shortens_a_page_and_continues_after_the_last_row_kept() -> None:
    rng = random.Random(5)
    q = search.prepare_run_search(None, ["metrics.m DESC"], 50, None)
    runs = sorted((_run(i, rng) for i in range(50)), key=q.sort_key)
    rows = [{"run": r["info"]["run_id"], "blob": "é" * 1000} for r in runs]
    size = search.paging.payload_size(rows[0])
    assert size > 7000  # each non-ASCII character travels as \\\\u00e9 inside the escaped body

    kept, token = search.fit_payload(rows, runs, q.order_by, None, limit=size * 10 + 1)
    assert kept == rows[:10] and token is not None
    rest = [r for r in runs if search.is_after(r, search.decode_page_token(token, q.order_by), q.order_by)]
    assert rest == runs[10:]  # the next page starts right after the last row kept: nothing lost or repeated

    assert search.fit_payload(rows, runs, q.order_by, "tok", limit=size * 60) == (rows, "tok")  # fits: unchanged
    one, token = search.fit_payload(rows, runs, q.order_by, None, limit=10)
    assert one == rows[:1] and token is not None  # a single row is never split
