"""Metric history reads: get-history (paged) and get-history-bulk-interval (sampled).

A metric's points live in their own partition (``MH#<run>#<key>``), packed per logging request (``metric_packs``),
each pack keyed by its first point: the reader merges packs by position, the order MLflow answers get-history in.
Page tokens are keyset positions (the last point returned, so a point logged between two pages is never returned
twice) plus where the next read starts: after the sort key read before the first pack still holding a point past
the page. A token names its run and metric the way layout 1 keyed the point (``H#<run>#<key>`` + the position), so
tokens of either layout stay valid (one without a start is read from the partition's start).

While the table (or this experiment) is still in layout 1 (``layout.py``), the experiment partition's points are
read too and merged by position: a point the migration has copied but not yet deleted is returned once.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request.pages import page_response, token_json
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import PK, SK
from serverless_mlflow.store import metric_packs
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.run_metrics import HISTORY, HISTORY_V1, sql_value

from .messages import MAX_RESULTS_PER_RUN


def _encode_token(last_sk: str, start_after: str | None) -> str:
    token: dict[str, Any] = {"after": last_sk}
    if start_after is not None:
        token["from"] = start_after
    return base64.b64encode(json.dumps(token).encode("utf-8")).decode("ascii")


def _decode_token(token: str, prefix: str) -> tuple[str, str | None]:
    """The position a page resumes after, and the sort key its read starts after; MLflow's messages for tokens
    that do not decode."""
    parsed = token_json(token)
    after = parsed.get("after") if isinstance(parsed, dict) else None
    start = parsed.get("from") if isinstance(parsed, dict) else None
    if not isinstance(after, str) or not after.startswith(prefix) or not isinstance(start, str | None):
        raise invalid(f"Invalid page token, parsed value={parsed}")
    return after[len(prefix) :], start


def _read(
    experiment_id: str, run_id: str, metric_key: str, after: str | None, limit: int | None, start_after: str | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], metric_packs.FirstPoints]:
    """(position, point) of the metric's first ``limit`` points after position ``after``, in order, and what was
    read (where a next page starts): its partition's packs from ``start_after`` on, and the experiment partition's
    points while this experiment's may still be there."""
    found = metric_packs.read_first(HISTORY.query("of_metric", run_id=run_id, key=metric_key), after, limit, start_after)
    merged = dict(found.points)
    if not layout.experiment_at_least(experiment_id, layout.METRICS_OUTSIDE_EXPERIMENT):
        legacy = HISTORY_V1.query("of_metric", experiment_id=experiment_id, run_id=run_id, key=metric_key)
        prefix = HISTORY_V1.sk_prefix(run_id=run_id, key=metric_key)
        start = table.to_item({PK: legacy.pk_value, SK: prefix + after}) if after is not None else None
        for page, _ in table.query_pages(**legacy, limit=limit, start_key=start):
            for item in page:
                # A point copied by the migration but not yet deleted is in both: returned once.
                merged.setdefault(item[SK][len(prefix) :], item)
    ordered = [(position, merged[position]) for position in sorted(merged)]
    return (ordered if limit is None else ordered[:limit]), found


def read_history(experiment_id: str, run_id: str, metric_key: str) -> list[dict[str, Any]]:
    return [item for _, item in _read(experiment_id, run_id, metric_key, None, None)[0]]


def get_metric_history(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    metric_key = msg.get("metric_key", "")
    max_results = msg.get("max_results")
    if max_results is not None and max_results <= 0:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results' supplied. It must be a positive integer.")
    # Like the SQL store, an unknown run simply has no history.
    experiment_id = store.find_experiment_id(run_id)
    prefix = HISTORY_V1.sk_prefix(run_id=run_id, key=metric_key)
    after, start_after = _decode_token(msg["page_token"], prefix) if msg.get("page_token") else (None, None)
    if experiment_id is None:
        return {}
    limit = max_results + 1 if max_results is not None else None
    points, found = _read(experiment_id, run_id, metric_key, after, limit, start_after)
    next_token = None
    if max_results is not None and len(points) > max_results:
        points = points[:max_results]
        last = points[-1][0]
        next_token = _encode_token(prefix + last, found.resume_after(last))
    return page_response("metrics", [store.metric_json(item) for _, item in points], next_token)


# --- bulk interval (SqlAlchemyStore.get_metric_history_bulk_interval) ---------------------------------


def _sample_order(item: dict[str, Any]) -> tuple[int, int, float, bool]:
    value = float(item["value"])
    is_nan = bool(item.get("is_nan")) or math.isnan(value)
    return (item["step"], item["timestamp"], sql_value(value), is_nan)


def sample_points(rows: list[dict[str, Any]], max_results: int) -> list[dict[str, Any]]:
    """NTILE(max_results) over (step, timestamp, value, is_nan), the first row of each bucket, then the
    last row kept as the end boundary (replacing the last sample when already at max_results)."""
    rows = sorted(rows, key=_sample_order)
    total = len(rows)
    if not total:
        return []
    buckets = min(max_results, total)
    base, extra = divmod(total, buckets)
    sampled, index = [], 0
    for bucket in range(buckets):
        sampled.append(rows[index])
        index += base + (1 if bucket < extra else 0)
    last = rows[-1]
    if _row_key(sampled[-1]) != _row_key(last):
        if len(sampled) >= max_results:
            sampled[-1] = last
        else:
            sampled.append(last)
    return sampled


def _row_key(item: dict[str, Any]) -> tuple[Any, ...]:
    step, timestamp, value, is_nan = _sample_order(item)
    return (step, timestamp, None if is_nan else value, is_nan)


def get_metric_history_bulk_interval(msg: dict[str, Any]) -> dict[str, Any]:
    run_ids: list[str] = msg.get("run_ids") or []
    metric_key = msg.get("metric_key", "")
    max_results = msg.get("max_results", MAX_RESULTS_PER_RUN)
    start_step, end_step = msg.get("start_step"), msg.get("end_step")
    if start_step is not None and end_step is not None:
        if start_step > end_step:
            raise invalid(f"end_step must be greater than start_step. Found start_step={start_step} and end_step={end_step}.")
    elif start_step is not None or end_step is not None:
        raise invalid("If either start step or end step are specified, both must be specified.")
    max_results = max(1, max_results)
    out: list[dict[str, Any]] = []
    for run_id in run_ids:
        experiment_id = store.find_experiment_id(run_id)
        if experiment_id is None:
            continue
        rows = read_history(experiment_id, run_id, metric_key)
        if start_step is not None and end_step is not None:
            rows = [row for row in rows if start_step <= row["step"] <= end_step]
        for row in sample_points(rows, max_results):
            out.append({**store.metric_json(row), "run_id": run_id})
    return {"metrics": out} if out else {}


# --- bulk (the UI's get-history-bulk: whole histories of up to 100 runs) -------------------------------

MAX_BULK_HISTORY_RESULTS = 25_000
MAX_BULK_RUN_IDS = 100


def get_metric_history_bulk(run_ids: list[str], metric_key: str | None, max_results: int | None) -> dict[str, Any]:
    """MLflow's ``get_metric_history_bulk_handler`` on the SQL store: runs in id order, each history by
    (timestamp, step, value), at most ``max_results`` (25,000) points in all."""
    if not run_ids:
        raise invalid("GetMetricHistoryBulk request must specify at least one run_id.")
    if len(run_ids) > MAX_BULK_RUN_IDS:
        raise invalid(f"GetMetricHistoryBulk request cannot specify more than {MAX_BULK_RUN_IDS} run_ids. Received {len(run_ids)} run_ids.")
    if metric_key is None:
        raise invalid("GetMetricHistoryBulk request must specify a metric_key.")
    limit = min(max_results if max_results is not None else MAX_BULK_HISTORY_RESULTS, MAX_BULK_HISTORY_RESULTS)
    out: list[dict[str, Any]] = []
    for run_id in sorted(set(run_ids)):
        if len(out) >= limit:
            break
        experiment_id = store.find_experiment_id(run_id)
        if experiment_id is None:
            continue
        out.extend({**store.metric_json(row), "run_id": run_id} for row in read_history(experiment_id, run_id, metric_key))
    return {"metrics": out[: max(limit, 0)]}
