"""Run lifecycle: create, get, update (status, end time, name), delete and restore.

Semantics follow ``SqlAlchemyStore.create_run`` / ``update_run_info`` / ``delete_run`` /
``restore_run``; writes are conditional so a concurrent delete or a concurrent experiment delete
cannot be overtaken.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow import clock, table
from serverless_mlflow.request import run_status
from serverless_mlflow.store import run_create
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import ACTIVE, RUN_NAME_TAG, RUN_TAG

create_run = run_create.create_run


def get_run(msg: dict[str, Any]) -> dict[str, Any]:
    return {"run": store.get_run(msg.get("run_id", ""))}


def update_run(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    run = store.get_active_run_item(run_id)
    changes: dict[str, Any] = {}
    status = run_status(msg.get("status"))
    if status is not None:
        changes["status"] = status
    if msg.get("end_time") is not None:
        changes["end_time"] = msg["end_time"]
    run_name = msg.get("run_name")
    if run_name:
        changes["run_name"] = run_name
    if changes:
        write_run_changes(run, changes)
    return {"run_info": store.run_info_json({**run, **changes})}


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
                {"key": RUN_NAME_TAG, "value": changes["run_name"]},
                experiment_id=run["experiment_id"],
                run_id=run["run_id"],
                key=RUN_NAME_TAG,
                changed_at=clock.now_millis(),
            )
            table.transact([table.update_op(key, expression, names, values, condition), table.put_op(tag)])
        else:
            table.update(key, expression, names, values, condition=condition)
    except table.ConditionFailed:
        raise store.run_not_active(run["run_id"], store.DELETED) from None


def delete_run(msg: dict[str, Any]) -> dict[str, Any]:
    run = store.get_run_item(msg.get("run_id", ""))
    store.set_lifecycle(run, store.DELETED)
    return {}


def restore_run(msg: dict[str, Any]) -> dict[str, Any]:
    run = store.get_run_item(msg.get("run_id", ""))
    store.set_lifecycle(run, ACTIVE)
    return {}
