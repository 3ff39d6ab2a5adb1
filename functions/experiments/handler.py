"""Experiment routes: parse like MLflow's handlers, call one domain function, answer MLflow's JSON."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.request import view_type
from serverless_mlflow.request.pages import page_response

from . import logic
from .messages import MESSAGES
from .workspaces import OPERATIONS as WORKSPACE_OPERATIONS


def create_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_experiment"])
    experiment_id = logic.create_experiment(msg["name"], msg.get("artifact_location") or None, msg.get("tags", []))
    return {"experiment_id": experiment_id}


def get_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_experiment"])
    return {"experiment": logic.get_experiment(msg["experiment_id"])}


def get_experiment_by_name(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_experiment_by_name"])
    return {"experiment": logic.get_experiment_by_name(msg["experiment_name"])}


def search_experiments(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_experiments"])
    experiments, token = logic.search_experiments(
        view_type(msg.get("view_type")),
        msg.get("max_results", 0),  # proto default 0: the store then answers "must be a positive integer"
        msg.get("filter") or None,
        msg.get("order_by") or None,
        msg.get("page_token") or None,
    )
    return page_response("experiments", experiments, token)


def update_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["update_experiment"])
    logic.rename_experiment(msg["experiment_id"], msg["new_name"])
    return {}


def delete_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_experiment"])
    logic.delete_experiment(msg["experiment_id"])
    return {}


def restore_experiment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["restore_experiment"])
    logic.restore_experiment(msg["experiment_id"])
    return {}


def set_experiment_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_experiment_tag"])
    user = req.identity.username if req.identity is not None else None
    logic.set_experiment_tag(msg["experiment_id"], msg["key"], msg.get("value", ""), user)
    return {}


def delete_experiment_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_experiment_tag"])
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
        **WORKSPACE_OPERATIONS,
    },
)
lambda_handler = lambda_entry(app)
