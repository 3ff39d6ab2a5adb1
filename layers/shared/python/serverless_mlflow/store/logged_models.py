"""Logged model items (MLflow 3): reading a model with its tags, params and metrics.

Shared because runs (outputs, metrics with ``model_id``) and artifacts (a model's artifact location)
read logged models too. Layout (see ``schema.py``):

* ``LM#<model_id> / LM``: locator, model id -> experiment id (GetItem, strongly consistent); ``LM#<model_id> /
  M#...``: the model's metric points (written by the runs feature: they grow with use, so they stay out of the
  experiment partition). One Query ``begins_with M#`` reads them.
* ``EXP#<id> / L#<model_id>``: the model; ``L#<model_id>#T#<key>`` tags, ``#P#<key>`` params. One Query
  ``begins_with L#<model_id>`` reads them: model ids have a fixed length (``m-`` + 32 hex), so no id is a
  prefix of another. Layout 1 kept the metric points there too (``#M#...``): they are merged in until moved.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.core.errors import MlflowError, not_found
from serverless_mlflow.core.validation.json_values import float_json
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, SK
from serverless_mlflow.store import experiments

LOGGED_MODEL = ENTITY["logged_model"]
LOCATOR = ENTITY["logged_model_locator"]
TAG = ENTITY["logged_model_tag"]
PARAM = ENTITY["logged_model_param"]
METRIC = ENTITY["logged_model_metric"]

ACTIVE = "active"
DELETED = "deleted"
# LoggedModelStatus: int code stored (the SQL column is an INTEGER), proto enum name answered.
STATUS_NAMES = {0: "LOGGED_MODEL_STATUS_UNSPECIFIED", 1: "LOGGED_MODEL_PENDING", 2: "LOGGED_MODEL_READY", 3: "LOGGED_MODEL_UPLOAD_FAILED"}
STATUS_CODES = {name: code for code, name in STATUS_NAMES.items()}
MODEL_ID_LENGTH = 34  # "m-" + 32 hex
_METRIC_READ_WORKERS = 16
# The model versions registered from a logged model: a JSON list of {"name", "version"} (mlflow.utils.mlflow_tags).
MODEL_VERSIONS_TAG = "mlflow.modelVersions"


def model_not_found(model_id: str) -> MlflowError:
    return not_found(f"Logged model with ID '{model_id}' not found.")


def experiment_of(model_id: str) -> str | None:
    """The experiment holding a model, from its locator (None when the model does not exist)."""
    locator = table.get(LOCATOR.key(model_id=model_id))
    experiment_id = str(locator["experiment_id"]) if locator else None
    # A model of another workspace's experiment does not exist for this request.
    return experiment_id if experiment_id is not None and experiments.in_request_workspace(experiment_id) else None


def _float(value: Any) -> float:
    # The runs feature stores floats as text (NaN/inf survive); numbers may also come back as int.
    return float(value)


def assemble(items: list[dict[str, Any]], metric_items: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """Group one model's items (model, tags, params, layout-1 metrics) and its metric points into the search
    package's model dict. A point in both layouts (copied, not yet deleted by the migration) counts once."""
    model: dict[str, Any] | None = None
    tags: dict[str, str] = {}
    params: dict[str, str] = {}
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for item in [*items, *(metric_items or [])]:
        kind = item.get(ENTITY_TYPE)
        if kind == LOGGED_MODEL.name:
            model = item
        elif kind == TAG.name:
            tags[item["key"]] = item["value"]
        elif kind == PARAM.name:
            params[item["key"]] = item["value"]
        elif kind == METRIC.name:
            identity = (item["key"], int(item.get("step") or 0), int(item["timestamp"]), item.get("run_id"))
            points.setdefault(identity, item)
    if model is None:
        return None
    metrics = [
        {
            "key": item["key"],
            "value": _float(item["value"]),
            "timestamp": int(item["timestamp"]),
            "step": int(item.get("step") or 0),
            "run_id": item.get("run_id"),
            "model_id": item.get("model_id"),
            "dataset_name": item.get("dataset_name"),
            "dataset_digest": item.get("dataset_digest"),
        }
        # The model's key order (key, step, timestamp, run id), whichever layout a point came from.
        for identity, item in sorted(points.items(), key=lambda pair: _metric_order(*pair[0]))
    ]
    return {
        "model_id": model["model_id"],
        "experiment_id": str(model["experiment_id"]),
        "name": model.get("name"),
        "artifact_location": model.get("artifact_location"),
        "creation_timestamp": int(model["creation_timestamp"]),
        "last_updated_timestamp": int(model["last_updated_timestamp"]),
        "status": int(model.get("status", 0)),
        "lifecycle_stage": model.get("lifecycle_stage", ACTIVE),
        "model_type": model.get("model_type"),
        "source_run_id": model.get("source_run_id"),
        "status_message": model.get("status_message"),
        "tags": tags,
        "params": params,
        "metrics": metrics,
    }


def _metric_order(key: str, step: int, timestamp: int, run_id: str | None) -> str:
    return METRIC.sk.render({"key": key, "step": step, "timestamp": timestamp, "run_id": run_id or ""})


def model_metrics(model_id: str) -> list[dict[str, Any]]:
    """A model's metric points in its own partition (one strongly consistent Query)."""
    return table.query(**METRIC.query("of_model", model_id=model_id))


def read_model(experiment_id: str, model_id: str) -> dict[str, Any] | None:
    """The model with tags/params/metrics: one strongly consistent Query on its experiment partition, one on its own."""
    items, metric_items = parallel.parallel_map(
        lambda read: read(),
        [
            lambda: table.query(**LOGGED_MODEL.query("with_data", experiment_id=experiment_id, model_id=model_id)),
            lambda: model_metrics(model_id),
        ],
    )
    return assemble(items, metric_items)


def find_model(model_id: str) -> dict[str, Any] | None:
    """The model (deleted ones included), None when unknown: one Query of its own partition (locator and metric
    points), then one of its experiment partition (the model, tags, params)."""
    experiment_id: str | None = None
    points: list[dict[str, Any]] = []
    for item in table.query(**LOCATOR.query("with_metrics", model_id=model_id)):
        if item.get(ENTITY_TYPE) == LOCATOR.type_name:
            experiment_id = str(item["experiment_id"])
        else:
            points.append(item)
    if experiment_id is None or not experiments.in_request_workspace(experiment_id):
        return None
    return assemble(table.query(**LOGGED_MODEL.query("with_data", experiment_id=experiment_id, model_id=model_id)), points)


def model_versions_tag_op(model_id: str, name: str, version: int) -> dict[str, Any] | None:
    """The write that adds ``{"name", "version"}`` to a model's ``mlflow.modelVersions`` tag, for a transaction.

    MLflow's ``AbstractStore.set_model_versions_tags`` reads the tag, appends the version unless present and
    writes it back. Here the put is conditioned on the value read (or on the tag's absence), so two versions
    registered from one model at once cannot drop each other: the loser's transaction fails and is retried
    with a fresh read. None when the version is already listed (nothing to write).
    """
    experiment_id = experiment_of(model_id)
    if experiment_id is None:
        raise model_not_found(model_id)
    key = TAG.key(experiment_id=experiment_id, model_id=model_id, key=MODEL_VERSIONS_TAG)
    current = table.get(key)
    entries = json.loads(current["value"]) if current else []
    entry = {"name": name, "version": version}
    if entry in entries:
        return None
    value = json.dumps([*entries, entry])  # json.dumps defaults, as MLflow writes it
    item = TAG.item({"key": MODEL_VERSIONS_TAG, "value": value}, experiment_id=experiment_id, model_id=model_id, key=MODEL_VERSIONS_TAG)
    if current is None:
        return table.put_op(item, condition="attribute_not_exists(pk)")
    return table.put_op(item, condition="#value = :read", names={"#value": "value"}, values={":read": current["value"]})


def get_model_item(model_id: str) -> dict[str, Any]:
    """The logged model item alone (no tags, params or metrics): locator + one consistent GetItem.
    404 when unknown or deleted, as ``get_logged_model``; cheaper when only the model's own fields matter."""
    experiment_id = experiment_of(model_id) if model_id else None
    item = table.get(LOGGED_MODEL.key(experiment_id=experiment_id, model_id=model_id)) if experiment_id is not None else None
    if item is None or item.get("lifecycle_stage") == DELETED:
        raise model_not_found(model_id)
    return item


def get_logged_model_record(model_id: str) -> dict[str, Any]:
    """SqlAlchemyStore._get_logged_model_record: deleted models are found too; 404 when unknown."""
    model = find_model(model_id)
    if model is None:
        raise model_not_found(model_id)
    return model


def get_logged_model(model_id: str, allow_deleted: bool = False) -> dict[str, Any]:
    """SqlAlchemyStore.get_logged_model: a deleted model is 404 unless ``allow_deleted``."""
    model = get_logged_model_record(model_id)
    if model["lifecycle_stage"] == DELETED and not allow_deleted:
        raise model_not_found(model_id)
    return model


def list_models(experiment_id: str) -> list[dict[str, Any]]:
    """Every model of an experiment with tags/params/metrics: one strongly consistent Query (paged) of the
    experiment partition, and one of each model's partition for its metric points (in parallel)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in table.iter_query(**LOGGED_MODEL.query("with_data", experiment_id=experiment_id)):
        groups.setdefault(LOGGED_MODEL.parse(item[SK][: 2 + MODEL_ID_LENGTH])["model_id"], []).append(item)
    model_ids = list(groups)
    metrics = parallel.parallel_map(model_metrics, model_ids, workers=_METRIC_READ_WORKERS)
    models = [assemble(groups[model_id], points) for model_id, points in zip(model_ids, metrics, strict=True)]
    return [model for model in models if model is not None]


def to_api(model: dict[str, Any]) -> dict[str, Any]:
    """The LoggedModel message as MLflow's server writes it."""
    info: dict[str, Any] = {
        "model_id": model["model_id"],
        "experiment_id": model["experiment_id"],
        "name": model["name"],
        "creation_timestamp_ms": model["creation_timestamp"],
        "last_updated_timestamp_ms": model["last_updated_timestamp"],
        "artifact_uri": model["artifact_location"],
        "status": STATUS_NAMES.get(model["status"], STATUS_NAMES[0]),
    }
    for field in ("model_type", "source_run_id", "status_message"):
        if model.get(field) is not None:
            info[field] = model[field]
    if model["tags"]:
        info["tags"] = [{"key": k, "value": v} for k, v in sorted(model["tags"].items())]
    data: dict[str, Any] = {}
    if model["params"]:
        data["params"] = [{"key": k, "value": v} for k, v in sorted(model["params"].items())]
    if model["metrics"]:
        data["metrics"] = [_metric_json(m) for m in model["metrics"]]
    return {"info": info, "data": data}


def _metric_json(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": metric["key"],
        "value": float_json(metric["value"]),
        "timestamp": metric["timestamp"],
        "step": metric["step"],
    }
    for field in ("dataset_name", "dataset_digest", "model_id", "run_id"):
        if metric.get(field) is not None:
            out[field] = metric[field]
    return out
