"""Request messages of the logged model routes (MLflow 3): proto field types (service.proto) and the
handler's ``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, intlike, item_type_string, required, string

MESSAGES: dict[str, Message] = {
    "create_logged_model": Message(
        {
            "experiment_id": "string",
            "name": "string",
            "model_type": "string",
            "source_run_id": "string",
            "params": "[message]",
            "tags": "[message]",
        },
        {
            "experiment_id": [string, required],
            "name": [string],
            "model_type": [string],
            "source_run_id": [string],
            "params": [array],
            "tags": [array],
        },
    ),
    "finalize_logged_model": Message(
        {"model_id": "string", "status": "enum"}, {"model_id": [string, required], "status": [intlike, required]}
    ),
    "set_logged_model_tags": Message({"model_id": "string", "tags": "[message]"}, {"tags": [array]}),
    "log_logged_model_params": Message({"model_id": "string", "params": "[message]"}, {"model_id": [string, required], "params": [array]}),
    "search_logged_models": Message(
        {
            "experiment_ids": "[string]",
            "filter": "string",
            "datasets": "[message]",
            "max_results": "int32",
            "order_by": "[message]",
            "page_token": "string",
        },
        {
            "experiment_ids": [array, item_type_string, required],
            "filter": [string],
            "datasets": [array],
            "max_results": [intlike],
            "order_by": [array],
            "page_token": [string],
        },
    ),
    # Path parameters only (and ?allow_deleted), read by the handlers (declared for the request fuzz suite).
    "get_logged_model": Message({"allow_deleted": "bool"}),
    "delete_logged_model": Message({}),
    "delete_logged_model_tag": Message({}),
}
