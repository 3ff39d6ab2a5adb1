"""Creating a run (``SqlAlchemyStore.create_run``): the runs API's ``create_run`` and the routes that create a run
for the work they start (the GenAI evaluate invoke route's evaluation run)."""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow import clock, table
from serverless_mlflow.artifact_locations import append_to_uri_path
from serverless_mlflow.errors import invalid
from serverless_mlflow.names import random_name as random_run_name
from serverless_mlflow.request import key_values_of
from serverless_mlflow.store import experiments as experiments_store
from serverless_mlflow.store import runs as store
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
    }
    # The last value of a repeated tag key wins (one item per key).
    tag_values = {tag["key"]: tag["value"] for tag in tags}
    tag_items = [
        RUN_TAG.item({"key": k, "value": v}, experiment_id=experiment_id, run_id=run_id, key=k, changed_at=now)
        for k, v in tag_values.items()
    ]
    operations = [
        # The experiment must still be active when the run appears: a concurrent delete_experiment
        # (which marks every run deleted) either sees this run or makes this create fail.
        table.check_op(experiments_store.meta_key(experiment_id), "#lc = :active", {"#lc": "lifecycle_stage"}, {":active": ACTIVE}),
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


def fail_run(run_id: str) -> None:
    """``set_terminated(run_id, "FAILED")``: status FAILED, ended now, while the run is active."""
    run = store.get_active_run_item(run_id)
    expression, names, values = store.run_update(run, {"status": "FAILED", "end_time": clock.now_millis()})
    names["#lc"] = "lifecycle_stage"
    values[":active"] = ACTIVE
    key = store.RUN.key(experiment_id=run["experiment_id"], run_id=run["run_id"])
    try:
        table.update(key, expression, names, values, condition="attribute_exists(pk) AND #lc = :active")
    except table.ConditionFailed:
        raise store.run_not_active(run_id, store.DELETED) from None
