"""Runs feature: run lifecycle, run data (metrics, params, tags, batches), history, inputs/outputs, search."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.api import Request, build_app, lambda_entry

from . import data, history, inputs, lifecycle, search
from .parsing import message


def create_run(req: Request) -> dict[str, Any]:
    return lifecycle.create_run(message(req, "create_run"))


def update_run(req: Request) -> dict[str, Any]:
    return lifecycle.update_run(message(req, "update_run"))


def delete_run(req: Request) -> dict[str, Any]:
    return lifecycle.delete_run(message(req, "delete_run"))


def restore_run(req: Request) -> dict[str, Any]:
    return lifecycle.restore_run(message(req, "restore_run"))


def get_run(req: Request) -> dict[str, Any]:
    return lifecycle.get_run(message(req, "get_run"))


def search_runs(req: Request) -> dict[str, Any]:
    return search.search_runs(message(req, "search_runs"))


def log_metric(req: Request) -> dict[str, Any]:
    return data.log_metric(message(req, "log_metric"))


def log_param(req: Request) -> dict[str, Any]:
    return data.log_param(message(req, "log_param"))


def set_tag(req: Request) -> dict[str, Any]:
    return data.set_tag(message(req, "set_tag"))


def delete_tag(req: Request) -> dict[str, Any]:
    return data.delete_tag(message(req, "delete_tag"))


def log_batch(req: Request) -> dict[str, Any]:
    return data.log_batch(message(req, "log_batch"), req.json)


def log_inputs(req: Request) -> dict[str, Any]:
    return inputs.log_inputs(message(req, "log_inputs"))


def log_outputs(req: Request) -> dict[str, Any]:
    return inputs.log_outputs(message(req, "log_outputs"))


def log_model_json(req: Request) -> dict[str, Any]:
    return inputs.log_model(message(req, "log_model"))


def get_metric_history(req: Request) -> dict[str, Any]:
    return history.get_metric_history(message(req, "get_metric_history"))


def get_metric_history_bulk_interval(req: Request) -> dict[str, Any]:
    return history.get_metric_history_bulk_interval(message(req, "get_metric_history_bulk_interval"))


app = build_app(
    "runs",
    {
        "create_run": create_run,
        "update_run": update_run,
        "delete_run": delete_run,
        "restore_run": restore_run,
        "get_run": get_run,
        "search_runs": search_runs,
        "log_metric": log_metric,
        "log_param": log_param,
        "set_tag": set_tag,
        "delete_tag": delete_tag,
        "log_batch": log_batch,
        "log_inputs": log_inputs,
        "log_outputs": log_outputs,
        "log_model_json": log_model_json,
        "get_metric_history": get_metric_history,
        "get_metric_history_bulk_interval": get_metric_history_bulk_interval,
    },
)
lambda_handler = lambda_entry(app)
