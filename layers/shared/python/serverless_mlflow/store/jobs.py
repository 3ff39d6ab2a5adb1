"""Server-side jobs (MLflow's job store, ``mlflow.store.jobs``): one item per job, every state change a
conditional update, so the API (submit, cancel) and any number of worker invocations agree on one status.

States and moves, as MLflow's store has them: PENDING -> RUNNING (a worker claims it) -> SUCCEEDED, FAILED or
TIMEOUT; RUNNING -> PENDING again for a retry or a continuation (a checkpointed job handed to the next
invocation); PENDING/RUNNING -> CANCELED. A worker that died mid-run leaves a RUNNING job whose lease expired;
the next delivery of its message claims it again (counted as a retry).

JSON-valued fields (params, result, status details, progress, checkpoint) are stored as JSON text, as MLflow's
store keeps them: DynamoDB's number type would change floats and refuse empty sets.

A job belongs to the workspace of the request that submitted it (MLflow's workspace-aware job store): get, cancel
and search see only the request's workspace; the worker runs the job bound to its workspace.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import schema, table

JOB = schema.entity("job")
DEFAULT_WORKSPACE = request_workspace.DEFAULT_WORKSPACE

PENDING = "PENDING"
RUNNING = "RUNNING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
TIMEOUT = "TIMEOUT"
CANCELED = "CANCELED"
NEEDS_RECOVERY = "NEEDS_RECOVERY"
STATUSES = (PENDING, RUNNING, NEEDS_RECOVERY, SUCCEEDED, FAILED, TIMEOUT, CANCELED)
FINALIZED = frozenset({SUCCEEDED, FAILED, TIMEOUT, CANCELED})
# What cancel may move (MLflow's cancel_job).
CANCELABLE = (PENDING, RUNNING, NEEDS_RECOVERY)


def not_found_error(job_id: str) -> MlflowError:
    return not_found(f"Job with ID {job_id} not found")


def new_job_id() -> str:
    return str(uuid.uuid4())


def create(
    job_name: str,
    params: dict[str, Any],
    timeout: float | None,
    creator: str | None,
    workspace: str | None = None,
    job_id: str | None = None,
) -> dict[str, Any]:
    """A PENDING job in ``workspace`` (the request's by default); ``job_id`` when the caller chose it first (a run
    tagged with it before the job exists)."""
    job_id = job_id or new_job_id()
    workspace = workspace or request_workspace.current()
    now = clock.now_millis()
    attributes: dict[str, Any] = {
        "job_id": job_id,
        "job_name": job_name,
        "params": json.dumps(params),
        "status": PENDING,
        "retry_count": 0,
        "creation_time": now,
        "last_update_time": now,
        "workspace": workspace,
    }
    if timeout is not None:
        attributes["timeout"] = json.dumps(timeout)
    if creator:
        attributes["creator"] = creator
    item = JOB.item(attributes, job_id=job_id, workspace=workspace, creation_time=now)
    table.put(item, condition="attribute_not_exists(pk)")
    return item


def workspace_of(item: dict[str, Any]) -> str:
    return item.get("workspace") or DEFAULT_WORKSPACE


def get(job_id: str) -> dict[str, Any]:
    """The job, when it is in the request's workspace (any, with workspaces off): one of another workspace does not
    exist for the request, as MLflow's workspace-aware store filters its job queries."""
    item = table.get(JOB.key(job_id=job_id))
    if item is None or (request_workspace.enabled() and workspace_of(item) != request_workspace.current()):
        raise not_found_error(job_id)
    return item


def search(
    job_name: str | None, statuses: list[str] | None, params: dict[str, Any] | None, workspace: str | None = None
) -> list[dict[str, Any]]:
    """MLflow's ``list_jobs`` in ``workspace`` (the request's by default): oldest first; a job matches ``params``
    when it holds each of them with an equal value."""
    workspace = workspace or request_workspace.current()
    found = []
    for item in table.iter_query(**JOB.query("in_workspace", workspace=workspace)):
        if job_name is not None and item["job_name"] != job_name:
            continue
        if statuses and item["status"] not in statuses:
            continue
        if params:
            job_params = json.loads(item["params"])
            if any(key not in job_params or job_params[key] != value for key, value in params.items()):
                continue
        found.append(item)
    return found


def _move(
    job_id: str,
    allowed: tuple[str, ...],
    sets: dict[str, Any],
    removes: tuple[str, ...] = (),
    extra_condition: str = "",
    extra_values: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """One conditional status change; the updated item, or None when the job was not in ``allowed``."""
    sets = {**sets, "last_update_time": clock.now_millis()}
    names = {f"#a{i}": name for i, name in enumerate([*sets, *removes])}
    names["#status"] = "status"
    by_name = {name: alias for alias, name in names.items() if alias != "#status"}
    expression = "SET " + ", ".join(f"{by_name[name]} = :v{i}" for i, name in enumerate(sets))
    if removes:
        expression += " REMOVE " + ", ".join(by_name[name] for name in removes)
    values = {f":v{i}": value for i, value in enumerate(sets.values())}
    values.update({f":s{i}": status for i, status in enumerate(allowed)})
    values.update(extra_values or {})
    condition = f"attribute_exists(pk) AND #status IN ({', '.join(f':s{i}' for i in range(len(allowed)))})"
    if extra_condition:
        condition += f" AND ({extra_condition})"
    try:
        return table.update(JOB.key(job_id=job_id), expression, names=names, values=values, condition=condition, return_values="ALL_NEW")
    except table.ConditionFailed:
        return None


def _refuse(job_id: str, action: str, allowed: tuple[str, ...]) -> MlflowError:
    """MLflow's ``_raise_invalid_transition`` messages."""
    status = get(job_id)["status"]
    if status in FINALIZED:
        return invalid(f"The Job {job_id} is already finalized with status: JobStatus.{status}, it can't be updated.")
    return invalid(f"Job {job_id} is in JobStatus.{status} state, cannot {action} (must be {', '.join(allowed)})")


def cancel(job_id: str) -> dict[str, Any]:
    get(job_id)  # another workspace's job is not found (a job never changes workspace)
    updated = _move(job_id, CANCELABLE, {"status": CANCELED}, removes=("lease_expires_at",))
    if updated is None:
        raise _refuse(job_id, "cancel", CANCELABLE)
    return updated


def claim(job_id: str, lease_ms: int) -> dict[str, Any] | None:
    """A worker takes the job: PENDING -> RUNNING, or a RUNNING job whose worker's lease expired (it died; the
    claim counts as a retry). None when the job is finalized or another worker holds a live lease."""
    now = clock.now_millis()
    claimed = _move(job_id, (PENDING,), {"status": RUNNING, "lease_expires_at": now + lease_ms})
    if claimed is not None:
        return claimed
    item = table.get(JOB.key(job_id=job_id))
    if item is None or item["status"] != RUNNING:
        return None
    return _move(
        job_id,
        (RUNNING,),
        {"status": RUNNING, "lease_expires_at": now + lease_ms, "retry_count": int(item.get("retry_count") or 0) + 1},
        extra_condition="lease_expires_at < :now",
        extra_values={":now": now},
    )


def finish(job_id: str, status: str, result: Any = None, error: str | None = None) -> dict[str, Any] | None:
    """RUNNING -> a final status (None if the job was canceled meanwhile: cancel wins)."""
    sets: dict[str, Any] = {"status": status}
    if status == SUCCEEDED:
        sets["result"] = json.dumps(result)
    elif error is not None:
        sets["result"] = error
    return _move(job_id, (RUNNING,), sets, removes=("lease_expires_at", "checkpoint"))


def requeue(job_id: str, retry: bool, checkpoint: Any = None) -> dict[str, Any] | None:
    """RUNNING -> PENDING: a retry (``retry_count`` + 1) or a continuation from ``checkpoint`` in the next
    invocation (not a retry). None if the job was canceled meanwhile."""
    current = table.get(JOB.key(job_id=job_id))
    if current is None:
        return None
    sets: dict[str, Any] = {"status": PENDING}
    if retry:
        sets["retry_count"] = int(current.get("retry_count") or 0) + 1
    if checkpoint is not None:
        sets["checkpoint"] = json.dumps(checkpoint)
    return _move(job_id, (RUNNING,), sets, removes=("lease_expires_at",))


def count_in_workspace(workspace: str) -> int:
    """How many jobs (any status) a workspace holds: what its RESTRICT deletion counts, as MLflow's ``jobs`` table."""
    return sum(len(items) for items, _ in table.query_pages(**JOB.query("in_workspace", workspace=workspace)))


def delete_finalized(job_id: str) -> bool:
    """MLflow's ``delete_jobs(job_ids=[job_id])``: a finished job is deleted, any other is kept (no error)."""
    values = {f":s{i}": status for i, status in enumerate(sorted(FINALIZED))}
    condition = f"#status IN ({', '.join(values)})"
    try:
        table.delete(JOB.key(job_id=job_id), condition=condition, names={"#status": "status"}, values=values)
    except table.ConditionFailed:
        return False
    return True


def fail_unqueued(job_id: str) -> None:
    """PENDING -> FAILED: the job's message never reached the queue."""
    _move(job_id, (PENDING,), {"status": FAILED, "result": "The job could not be queued for a worker."})


def report_progress(job_id: str, progress: dict[str, Any] | None, status_message: str | None) -> dict[str, Any] | None:
    sets: dict[str, Any] = {}
    if progress is not None:
        sets["progress"] = json.dumps(progress)
        sets["progress_updated_at"] = clock.now_millis()
    if status_message is not None:
        sets["status_message"] = status_message
    return _move(job_id, (RUNNING,), sets) if sets else None


def merge_status_details(job_id: str, details: dict[str, Any]) -> dict[str, Any] | None:
    """MLflow's ``update_status_details``: ``details`` merged over the job's, while it is not finished (a late
    update is dropped, as MLflow's tracker ignores its terminal-state refusal). A job runs in one worker at a time,
    so reading then writing loses no concurrent update of its own."""
    item = table.get(JOB.key(job_id=job_id))
    if item is None:
        return None
    merged = {**(json.loads(item["status_details"]) if item.get("status_details") else {}), **details}
    return _move(job_id, (PENDING, RUNNING), {"status_details": json.dumps(merged)})


def checkpoint_of(item: dict[str, Any]) -> Any:
    text = item.get("checkpoint")
    return json.loads(text) if text else None


def job_json(item: dict[str, Any]) -> dict[str, Any]:
    """MLflow's ``job_api.Job`` (the pydantic model's JSON: every field, null when unset)."""
    status = item["status"]
    stored_result = item.get("result")
    result = json.loads(stored_result) if stored_result is not None and status == SUCCEEDED else stored_result
    error_message = item.get("error_message")
    if error_message is None and status in (FAILED, TIMEOUT) and isinstance(stored_result, str):
        error_message = stored_result
    progress = json.loads(item["progress"]) if item.get("progress") else None
    return {
        "job_id": item["job_id"],
        "creation_time": int(item["creation_time"]),
        "job_name": item["job_name"],
        "params": json.loads(item["params"]),
        "timeout": json.loads(item["timeout"]) if item.get("timeout") is not None else None,
        "status": status,
        "result": result,
        "error_message": error_message,
        "retry_count": int(item.get("retry_count") or 0),
        "last_update_time": int(item["last_update_time"]),
        "status_details": json.loads(item["status_details"]) if item.get("status_details") else None,
        "creator": item.get("creator"),
        "status_message": item.get("status_message"),
        "progress": {key: progress.get(key) for key in ("phase", "completed", "total", "unit")} if progress else None,
        "progress_updated_at": int(item["progress_updated_at"]) if item.get("progress_updated_at") is not None else None,
    }
