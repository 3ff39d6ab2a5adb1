"""Experiment routes: parse like MLflow's handlers, call one domain function, answer MLflow's JSON."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.api import Request, build_app, lambda_entry
from serverless_mlflow.errors import invalid
from serverless_mlflow.pages import page_response
from serverless_mlflow.request import API_DOCS_HINT, array, intlike, required, string
from serverless_mlflow.validation import invalid_value

from . import logic

_ID = {"experiment_id": "string"}
_ID_SCHEMA = {"experiment_id": [required, string]}
# ViewType enum of service.proto; the default (unset) is ACTIVE_ONLY.
_VIEW_TYPES = {"ACTIVE_ONLY": 1, "DELETED_ONLY": 2, "ALL": 3}


def create_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "artifact_location": "string", "tags": "[message]"},
        {"name": [required, string], "artifact_location": [string], "tags": [array]},
    )
    experiment_id = logic.create_experiment(msg["name"], msg.get("artifact_location") or None, msg.get("tags", []))
    return {"experiment_id": experiment_id}


def get_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(_ID, _ID_SCHEMA)
    return {"experiment": logic.get_experiment(msg["experiment_id"])}


def get_experiment_by_name(req: Request) -> dict[str, Any]:
    msg = req.message({"experiment_name": "string"}, {"experiment_name": [required, string]})
    return {"experiment": logic.get_experiment_by_name(msg["experiment_name"])}


def search_experiments(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"max_results": "int64", "page_token": "string", "filter": "string", "order_by": "[string]", "view_type": "enum"},
        {"view_type": [intlike], "max_results": [intlike], "order_by": [array], "filter": [string], "page_token": [string]},
    )
    experiments, token = logic.search_experiments(
        _view_type(msg.get("view_type")),
        msg.get("max_results", 0),  # proto default 0: the store then answers "must be a positive integer"
        msg.get("filter") or None,
        msg.get("order_by") or None,
        msg.get("page_token") or None,
    )
    return page_response("experiments", experiments, token)


def _view_type(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, str):
        if value in _VIEW_TYPES:
            return _VIEW_TYPES[value]
        try:
            value = int(value)
        except ValueError:
            # Protobuf rejects the name, then the handler's _assert_intlike check answers.
            raise invalid(invalid_value("view_type", value, f" Hint: Value was of type '{type(value).__name__}'.") + API_DOCS_HINT) from None
    if value not in _VIEW_TYPES.values():
        raise invalid(f"Invalid value {value} for enum field 'view_type'.")
    return int(value)


def update_experiment(req: Request) -> dict[str, Any]:
    msg = req.message({"experiment_id": "string", "new_name": "string"}, {"experiment_id": [required, string], "new_name": [string, required]})
    logic.rename_experiment(msg["experiment_id"], msg["new_name"])
    return {}


def delete_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(_ID, _ID_SCHEMA)
    logic.delete_experiment(msg["experiment_id"])
    return {}


def restore_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(_ID, _ID_SCHEMA)
    logic.restore_experiment(msg["experiment_id"])
    return {}


def set_experiment_tag(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"experiment_id": "string", "key": "string", "value": "string"},
        {"experiment_id": [required, string], "key": [required, string], "value": [string]},
    )
    logic.set_experiment_tag(msg["experiment_id"], msg["key"], msg.get("value", ""))
    return {}


def delete_experiment_tag(req: Request) -> dict[str, Any]:
    msg = req.message({"experiment_id": "string", "key": "string"}, {"experiment_id": [required, string], "key": [required, string]})
    logic.delete_experiment_tag(msg["experiment_id"], msg["key"])
    return {}


app = build_app(
    "experiments",
    {
        "create_experiment": create_experiment,
        "get_experiment": get_experiment,
        "get_experiment_by_name": get_experiment_by_name,
        "search_experiments": search_experiments,
        "update_experiment": update_experiment,
        "delete_experiment": delete_experiment,
        "restore_experiment": restore_experiment,
        "set_experiment_tag": set_experiment_tag,
        "delete_experiment_tag": delete_experiment_tag,
    },
)
lambda_handler = lambda_entry(app)
