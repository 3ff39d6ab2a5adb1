"""Run data writes: metrics, params, tags and log_batch, with MLflow's validation and rules.

Everything is validated before the first write. Writes are idempotent so retries converge:

* metric history points are packed per key (``metric_packs``), each pack keyed by its first point and a digest of
  its points, so a re-sent request overwrites its own packs (and identical points merge when read);
* the latest metric is a conditional put (``rank < :new``): concurrent writers keep MLflow's rule
  (max step, then timestamp, then value; NaN compares as 0, +-inf as +-max double) without locks;
* params are conditional puts (absent, or the same value), so immutability holds under races.

Metric points and latest values go to the run's partitions (``run_metrics``), never to the experiment's: when a
latest value changed, the run is marked for the indexer (``metric_marks``), which writes the experiment
partition at most a few units per run and indexer batch however many points were logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core import clock, validation
from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.index import metric_marks, run_summaries
from serverless_mlflow.request import key_values_of, metrics_of
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, PK, SK
from serverless_mlflow.store import logging_order, metric_packs, run_metrics
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.run_metrics import float_text, sql_value
from serverless_mlflow.store.runs import PARAM, RUN_NAME_TAG, RUN_TAG

from .lifecycle import write_run_changes

LOGGED_MODEL_METRIC = ENTITY["logged_model_metric"]

_PARAM_CONDITION = "attribute_not_exists(pk) OR #value = :value"


# --- writers -----------------------------------------------------------------------------------------


@dataclass
class MetricTarget:
    """A run about to receive metrics: its item and its indexer handshake items, read together (``metric_marks``)."""

    run: dict[str, Any]
    state: dict[str, Any] | None
    marker: dict[str, Any] | None


def run_for_metrics(run_id: str) -> MetricTarget:
    """The active run with its metric state and marker: locator (cached) + one BatchGetItem (was one GetItem)."""
    experiment_id = store.locate_run(run_id)
    run_key = store.RUN.key(experiment_id=experiment_id, run_id=run_id)
    state_key, marker_key = metric_marks.keys(experiment_id, run_id)
    found = {(item[PK], item[SK]): item for item in table.batch_get([run_key, state_key, marker_key])}
    run = found.get((run_key[PK], run_key[SK]))
    if run is None:
        raise store.run_not_found(run_id)
    if run["lifecycle_stage"] != store.ACTIVE:
        raise store.run_not_active(run_id, run["lifecycle_stage"])
    return MetricTarget(run, found.get((state_key[PK], state_key[SK])), found.get((marker_key[PK], marker_key[SK])))


def write_metrics(target: MetricTarget, metrics: list[dict[str, Any]]) -> None:
    """The run's mark for the indexer first (a full experiment partition refuses the request here, before anything
    is written), then the history points (one pack per key, batched, idempotent), then the latest value per key (conditional, in
    transactions of up to 100 keys; a key whose stored value is newer is simply dropped), then the write's count
    (``metric_marks``)."""
    if not metrics:
        return
    experiment_id, run_id = target.run["experiment_id"], target.run["run_id"]
    ensured = metric_marks.before_write(experiment_id, run_id, target.state, target.marker)
    table.batch_write(metric_packs.pack_items(run_id, metrics))
    best: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        current = best.get(metric["key"])
        # Strictly newer replaces: the first of equal points wins, as in the SQL store.
        if current is None or run_metrics.rank(metric) > run_metrics.rank(current):
            best[metric["key"]] = metric
    stamps = logging_order.stamps(len(best))
    puts = [run_metrics.latest_item(experiment_id, run_id, m, logged) for m, logged in zip(best.values(), stamps, strict=True)]
    changed = False
    for start in range(0, len(puts), table.TRANSACTION_LIMIT):
        changed |= run_metrics.put_if_newer(puts[start : start + table.TRANSACTION_LIMIT])
    if changed:
        metric_marks.after_write(experiment_id, run_id, ensured)


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
        PARAM.item(
            {"key": p["key"], "value": p["value"], "changed_at": changed_at, logging_order.ATTRIBUTE: logged},
            experiment_id=experiment_id,
            run_id=run_id,
            key=p["key"],
            changed_at=changed_at,
        )
        for p, logged in zip(params, logging_order.stamps(len(params)), strict=True)
    ]
    # Written as updates so a re-logged param keeps its first position (logging_order).
    try:
        if len(items) == 1:
            parts = table.as_update(items[0], logging_order.KEEP, {"#value": "value"}, {":value": items[0]["value"]})
            table.update(*parts, condition=_PARAM_CONDITION)
        else:
            table.transact(
                [
                    table.upsert_op(item, logging_order.KEEP, _PARAM_CONDITION, {"#value": "value"}, {":value": item["value"]})
                    for item in items
                ]
            )
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
        values = {t["key"]: t["value"] for t in plain}  # one write per key (a transaction names each item once)
        items = [
            RUN_TAG.item(
                {"key": key, "value": value, logging_order.ATTRIBUTE: logged},
                experiment_id=experiment_id,
                run_id=run_id,
                key=key,
                changed_at=changed_at,
            )
            for (key, value), logged in zip(values.items(), logging_order.stamps(len(values)), strict=True)
        ]
        # Updates, so that a tag set again keeps its first position (logging_order): one UpdateItem for one tag,
        # else transactions of up to 100 (a log_batch holds at most 100 tags).
        if len(items) == 1:
            table.update(*table.as_update(items[0], logging_order.KEEP))
        else:
            for start in range(0, len(items), table.TRANSACTION_LIMIT):
                table.transact([table.upsert_op(item, logging_order.KEEP) for item in items[start : start + table.TRANSACTION_LIMIT]])


def write_model_metrics(run: dict[str, Any], metrics: list[dict[str, Any]]) -> None:
    """Metrics logged with a model_id also belong to that logged model (``_log_model_metrics``): stored in the
    model's own partition (with its locator) with the SQL store's sanitized value (NaN as 0)."""
    items = [
        LOGGED_MODEL_METRIC.item(
            {
                "key": metric["key"],
                "value": float_text(sql_value(metric["value"])),
                "timestamp": metric["timestamp"],
                "step": metric["step"],
                "run_id": run["run_id"],
                "model_id": metric["model_id"],
                "dataset_name": metric.get("dataset_name"),
                "dataset_digest": metric.get("dataset_digest"),
            },
            model_id=metric["model_id"],
            key=metric["key"],
            step=metric["step"],
            timestamp=metric["timestamp"],
            run_id=run["run_id"],
        )
        for metric in metrics
        if metric.get("model_id")
    ]
    if items:
        table.batch_write(items)


# --- operations ----------------------------------------------------------------------------------


def log_metric(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    metric = {
        "key": msg.get("key"),
        "value": msg.get("value"),
        "timestamp": msg.get("timestamp"),
        "step": msg.get("step", 0),
        "model_id": msg.get("model_id") or None,
        "dataset_name": msg.get("dataset_name") or None,
        "dataset_digest": msg.get("dataset_digest") or None,
    }
    if metric["model_id"] is not None:
        # SqlAlchemyStore.log_metric checks the run before validating when a model is named.
        target = run_for_metrics(run_id)
        validation.validate_metric(metric["key"], metric["value"], metric["timestamp"], metric["step"], path="")
        write_model_metrics(target.run, [metric])
    else:
        validation.validate_metric(metric["key"], metric["value"], metric["timestamp"], metric["step"], path="")
        target = run_for_metrics(run_id)
    write_metrics(target, [metric])
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
    target = run_for_metrics(run_id) if metrics else MetricTarget(store.get_active_run_item(run_id), None, None)
    # Params first (all or nothing; a conflict writes nothing), as the SQL store checks them. The experiment
    # partition's writes (params, tags) come before the metrics' partitions: if it is full, nothing is written.
    conflicts = write_params(target.run, params)
    if conflicts:
        raise invalid(f"Changing param values is not allowed. Params were already logged='{conflicts}' for run ID='{run_id}'.")
    write_tags(target.run, tags)
    write_model_metrics(target.run, metrics)
    write_metrics(target, metrics)
    return {}
