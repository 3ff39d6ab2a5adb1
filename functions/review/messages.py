"""Request messages of the label schema, review queue and issue routes: proto field kinds (label_schemas.proto,
review_queues.proto, issues.proto) and the handlers' ``_get_request_message(..., schema=...)`` checks."""

from __future__ import annotations

from serverless_mlflow.request import Message, between, intlike, required, string

from . import detection

_MAX_RESULTS = between(1, 50000, "max_results must be between 1 and 50000.")
_SCHEMA_ID = Message({"schema_id": "string"}, {"schema_id": [required, string]})
_QUEUE_ID = Message({"queue_id": "string"}, {"queue_id": [required, string]})

MESSAGES: dict[str, Message] = {
    # --- label schemas -------------------------------------------------------------------------------
    "create_label_schema": Message(
        {
            "experiment_id": "string",
            "name": "string",
            "type": "enum",
            "input": "message",
            "instruction": "string",
            "enable_comment": "bool",
        },
        {"experiment_id": [required, string], "name": [required, string]},
    ),
    "get_label_schema": _SCHEMA_ID,
    "get_label_schema_by_name": Message(
        {"experiment_id": "string", "name": "string"}, {"experiment_id": [required, string], "name": [required, string]}
    ),
    "list_label_schemas": Message(
        {"experiment_id": "string", "max_results": "int32", "page_token": "string"},
        {"experiment_id": [required, string], "max_results": [intlike, _MAX_RESULTS]},
    ),
    "update_label_schema": Message(
        {"schema_id": "string", "name": "string", "instruction": "string", "enable_comment": "bool", "input": "message"},
        {"schema_id": [required, string]},
    ),
    "delete_label_schema": _SCHEMA_ID,
    # --- review queues -------------------------------------------------------------------------------
    "create_review_queue": Message(
        {
            "experiment_id": "string",
            "name": "string",
            "queue_type": "enum",
            "created_by": "string",
            "users": "[string]",
            "schema_ids": "[string]",
        },
        {"experiment_id": [required, string], "name": [required, string]},
    ),
    "get_or_create_user_queue": Message(
        {"experiment_id": "string", "user": "string", "created_by": "string"},
        {"experiment_id": [required, string], "user": [required, string]},
    ),
    "get_review_queue": _QUEUE_ID,
    "get_review_queue_by_name": Message(
        {"experiment_id": "string", "name": "string"}, {"experiment_id": [required, string], "name": [required, string]}
    ),
    "list_review_queues": Message(
        {"experiment_id": "string", "user": "string", "max_results": "int32", "page_token": "string", "item_id": "string"},
        {"experiment_id": [required, string], "max_results": [intlike, _MAX_RESULTS]},
    ),
    "update_review_queue": Message(
        {
            "queue_id": "string",
            "update_users": "bool",
            "users": "[string]",
            "update_schema_ids": "bool",
            "schema_ids": "[string]",
            "name": "string",
            "new_owner": "string",
        },
        {"queue_id": [required, string]},
    ),
    "delete_review_queue": _QUEUE_ID,
    "add_items_to_review_queue": Message(
        {"queue_id": "string", "item_type": "enum", "item_ids": "[string]"}, {"queue_id": [required, string]}
    ),
    "remove_items_from_review_queue": Message({"queue_id": "string", "item_ids": "[string]"}, {"queue_id": [required, string]}),
    "list_review_queue_items": Message(
        {"queue_id": "string", "status": "enum", "max_results": "int32", "page_token": "string"},
        {"queue_id": [required, string], "max_results": [intlike, _MAX_RESULTS]},
    ),
    "set_review_queue_item_status": Message(
        {"queue_id": "string", "item_id": "string", "status": "enum", "completed_by": "string"},
        {"queue_id": [required, string], "item_id": [required, string]},
    ),
    # --- issues --------------------------------------------------------------------------------------
    "create_issue": Message(
        {
            "experiment_id": "string",
            "name": "string",
            "description": "string",
            "status": "string",
            "severity": "string",
            "root_causes": "[string]",
            "source_run_id": "string",
            "created_by": "string",
            "categories": "[string]",
        },
        {"name": [required, string], "description": [required, string], "experiment_id": [required, string]},
    ),
    # The issue id travels in the path (GetIssue's body carries nothing the handler reads).
    "get_issue": Message({"issue_id": "string"}),
    "update_issue": Message(
        # MLflow's schema requires issue_id in the body as well as in the path (its client sends both).
        {"issue_id": "string", "name": "string", "description": "string", "status": "string", "severity": "string"},
        {"issue_id": [required]},
    ),
    "search_issues": Message(
        {
            "experiment_id": "string",
            "filter_string": "string",
            "max_results": "int32",
            "page_token": "string",
            "include_trace_count": "bool",
        },
        None,
    ),
    # MLflow 3.18's _sync_issue_detection_schedule_state_handler: raw JSON, no proto message.
    "sync_issue_detection_schedule_state": Message(None, {"experiment_id": [required, string]}),
    # MLflow 3.18's _invoke_issue_detection_handler: raw JSON (detection.MESSAGE).
    "invoke_issue_detection": detection.MESSAGE,
}
