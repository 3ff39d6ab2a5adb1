"""Request messages of the experiment routes: proto field types (service.proto) and the handler's
``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, intlike, required, string

_ID = Message({"experiment_id": "string"}, {"experiment_id": [required, string]})

MESSAGES: dict[str, Message] = {
    "create_experiment": Message(
        {"name": "string", "artifact_location": "string", "tags": "[message]"},
        {"name": [required, string], "artifact_location": [string], "tags": [array]},
    ),
    "get_experiment": _ID,
    "get_experiment_by_name": Message({"experiment_name": "string"}, {"experiment_name": [required, string]}),
    "search_experiments": Message(
        {"max_results": "int64", "page_token": "string", "filter": "string", "order_by": "[string]", "view_type": "enum"},
        {"view_type": [intlike], "max_results": [intlike], "order_by": [array], "filter": [string], "page_token": [string]},
    ),
    "update_experiment": Message(
        {"experiment_id": "string", "new_name": "string"}, {"experiment_id": [required, string], "new_name": [string, required]}
    ),
    "delete_experiment": _ID,
    "restore_experiment": _ID,
    "set_experiment_tag": Message(
        {"experiment_id": "string", "key": "string", "value": "string"},
        {"experiment_id": [required, string], "key": [required, string], "value": [string]},
    ),
    "delete_experiment_tag": Message(
        {"experiment_id": "string", "key": "string"}, {"experiment_id": [required, string], "key": [required, string]}
    ),
    # Workspaces: MLflow validates the raw JSON against the handler's schema, then parses it (no proto types).
    "list_workspaces": Message({}),
    "create_workspace": Message(
        None, {"name": [required, string], "description": [string], "default_artifact_root": [string], "trace_archival_config": []}
    ),
    "get_workspace": Message({}),
    "update_workspace": Message(None, {"description": [string], "default_artifact_root": [string], "trace_archival_config": []}),
    "delete_workspace": Message({"mode": "string"}),
}
