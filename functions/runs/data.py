"""Run data writes: metrics, params, tags and log_batch, with MLflow's validation and rules.

Everything is validated before the first write. Writes are idempotent so retries converge:

* metric history points land on keys made of the SQL store's identity (key, timestamp, step, value),
  so a re-sent point overwrites itself;
* the latest metric is a conditional put (``rank < :new``): concurrent writers keep MLflow's rule
  (max step, then timestamp, then value; NaN compares as 0, +-inf as +-max double) without locks;
* params are conditional puts (absent, or the same value), so immutability holds under races.
"""

from __future__ import annotations

import math
from typing import Any

from serverless_mlflow import clock, keys, run_summaries, table, validation
from serverless_mlflow.errors import invalid, not_found
from serverless_mlflow.request import key_values_of, metrics_of
from serverless_mlflow.schema import ENTITY
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import LATEST_METRIC, METRIC_HISTORY, PARAM, RUN_NAME_TAG, RUN_TAG, SQL_MAX_DOUBLE

from .lifecycle import write_run_changes

LOGGED_MODEL_LOCATOR = ENTITY["logged_model_locator"]
LOGGED_MODEL_METRIC = ENTITY["logged_model_metric"]

_RANK_CONDITION = "attribute_not_exists(pk) OR #rank < :rank"
_PARAM_CONDITION = "attribute_not_exists(pk) OR #value = :value"


# --- metric values as the SQL store sees them -------------------------------------------------------

def sql_value(value: float) -> float:
    """The value MLflow's SQL store compares and keys on: NaN as 0 (with is_nan), +-inf as +-max double."""
    if math.isnan(value):
        return 0.0
    if math.isinf(value):
        return SQL_MAX_DOUBLE if value > 0 else -SQL_MAX_DOUBLE
    return value


def identity_value(value: float) -> float:
    """The value part of a history point's identity: NaN stays distinct from 0 (SQL keys on is_nan)."""
    return value if math.isnan(value) else sql_value(value)


def metric_rank(metric: dict[str, Any]) -> str:
    """(step, timestamp, value) as one string whose byte order is MLflow's latest-metric order."""
    return keys.int64(metric["step"]) + keys.int64(metric["timestamp"]) + keys.float64(sql_value(metric["value"]))


def _float_text(value: float) -> str:
    # repr round-trips every double exactly, including nan/inf (the table stores floats as strings).
    return repr(float(value))


def history_item(experiment_id: str, run_id: str, metric: dict[str, Any]) -> dict[str, Any]:
    value = metric["value"]
    return METRIC_HISTORY.item(
        {"key": metric["key"], "value": _float_text(value), "timestamp": metric["timestamp"], "step": metric["step"], "is_nan": math.isnan(value)},
        experiment_id=experiment_id, run_id=run_id, key=metric["key"], timestamp=metric["timestamp"], step=metric["step"],
        value=identity_value(value),
    )


def latest_item(experiment_id: str, run_id: str, metric: dict[str, Any], changed_at: int) -> dict[str, Any]:
    value = metric["value"]
    return LATEST_METRIC.item(
        {
            "key": metric["key"], "value": _float_text(value), "timestamp": metric["timestamp"], "step": metric["step"],
            "is_nan": math.isnan(value), "rank": metric_rank(metric), "changed_at": changed_at,
        },
        experiment_id=experiment_id, run_id=run_id, key=metric["key"], changed_at=changed_at,
    )


# --- writers -----------------------------------------------------------------------------------------

def write_metrics(run: dict[str, Any], metrics: list[dict[str, Any]]) -> None:
    """History points (batched, idempotent), then the latest value per key (conditional, in
    transactions of up to 100 keys; a key whose stored value is newer is simply dropped)."""
    if not metrics:
        return
    experiment_id, run_id = run["experiment_id"], run["run_id"]
    table.batch_write(history_item(experiment_id, run_id, m) for m in metrics)
    best: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        current = best.get(metric["key"])
        # Strictly newer replaces: the first of equal points wins, as in the SQL store.
        if current is None or metric_rank(metric) > metric_rank(current):
            best[metric["key"]] = metric
    changed_at = clock.now_millis()
    puts = [latest_item(experiment_id, run_id, m, changed_at) for m in best.values()]
    for start in range(0, len(puts), table.TRANSACTION_LIMIT):
        _put_if_newer(puts[start : start + table.TRANSACTION_LIMIT])


def _put_if_newer(items: list[dict[str, Any]]) -> None:
    pending = items
    while pending:
        if len(pending) == 1:
            try:
                table.put(pending[0], _RANK_CONDITION, {"#rank": "rank"}, {":rank": pending[0]["rank"]})
            except table.ConditionFailed:
                pass  # the stored latest value is at least as recent
            return
        operations = [table.put_op(item, _RANK_CONDITION, {"#rank": "rank"}, {":rank": item["rank"]}) for item in pending]
        try:
            table.transact(operations)
            return
        except table.ConditionFailed as failure:
            if len(failure.reasons) != len(pending):
                # No per-item reasons: settle each key on its own.
                for item in pending:
                    _put_if_newer([item])
                return
            # Keys whose condition failed already hold a newer value; retry only the others.
            pending = [item for item, reason in zip(pending, failure.reasons, strict=True) if reason != "ConditionalCheckFailed"]


def write_params(run: dict[str, Any], params: list[dict[str, Any]], attempts: int = 3) -> list[dict[str, Any]]:
    """Write all params or none (one transaction; a batch holds at most 100).

    Returns the conflicts, ``[{key, old_value, new_value}]`` in request order, when a key was already
    logged with another value (nothing is written then); params are immutable.
    """
    if not params:
        return []
    experiment_id, run_id = run["experiment_id"], run["run_id"]
    changed_at = clock.now_millis()
    items = [
        PARAM.item({"key": p["key"], "value": p["value"], "changed_at": changed_at}, experiment_id=experiment_id, run_id=run_id, key=p["key"], changed_at=changed_at)
        for p in params
    ]
    try:
        if len(items) == 1:
            table.put(items[0], _PARAM_CONDITION, {"#value": "value"}, {":value": items[0]["value"]})
        else:
            table.transact([table.put_op(item, _PARAM_CONDITION, {"#value": "value"}, {":value": item["value"]}) for item in items])
        return []
    except table.ConditionFailed:
        existing = {item["key"]: item.get("value", "") for item in table.batch_get([table.key_of(i) for i in items])}
    conflicts = [
        {"key": p["key"], "old_value": existing[p["key"]], "new_value": p["value"]}
        for p in params
        if p["key"] in existing and existing[p["key"]] != p["value"]
    ]
    if not conflicts and attempts > 1:
        # The condition cannot fail on equal values: the transaction raced a writer; try again.
        return write_params(run, params, attempts - 1)
    return conflicts


def write_tags(run: dict[str, Any], tags: list[dict[str, Any]]) -> None:
    """Upsert tags (last value of a repeated key wins). ``mlflow.runName`` goes through the run update,
    which renames the run and sets the tag together (SqlAlchemyStore.set_tag)."""
    plain: list[dict[str, Any]] = []
    for tag in tags:
        if tag["key"] == RUN_NAME_TAG:
            if tag["value"]:
                write_run_changes(run, {"run_name": tag["value"]})
        else:
            plain.append(tag)
    if plain:
        experiment_id, run_id = run["experiment_id"], run["run_id"]
        changed_at = clock.now_millis()
        table.batch_write(
            RUN_TAG.item({"key": t["key"], "value": t["value"]}, experiment_id=experiment_id, run_id=run_id, key=t["key"], changed_at=changed_at)
            for t in plain
        )


def write_model_metrics(run: dict[str, Any], metrics: list[dict[str, Any]]) -> None:
    """Metrics logged with a model_id also belong to that logged model (``_log_model_metrics``): stored
    in the model's experiment partition with the SQL store's sanitized value (NaN as 0)."""
    with_model = [m for m in metrics if m.get("model_id")]
    if not with_model:
        return
    model_ids = sorted({m["model_id"] for m in with_model})
    located = {
        LOGGED_MODEL_LOCATOR.parse_pk(item["pk"])["model_id"]: item["experiment_id"]
        for item in table.batch_get([LOGGED_MODEL_LOCATOR.key(model_id=model_id) for model_id in model_ids])
    }
    items = []
    for metric in with_model:
        experiment_id = located.get(metric["model_id"], run["experiment_id"])
        items.append(
            LOGGED_MODEL_METRIC.item(
                {
                    "key": metric["key"], "value": _float_text(sql_value(metric["value"])), "timestamp": metric["timestamp"],
                    "step": metric["step"], "run_id": run["run_id"], "model_id": metric["model_id"],
                    "dataset_name": metric.get("dataset_name"), "dataset_digest": metric.get("dataset_digest"),
                },
                experiment_id=experiment_id, model_id=metric["model_id"], key=metric["key"], step=metric["step"],
                timestamp=metric["timestamp"], run_id=run["run_id"],
            )
        )
    table.batch_write(items)


# --- operations ----------------------------------------------------------------------------------

def log_metric(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    metric = {
        "key": msg.get("key"), "value": msg.get("value"), "timestamp": msg.get("timestamp"), "step": msg.get("step", 0),
        "model_id": msg.get("model_id") or None, "dataset_name": msg.get("dataset_name") or None,
        "dataset_digest": msg.get("dataset_digest") or None,
    }
    if metric["model_id"] is not None:
        # SqlAlchemyStore.log_metric checks the run before validating when a model is named.
        run = store.get_active_run_item(run_id)
        validation.validate_metric(metric["key"], metric["value"], metric["timestamp"], metric["step"], path="")
        write_model_metrics(run, [metric])
    else:
        validation.validate_metric(metric["key"], metric["value"], metric["timestamp"], metric["step"], path="")
        run = store.get_active_run_item(run_id)
    write_metrics(run, [metric])
    return {}


def log_param(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    key, value = validation.validate_param(msg.get("key"), msg.get("value", ""))
    run = store.get_active_run_item(run_id)
    conflicts = write_params(run, [{"key": key, "value": value}])
    if conflicts:
        raise invalid(
            f"Changing param values is not allowed. Param with key='{key}' was already logged with value='{conflicts[0]['old_value']}' "
            f"for run ID='{run_id}'. Attempted logging new value '{value}'."
        )
    return {}


def set_tag(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    key, value = validation.validate_tag(msg.get("key"), msg.get("value", ""))
    run = store.get_active_run_item(run_id)
    write_tags(run, [{"key": key, "value": value}])
    return {}


def delete_tag(msg: dict[str, Any]) -> dict[str, Any]:
    run_id, key = msg.get("run_id", ""), msg.get("key", "")
    run = store.get_active_run_item(run_id)
    # A deleted tag leaves no item to flag: the run item is flagged with it (its summary is stale until indexed).
    delete = table.delete_op(RUN_TAG.key(experiment_id=run["experiment_id"], run_id=run_id, key=key), "attribute_exists(pk)")
    try:
        table.transact([delete, run_summaries.flag_run_op(run)])
    except table.ConditionFailed:
        raise not_found(f"No tag with name: {key} in run with id {run_id}") from None
    return {}


def log_batch(msg: dict[str, Any], raw_json: dict[str, Any]) -> dict[str, Any]:
    validation.validate_batch_log_api_req(raw_json)
    run_id = msg.get("run_id", "")
    validation.validate_run_id(run_id)
    metrics = metrics_of(msg.get("metrics") or [])
    params = key_values_of(msg.get("params") or [], "params")
    tags = key_values_of(msg.get("tags") or [], "tags")
    metrics, params, tags = validation.validate_batch_log_data(metrics, params, tags)
    validation.validate_batch_log_limits(metrics, params, tags)
    validation.validate_param_keys_unique(params)
    run = store.get_active_run_item(run_id)
    # The SQL store's order: params (all or nothing), metrics, model metrics, tags.
    conflicts = write_params(run, params)
    if conflicts:
        raise invalid(f"Changing param values is not allowed. Params were already logged='{conflicts}' for run ID='{run_id}'.")
    write_metrics(run, metrics)
    write_model_metrics(run, metrics)
    write_tags(run, tags)
    return {}
