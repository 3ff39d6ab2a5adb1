"""Logged models: create, finalize, tags, params, delete, search (SqlAlchemyStore semantics).

Items live in the model's experiment partition (see ``store/logged_models.py``). Create writes the
model, its locator, tags and params in one transaction (extra items beyond the 100-operation limit go
first: they are invisible until the model item exists). Search reads each experiment's ``L#`` items
with a strongly consistent Query, so a model is searchable right after it is created.
"""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.core.validation import parse_experiment_ids, validate_logged_model_name
from serverless_mlflow.request import key_values_of
from serverless_mlflow.storage import keys, table
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import logged_models as store
from serverless_mlflow.store.names import random_name

# The search grammar (sqlparse) is imported by the searches that parse a filter, not at cold start.
search = deferred("serverless_mlflow.search")

MODELS_FOLDER_NAME = "models"
ARTIFACTS_FOLDER_NAME = "artifacts"
PENDING = 1


def _unique_violation(table_name: str, key_column: str) -> MlflowError:
    # SqlAlchemyStore lets the primary-key IntegrityError surface as BAD_REQUEST.
    return MlflowError(f"UNIQUE constraint failed: {table_name}.model_id, {table_name}.{key_column}", "BAD_REQUEST")


def _duplicate_params() -> MlflowError:
    return _unique_violation("logged_model_params", "param_key")


def _pairs(entries: list[Any], list_name: str) -> list[tuple[str, str]]:
    # Proto defaults: an entry without key/value has "" there; a value of another type is MLflow's type error.
    return [(pair["key"], pair["value"]) for pair in key_values_of(entries, list_name)]


def _has_duplicates(pairs: list[tuple[str, str]]) -> bool:
    return len({key for key, _ in pairs}) != len(pairs)


def _append_path(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *parts])


def create_logged_model(
    experiment_id: str,
    name: str | None,
    model_type: str | None,
    source_run_id: str | None,
    params: list[dict[str, Any]],
    tags: list[dict[str, Any]],
) -> dict[str, Any]:
    validate_logged_model_name(name)
    experiment = experiment_store.get_experiment_meta(experiment_id)
    experiment_store.check_experiment_active(experiment)
    param_pairs, tag_pairs = _pairs(params, "params"), _pairs(tags, "tags")
    if _has_duplicates(param_pairs):
        raise _duplicate_params()
    if _has_duplicates(tag_pairs):
        raise _unique_violation("logged_model_tags", "tag_key")

    normalized = str(experiment["experiment_id"])
    model_id = f"m-{uuid.uuid4().hex}"
    now = clock.now_millis()
    attributes = {
        "model_id": model_id,
        "experiment_id": normalized,
        "name": name or random_name(),
        "artifact_location": _append_path(experiment["artifact_location"], MODELS_FOLDER_NAME, model_id, ARTIFACTS_FOLDER_NAME),
        "creation_timestamp": now,
        "last_updated_timestamp": now,
        "status": PENDING,
        "lifecycle_stage": store.ACTIVE,
        "model_type": model_type,
        "source_run_id": source_run_id,
    }
    model_item = store.LOGGED_MODEL.item(attributes, **attributes)
    children = [store.PARAM.item({"key": k, "value": v}, experiment_id=normalized, model_id=model_id, key=k) for k, v in param_pairs]
    children += [store.TAG.item({"key": k, "value": v}, experiment_id=normalized, model_id=model_id, key=k) for k, v in tag_pairs]
    locator = store.LOCATOR.item({"experiment_id": normalized}, model_id=model_id)
    room = table.TRANSACTION_LIMIT - 2
    if len(children) > room:
        table.batch_write(puts=children[room:])
    table.transact(
        [
            table.put_op(model_item, condition="attribute_not_exists(pk)"),
            table.put_op(locator, condition="attribute_not_exists(pk)"),
            *[table.put_op(item) for item in children[:room]],
        ]
    )
    return store.to_api(store.assemble([model_item, *children]) or {})


def get_logged_model(model_id: str, allow_deleted: bool) -> dict[str, Any]:
    return store.to_api(store.get_logged_model(model_id, allow_deleted=allow_deleted))


def _model_key(model: dict[str, Any]) -> dict[str, str]:
    return store.LOGGED_MODEL.key(experiment_id=model["experiment_id"], model_id=model["model_id"])


def _update_model(model: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """SET the changed attributes (and last_updated_timestamp) on the model item; returns the new model."""
    changes["last_updated_timestamp"] = clock.now_millis()
    names = {f"#a{i}": name for i, name in enumerate(changes)}
    values = {f":v{i}": value for i, value in enumerate(changes.values())}
    expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(changes)))
    try:
        table.update(_model_key(model), expression, names=names, values=values, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise store.model_not_found(model["model_id"]) from None
    return {**model, **changes}


def finalize_logged_model(model_id: str, status: int) -> dict[str, Any]:
    if status not in store.STATUS_NAMES:
        raise invalid(f"Unknown model status: {status}")
    model = store.get_logged_model_record(model_id)
    return store.to_api(_update_model(model, status=status))


def delete_logged_model(model_id: str) -> None:
    model = store.get_logged_model_record(model_id)
    _update_model(model, lifecycle_stage=store.DELETED)


def set_logged_model_tags(model_id: str, tags: list[dict[str, Any]]) -> None:
    model = store.get_logged_model_record(model_id)
    deduped = dict(_pairs(tags, "tags"))  # a repeated key keeps its last value, as MLflow's upsert does
    items = [
        store.TAG.item({"key": k, "value": v}, experiment_id=model["experiment_id"], model_id=model_id, key=k) for k, v in deduped.items()
    ]
    table.batch_write(puts=items)


def delete_logged_model_tag(model_id: str, key: str) -> None:
    model = store.get_logged_model_record(model_id)
    try:
        table.delete(store.TAG.key(experiment_id=model["experiment_id"], model_id=model_id, key=key), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise MlflowError(f"No tag with key {key!r} found for model with ID {model_id!r}.", "RESOURCE_DOES_NOT_EXIST") from None


def log_logged_model_params(model_id: str, params: list[dict[str, Any]]) -> None:
    """Params are immutable: a key logged before (any value) or twice in the request is BAD_REQUEST."""
    model = store.get_logged_model_record(model_id)
    pairs = _pairs(params, "params")
    if _has_duplicates(pairs):
        raise _duplicate_params()
    items = [store.PARAM.item({"key": k, "value": v}, experiment_id=model["experiment_id"], model_id=model_id, key=k) for k, v in pairs]
    # One transaction per 100 params: all-or-nothing for any realistic request (the client sends a
    # model's params in one call); each chunk is conditioned on its keys being new.
    for start in range(0, len(items), table.TRANSACTION_LIMIT):
        chunk = items[start : start + table.TRANSACTION_LIMIT]
        try:
            table.transact([table.put_op(item, condition="attribute_not_exists(pk)") for item in chunk])
        except table.ConditionFailed:
            raise _duplicate_params() from None


def search_logged_models(
    experiment_ids: list[str],
    filter_string: str | None,
    datasets: list[dict[str, Any]] | None,
    max_results: int | None,
    order_by: list[dict[str, Any]] | None,
    page_token: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    query = search.prepare_logged_model_search(filter_string, datasets, max_results, order_by, page_token)
    candidates: list[dict[str, Any]] = []
    for experiment_id in dict.fromkeys(str(i) for i in parse_experiment_ids(experiment_ids)):
        # Another workspace's experiments hold no models for this request.
        if keys.INT64_MIN <= int(experiment_id) <= keys.INT64_MAX and experiment_store.in_request_workspace(experiment_id):
            candidates += [m for m in store.list_models(experiment_id) if m["lifecycle_stage"] != store.DELETED]
    found, token = query.run(candidates)
    return [store.to_api(model) for model in found], token
