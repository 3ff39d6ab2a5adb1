"""Request messages of the run routes: proto field types (service.proto) and the handler's
``_get_request_message(..., schema=...)`` checks, one entry per operation.

Every run message reads ``run_id`` falling back to ``run_uuid`` and refuses int32/int64 values out
of their type's range, as MLflow's server does. Nested messages (metrics, params, tags, datasets) are
read by the operations with ``serverless_mlflow.request.nested``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from serverless_mlflow.request import (
    Check,
    Message,
    array,
    between,
    each_has,
    floatlike,
    intlike,
    item_type_string,
    length_at_most,
    less_than_or_equal,
    required,
    string,
)

MAX_RUNS_GET_METRIC_HISTORY_BULK = 100
MAX_RESULTS_PER_RUN = 2500


def _run(fields: Mapping[str, str], checks: Mapping[str, Sequence[Check]] | None = None) -> Message:
    return Message(fields, checks, run_id_alias=True)


MESSAGES: dict[str, Message] = {
    "create_run": _run(
        {"experiment_id": "string", "user_id": "string", "run_name": "string", "start_time": "int64", "tags": "[message]"},
        {"experiment_id": [string], "start_time": [intlike], "run_name": [string]},
    ),
    "update_run": _run(
        {"run_id": "string", "run_uuid": "string", "status": "enum", "end_time": "int64", "run_name": "string"},
        {"run_id": [required, string], "end_time": [intlike], "status": [string], "run_name": [string]},
    ),
    "delete_run": _run({"run_id": "string"}, {"run_id": [required, string]}),
    "restore_run": _run({"run_id": "string"}, {"run_id": [required, string]}),
    "get_run": _run({"run_id": "string", "run_uuid": "string"}, {"run_id": [required, string]}),
    "log_metric": _run(
        {
            "run_id": "string",
            "run_uuid": "string",
            "key": "string",
            "value": "double",
            "timestamp": "int64",
            "step": "int64",
            "model_id": "string",
            "dataset_name": "string",
            "dataset_digest": "string",
        },
        {
            "run_id": [required, string],
            "key": [required, string],
            "value": [required, floatlike],
            "timestamp": [intlike, required],
            "step": [intlike],
            "model_id": [string],
            "dataset_name": [string],
            "dataset_digest": [string],
        },
    ),
    "log_param": _run(
        {"run_id": "string", "run_uuid": "string", "key": "string", "value": "string"},
        {"run_id": [required, string], "key": [required, string], "value": [string]},
    ),
    "set_tag": _run(
        {"run_id": "string", "run_uuid": "string", "key": "string", "value": "string"},
        {"run_id": [required, string], "key": [required, string], "value": [string]},
    ),
    "delete_tag": _run({"run_id": "string", "key": "string"}, {"run_id": [required, string], "key": [required, string]}),
    "log_batch": _run(
        {"run_id": "string", "metrics": "[message]", "params": "[message]", "tags": "[message]"},
        {
            "run_id": [string, required],
            "metrics": [array, each_has(("key", "value", "timestamp"), "metrics")],
            "params": [array, each_has(("key",), "params")],
            "tags": [array, each_has(("key",), "tags")],
        },
    ),
    # The prompt engineering UI's run: MLflow's handler reads the raw JSON (request.json), checked in promptlab.py.
    "create_promptlab_run": Message(
        {
            "experiment_id": "string",
            "run_name": "string",
            "tags": "[message]",
            "prompt_template": "string",
            "prompt_parameters": "[message]",
            "model_route": "string",
            "model_parameters": "[message]",
            "model_input": "string",
            "model_output": "string",
            "model_output_parameters": "[message]",
            "mlflow_version": "string",
            "user_id": "string",
            "start_time": "int64",
        }
    ),
    "log_model_json": _run({"run_id": "string", "model_json": "string"}, {"run_id": [string, required], "model_json": [string, required]}),
    "log_inputs": _run(
        {"run_id": "string", "datasets": "[message]", "models": "[message]"},
        {"run_id": [required, string], "datasets": [array], "models": [array]},
    ),
    "log_outputs": _run({"run_id": "string", "models": "[message]"}, {"run_id": [required, string], "models": [required, array]}),
    "search_runs": _run(
        {
            "experiment_ids": "[string]",
            "filter": "string",
            "run_view_type": "enum",
            "max_results": "int32",
            "order_by": "[string]",
            "page_token": "string",
        },
        {
            "experiment_ids": [array],
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(50000)],
            "order_by": [array, item_type_string],
        },
    ),
    "get_metric_history": _run(
        {"run_id": "string", "run_uuid": "string", "metric_key": "string", "page_token": "string", "max_results": "int32"},
        {"run_id": [string, required], "metric_key": [string, required], "page_token": [string]},
    ),
    "get_metric_history_bulk_interval": _run(
        {"run_ids": "[string]", "metric_key": "string", "start_step": "int32", "end_step": "int32", "max_results": "int32"},
        {
            "run_ids": [
                required,
                array,
                item_type_string,
                length_at_most(
                    MAX_RUNS_GET_METRIC_HISTORY_BULK,
                    lambda n: (
                        f"GetMetricHistoryBulkInterval request must specify at most {MAX_RUNS_GET_METRIC_HISTORY_BULK} run_ids. "
                        f"Received {n} run_ids."
                    ),
                ),
            ],
            "metric_key": [required, string],
            "start_step": [intlike],
            "end_step": [intlike],
            "max_results": [intlike, between(1, MAX_RESULTS_PER_RUN, f"max_results must be between 1 and {MAX_RESULTS_PER_RUN}.")],
        },
    ),
    # Read from the raw query / JSON by their handlers, as MLflow's do (declared for the request fuzz suite).
    "get_metric_history_bulk": Message({"run_id": "[string]", "metric_key": "string", "max_results": "int32"}),
    "search_datasets": Message({"experiment_ids": "[string]"}),
    "graphql": Message({"query": "string", "operationName": "string", "variables": "message"}),
    # prompt_optimization.proto (MLflow 3.18): job ids come from the path.
    "create_prompt_optimization_job": Message(
        {"experiment_id": "string", "source_prompt_uri": "string", "config": "message", "tags": "[message]"},
        {"experiment_id": [string], "source_prompt_uri": [string, required], "config": [required], "tags": [array]},
    ),
    "search_prompt_optimization_jobs": Message({"experiment_id": "string"}, {"experiment_id": [required, string]}),
    **{f"{op}_prompt_optimization_job": Message({"job_id": "string"}) for op in ("get", "cancel", "delete")},
}
