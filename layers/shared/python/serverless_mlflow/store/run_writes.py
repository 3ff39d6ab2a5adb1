"""Run writes shared by the features that create runs: the runs API, and the routes MLflow answers by creating a
run for a job (prompt optimization, issue detection). Semantics of ``SqlAlchemyStore.create_run`` and
``update_run_info``; writes are conditional so a concurrent delete cannot be overtaken."""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import key_values_of
from serverless_mlflow.storage import table
from serverless_mlflow.store import experiment_items, logging_order
from serverless_mlflow.store import experiments as experiments_store
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.artifact_locations import append_to_uri_path
from serverless_mlflow.store.names import random_name as random_run_name
from serverless_mlflow.store.runs import ACTIVE, RUN_NAME_TAG, RUN_TAG, RunView


def create_run(msg: dict[str, Any]) -> dict[str, Any]:
    experiment = experiments_store.get_active_experiment_meta(msg.get("experiment_id"))
    experiment_id = str(experiment["experiment_id"])
    tags = key_values_of(msg.get("tags") or [], "tags")
    run_name_tag = next((tag["value"] for tag in tags if tag["key"] == RUN_NAME_TAG), None)
    run_name = msg.get("run_name") or None
    if run_name and run_name_tag and run_name != run_name_tag:
        raise invalid(
            "Both 'run_name' argument and 'mlflow.runName' tag are specified, but with "
            f"different values (run_name='{run_name}', mlflow.runName='{run_name_tag}')."
        )
    run_name = run_name or run_name_tag or random_run_name()
    if not run_name_tag:
        tags.append({"key": RUN_NAME_TAG, "value": run_name})
    run_id = uuid.uuid4().hex
    now = clock.now_millis()
    info = {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "run_name": run_name,
        "user_id": msg.get("user_id", ""),
        "status": "RUNNING",
        "start_time": msg.get("start_time", 0),
        "end_time": None,
        "artifact_uri": append_to_uri_path(experiment["artifact_location"], run_id, "artifacts"),
        "lifecycle_stage": ACTIVE,
        "last_update_time": now,
        "whole_on_lsi5": True,
    }
    # The last value of a repeated tag key wins (one item per key).
    tag_values = {tag["key"]: tag["value"] for tag in tags}
    tag_items = [
        RUN_TAG.item(
            {"key": k, "value": v, logging_order.ATTRIBUTE: logged}, experiment_id=experiment_id, run_id=run_id, key=k, changed_at=now
        )
        for (k, v), logged in zip(tag_values.items(), logging_order.stamps(len(tag_values)), strict=True)
    ]
    operations = [
        # The experiment must still be active when the run appears: a concurrent delete_experiment
        # (which marks every run deleted) either sees this run or makes this create fail.
        table.check_op(experiment_items.meta_key(experiment_id), "#lc = :active", {"#lc": "lifecycle_stage"}, {":active": ACTIVE}),
        table.put_op(store.run_item(info), "attribute_not_exists(pk)"),
        table.put_op(store.RUN_LOCATOR.item({"experiment_id": experiment_id}, run_id=run_id)),
    ]
    first, rest = tag_items[: table.TRANSACTION_LIMIT - len(operations)], tag_items[table.TRANSACTION_LIMIT - len(operations) :]
    operations += [table.put_op(item) for item in first]
    try:
        # The token makes DynamoDB answer a retried transaction (the SDK retries timeouts) as a success.
        table.transact(operations, token=run_id)
    except table.ConditionFailed as failure:
        # The run id is new, so a failed put of the run item can only be our own earlier attempt that
        # landed (a retry without token support, e.g. moto): the run exists as requested.
        if failure.reasons[:2] != ["None", "ConditionalCheckFailed"]:
            experiments_store.get_active_experiment_meta(experiment_id)
            raise
    if rest:
        table.batch_write(rest)
    store.remember_location(run_id, experiment_id)
    view = RunView(info=store.run_item(info), tags=tag_values)
    return {"run": store.run_json(view, inputs=True, outputs=False)}


def write_run_changes(run: dict[str, Any], changes: dict[str, Any]) -> None:
    """Update an active run's attributes; a new run_name also sets the mlflow.runName tag, in the same
    transaction (as ``update_run_info`` does). 400 if the run stopped being active meanwhile."""
    expression, names, values = store.run_update(run, changes)
    names["#lc"] = "lifecycle_stage"
    values[":active"] = ACTIVE
    condition = "attribute_exists(pk) AND #lc = :active"
    key = store.RUN.key(experiment_id=run["experiment_id"], run_id=run["run_id"])
    try:
        if "run_name" in changes:
            tag = RUN_TAG.item(
                {"key": RUN_NAME_TAG, "value": changes["run_name"], logging_order.ATTRIBUTE: logging_order.stamps(1)[0]},
                experiment_id=run["experiment_id"],
                run_id=run["run_id"],
                key=RUN_NAME_TAG,
                changed_at=clock.now_millis(),
            )
            # The tag keeps its place among the run's tags (logging_order).
            table.transact([table.update_op(key, expression, names, values, condition), table.upsert_op(tag, logging_order.KEEP)])
        else:
            table.update(key, expression, names, values, condition=condition)
    except table.ConditionFailed:
        raise store.run_not_active(run["run_id"], store.DELETED) from None


def fail_run(run_id: str) -> None:
    """``set_terminated(run_id, "FAILED")``: status FAILED, ended now, while the run is active."""
    write_run_changes(store.get_active_run_item(run_id), {"status": "FAILED", "end_time": clock.now_millis()})
