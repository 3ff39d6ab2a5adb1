"""MLflow's jobs API (``/ajax-api/3.0/jobs/*``, FastAPI in MLflow) with its Flask twins (``/ajax-api/3.0/mlflow/jobs/*``),
the demo data routes (``demo/generate``, ``demo/delete``) and the UI's invoke routes (``scorer/invoke``,
``genai/evaluate/invoke``): parse as MLflow's handlers do, call one function, answer MLflow's JSON. Jobs run in the
job worker, fed by an SQS queue; a request never runs one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.http.api import Request, build_app, json_response, lambda_entry
from serverless_mlflow.store import jobs as store

from . import demo, evaluate_invoke, invoke, logic
from .messages import MESSAGES
from .payloads import SEARCH_FIELDS, SUBMIT_FIELDS, validated


def fastapi_errors(operation: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """MLflow's job routes turn an MlflowException into FastAPI's ``{"detail": message}`` with its status."""

    def answer(req: Request) -> Any:
        try:
            return operation(req)
        except MlflowError as error:
            return json_response({"detail": error.message}, error.http_status)

    answer.__name__ = operation.__name__
    return answer


def _caller(req: Request) -> str | None:
    """The signed-in user (basic auth), who owns the job and whose rights its worker has."""
    return req.identity.username if req.identity is not None else None


@fastapi_errors
def submit_job(req: Request) -> Any:
    payload = validated(req, SUBMIT_FIELDS)
    if not isinstance(payload, dict):
        return payload
    return store.job_json(logic.submit(payload["job_name"], payload["params"], payload.get("timeout"), _caller(req)))


@fastapi_errors
def get_job(req: Request) -> Any:
    return store.job_json(store.get(req.path_params["job_id"]))


@fastapi_errors
def cancel_job(req: Request) -> Any:
    return store.job_json(store.cancel(req.path_params["job_id"]))


@fastapi_errors
def search_jobs(req: Request) -> Any:
    payload = validated(req, SEARCH_FIELDS)
    if not isinstance(payload, dict):
        return payload
    found = store.search(payload.get("job_name"), payload.get("statuses"), payload.get("params"))
    return {"jobs": [store.job_json(item) for item in found]}


def _flask_job_json(item: dict[str, Any]) -> dict[str, Any]:
    """MLflow's Flask job routes (``_get_job``, ``_cancel_job``): a few of the job's fields, progress without its
    unset keys (``JobProgress.to_dict``); errors in MLflow's usual JSON, not FastAPI's."""
    job = store.job_json(item)
    progress = job["progress"]
    return {
        "status": job["status"],
        "result": job["result"],
        "error_message": job["error_message"],
        "status_details": job["status_details"],
        "status_message": job["status_message"],
        "progress": {key: value for key, value in progress.items() if value is not None} if progress is not None else None,
        "progress_updated_at": job["progress_updated_at"],
    }


def get_job_flask(req: Request) -> dict[str, Any]:
    return _flask_job_json(store.get(req.path_params["job_id"]))


def cancel_job_flask(req: Request) -> dict[str, Any]:
    return _flask_job_json(store.cancel(req.path_params["job_id"]))


def invoke_scorer(req: Request) -> dict[str, Any]:
    return invoke.invoke_scorer(req.params(), _caller(req))


def invoke_genai_evaluate(req: Request) -> dict[str, Any]:
    return evaluate_invoke.invoke_genai_evaluate(req.message(MESSAGES["invoke_genai_evaluate"]), _caller(req))


def generate_demo(req: Request) -> dict[str, Any]:
    features = req.json.get("features")
    if features is not None and not (isinstance(features, list) and all(isinstance(name, str) for name in features)):
        # MLflow's handler fails on a non-list (500) or matches a string's substrings; a list of names is meant.
        raise invalid("'features' must be a list of demo feature names.")
    return demo.generate(features, _caller(req))


def delete_demo(req: Request) -> dict[str, Any]:
    return demo.delete(_caller(req))


app = build_app(
    "jobs",
    {
        "submit_job": submit_job,
        "get_job": get_job,
        "cancel_job": cancel_job,
        "search_jobs": search_jobs,
        "generate_demo": generate_demo,
        "delete_demo": delete_demo,
        "get_job_flask": get_job_flask,
        "cancel_job_flask": cancel_job_flask,
        "invoke_scorer": invoke_scorer,
        "invoke_genai_evaluate": invoke_genai_evaluate,
    },
)
lambda_handler = lambda_entry(app)
