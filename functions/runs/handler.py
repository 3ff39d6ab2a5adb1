"""Runs feature: run lifecycle, run data (metrics, params, tags, batches), history, inputs/outputs, search."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.http.api import Request, build_app, json_response, lambda_entry
from serverless_mlflow.request import json_text

from . import data, datasets, history, inputs, lifecycle, prompt_optimization, promptlab
from .messages import MESSAGES

# Searches and the UI's GraphQL need the search grammar (sqlparse): imported by those routes, not at cold start.
search = deferred("runs.search")
graphql_api = deferred("runs.graphql_api")
graphql_guard = deferred("serverless_mlflow.auth.graphql_guard")


def create_run(req: Request) -> dict[str, Any]:
    return lifecycle.create_run(req.message(MESSAGES["create_run"]))


def update_run(req: Request) -> dict[str, Any]:
    return lifecycle.update_run(req.message(MESSAGES["update_run"]))


def delete_run(req: Request) -> dict[str, Any]:
    return lifecycle.delete_run(req.message(MESSAGES["delete_run"]))


def restore_run(req: Request) -> dict[str, Any]:
    return lifecycle.restore_run(req.message(MESSAGES["restore_run"]))


def get_run(req: Request) -> dict[str, Any]:
    return lifecycle.get_run(req.message(MESSAGES["get_run"]))


def search_runs(req: Request) -> dict[str, Any]:
    return search.search_runs(req.message(MESSAGES["search_runs"]))


def log_metric(req: Request) -> dict[str, Any]:
    return data.log_metric(req.message(MESSAGES["log_metric"]))


def log_param(req: Request) -> dict[str, Any]:
    return data.log_param(req.message(MESSAGES["log_param"]))


def set_tag(req: Request) -> dict[str, Any]:
    return data.set_tag(req.message(MESSAGES["set_tag"]))


def delete_tag(req: Request) -> dict[str, Any]:
    return data.delete_tag(req.message(MESSAGES["delete_tag"]))


def log_batch(req: Request) -> dict[str, Any]:
    return data.log_batch(req.message(MESSAGES["log_batch"]), req.json)


def log_inputs(req: Request) -> dict[str, Any]:
    return inputs.log_inputs(req.message(MESSAGES["log_inputs"]))


def log_outputs(req: Request) -> dict[str, Any]:
    return inputs.log_outputs(req.message(MESSAGES["log_outputs"]))


def log_model_json(req: Request) -> dict[str, Any]:
    return inputs.log_model(req.message(MESSAGES["log_model_json"]))


def get_metric_history(req: Request) -> dict[str, Any]:
    return history.get_metric_history(req.message(MESSAGES["get_metric_history"]))


def get_metric_history_bulk_interval(req: Request) -> dict[str, Any]:
    return history.get_metric_history_bulk_interval(req.message(MESSAGES["get_metric_history_bulk_interval"]))


def get_metric_history_bulk(req: Request) -> dict[str, Any]:
    max_results = req.query.get("max_results", [None])[0]
    try:
        limit = int(max_results) if max_results is not None else None
    except ValueError:
        raise invalid(f"Invalid value for parameter 'max_results': {max_results!r} is not an integer.") from None
    return history.get_metric_history_bulk(req.query.get("run_id", []), req.query.get("metric_key", [None])[0], limit)


def search_datasets(req: Request) -> dict[str, Any]:
    ids = req.params(repeated=("experiment_ids",)).get("experiment_ids") or []
    return datasets.search_datasets(ids if isinstance(ids, list) else [ids])


def create_promptlab_run(req: Request) -> dict[str, Any]:
    return promptlab.create_promptlab_run(req.params())


def graphql(req: Request) -> Response:
    if req.method == "GET":
        body: dict[str, Any] = {key: values[0] for key, values in req.query.items()}
        try:
            body["variables"] = json_text.loads(body["variables"]) if body.get("variables") else None
        except ValueError:
            body["variables"] = None
    else:
        body = req.json
    return json_response(graphql_api.execute(body, graphql_guard.for_identity(req.identity)))


def _username(req: Request) -> str | None:
    return req.identity.username if req.identity is not None else None


def create_prompt_optimization_job(req: Request) -> dict[str, Any]:
    return prompt_optimization.create(req.message(MESSAGES["create_prompt_optimization_job"]), _username(req))


def get_prompt_optimization_job(req: Request) -> dict[str, Any]:
    return prompt_optimization.get(req.path_params["job_id"])


def search_prompt_optimization_jobs(req: Request) -> dict[str, Any]:
    return prompt_optimization.search(req.message(MESSAGES["search_prompt_optimization_jobs"])["experiment_id"])


def cancel_prompt_optimization_job(req: Request) -> dict[str, Any]:
    return prompt_optimization.cancel(req.path_params["job_id"])


def delete_prompt_optimization_job(req: Request) -> dict[str, Any]:
    return prompt_optimization.delete(req.path_params["job_id"])


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
        "get_metric_history_bulk": get_metric_history_bulk,
        "search_datasets": search_datasets,
        "graphql": graphql,
        "create_promptlab_run": create_promptlab_run,
        "create_prompt_optimization_job": create_prompt_optimization_job,
        "get_prompt_optimization_job": get_prompt_optimization_job,
        "search_prompt_optimization_jobs": search_prompt_optimization_jobs,
        "cancel_prompt_optimization_job": cancel_prompt_optimization_job,
        "delete_prompt_optimization_job": delete_prompt_optimization_job,
    },
)
lambda_handler = lambda_entry(app)
