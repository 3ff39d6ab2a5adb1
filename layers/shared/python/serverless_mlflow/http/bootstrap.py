"""Items a new table needs before the first request: its layout version, the Default experiment (id 0) and its
name; with basic auth, the first admin user."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.storage import layout, table
from serverless_mlflow.store.experiment_items import DEFAULT_EXPERIMENT_ID, default_experiment_items, meta_key


def bootstrap_items() -> list[dict[str, Any]]:
    return default_experiment_items()


def ensure_bootstrap_items() -> None:
    """Write each bootstrap item unless it exists (safe to run on every start and every deploy).

    A table without the Default experiment is new (a table of any release has it from its first deploy): it is
    recorded at the current layout, before the Default experiment is written so a retry still knows. An older
    table keeps no recorded version (layout 1) until ``make migrate`` moves it."""
    if table.get(meta_key(DEFAULT_EXPERIMENT_ID)) is None:
        layout.record_new_table()
    for item in bootstrap_items():
        try:
            table.put(item, condition="attribute_not_exists(pk)")
        except table.ConditionFailed:
            continue


def ensure_admin(username: str, password: str) -> bool:
    """Create the first admin unless that user exists (MLflow ignores the configured password from then on).

    True when this call created it.
    """
    from serverless_mlflow.auth import store
    from serverless_mlflow.core.errors import MlflowError

    if store.get_user_or_none(username) is not None:
        return False
    try:
        store.create_user(username, password, is_admin=True)
    except MlflowError as error:
        if error.error_code == "RESOURCE_ALREADY_EXISTS":
            return False
        raise
    return True
