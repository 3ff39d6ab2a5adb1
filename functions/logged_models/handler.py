"""Logged model routes (MLflow 3): parse like MLflow's handlers, call one domain function."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.request import enum_number
from serverless_mlflow.request.pages import page_response
from serverless_mlflow.store.logged_models import STATUS_CODES

from . import logic
from .messages import MESSAGES


def _model_id(req: Request) -> str:
    return req.path_params.get("model_id", "")


def create_logged_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_logged_model"])
    model = logic.create_logged_model(
        msg["experiment_id"],
        msg.get("name") or None,
        # Proto defaults: MLflow's handler passes "" for an unset model_type / source_run_id.
        msg.get("model_type", ""),
        msg.get("source_run_id", ""),
        msg.get("params", []),
        msg.get("tags", []),
    )
    return {"model": model}


def get_logged_model(req: Request) -> dict[str, Any]:
    allow_deleted = (req.query.get("allow_deleted") or ["false"])[0].lower() == "true"
    return {"model": logic.get_logged_model(_model_id(req), allow_deleted)}


def finalize_logged_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["finalize_logged_model"])
    return {"model": logic.finalize_logged_model(msg["model_id"], enum_number("status", msg["status"], STATUS_CODES))}


def delete_logged_model(req: Request) -> dict[str, Any]:
    logic.delete_logged_model(_model_id(req))
    return {}


def set_logged_model_tags(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_logged_model_tags"])
    logic.set_logged_model_tags(_model_id(req), msg.get("tags", []))
    return {}


def delete_logged_model_tag(req: Request) -> dict[str, Any]:
    logic.delete_logged_model_tag(_model_id(req), req.path_params.get("tag_key", ""))
    return {}


def log_logged_model_params(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["log_logged_model_params"])
    logic.log_logged_model_params(_model_id(req), msg.get("params", []))
    return {}


def search_logged_models(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_logged_models"])
    datasets = [
        {"dataset_name": d.get("dataset_name", ""), "dataset_digest": d.get("dataset_digest") or None} for d in msg.get("datasets", [])
    ] or None
    order_by = [
        {
            "field_name": o.get("field_name", ""),
            "ascending": o.get("ascending", True),
            "dataset_name": o.get("dataset_name") or None,
            "dataset_digest": o.get("dataset_digest") or None,
        }
        for o in msg.get("order_by", [])
    ] or None
    models, token = logic.search_logged_models(
        msg["experiment_ids"], msg.get("filter") or None, datasets, msg.get("max_results") or None, order_by, msg.get("page_token") or None
    )
    return page_response("models", models, token)


app = build_app(
    "logged_models",
    {
        "create_logged_model": create_logged_model,
        "get_logged_model": get_logged_model,
        "finalize_logged_model": finalize_logged_model,
        "delete_logged_model": delete_logged_model,
        "set_logged_model_tags": set_logged_model_tags,
        "delete_logged_model_tag": delete_logged_model_tag,
        "log_logged_model_params": log_logged_model_params,
        "search_logged_models": search_logged_models,
    },
)
lambda_handler = lambda_entry(app)
