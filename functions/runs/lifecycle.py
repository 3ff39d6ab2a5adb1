"""Run lifecycle: create, get, update (status, end time, name), delete and restore.

Semantics follow ``SqlAlchemyStore.create_run`` / ``update_run_info`` / ``delete_run`` /
``restore_run``; writes are conditional so a concurrent delete or a concurrent experiment delete
cannot be overtaken.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.request import run_status
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.run_writes import create_run, write_run_changes
from serverless_mlflow.store.runs import ACTIVE

__all__ = ["create_run", "delete_run", "get_run", "restore_run", "update_run", "write_run_changes"]


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


def delete_run(msg: dict[str, Any]) -> dict[str, Any]:
    run = store.get_run_item(msg.get("run_id", ""))
    store.set_lifecycle(run, store.DELETED)
    return {}


def restore_run(msg: dict[str, Any]) -> dict[str, Any]:
    run = store.get_run_item(msg.get("run_id", ""))
    store.set_lifecycle(run, ACTIVE)
    return {}
