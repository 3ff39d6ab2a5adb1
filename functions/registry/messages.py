"""Request messages of the model registry routes: proto field types (model_registry.proto) and the
handler's ``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, boolean, intlike, item_type_string, less_than_or_equal, required, string

_NAME = {"name": "string"}
_NAME_SCHEMA = {"name": [string, required]}
_VERSION = {"name": "string", "version": "string"}
_VERSION_SCHEMA = {"name": [string, required], "version": [string, required]}
_SEARCH = {"filter": "string", "max_results": "int64", "order_by": "[string]", "page_token": "string"}

MESSAGES: dict[str, Message] = {
    "create_registered_model": Message(
        {"name": "string", "tags": "[message]", "description": "string", "deployment_job_id": "string"},
        {"name": [string, required], "tags": [array], "description": [string]},
    ),
    "get_registered_model": Message(_NAME, _NAME_SCHEMA),
    "update_registered_model": Message(
        {"name": "string", "description": "string", "deployment_job_id": "string"}, {"name": [string, required], "description": [string]}
    ),
    "rename_registered_model": Message(
        {"name": "string", "new_name": "string"}, {"name": [string, required], "new_name": [string, required]}
    ),
    "delete_registered_model": Message(_NAME, _NAME_SCHEMA),
    "search_registered_models": Message(
        _SEARCH,
        {
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(1000)],
            "order_by": [array, item_type_string],
            "page_token": [string],
        },
    ),
    "get_latest_versions": Message(
        {"name": "string", "stages": "[string]"}, {"name": [string, required], "stages": [array, item_type_string]}
    ),
    "set_registered_model_tag": Message(
        {"name": "string", "key": "string", "value": "string"}, {"name": [string, required], "key": [string, required], "value": [string]}
    ),
    "delete_registered_model_tag": Message({"name": "string", "key": "string"}, {"name": [string, required], "key": [string, required]}),
    "set_registered_model_alias": Message(
        # secondary_version / secondary_version_weight: the traffic-split extension (docs/registry.md); MLflow's
        # own server ignores unknown fields, and stock clients never send them.
        {"name": "string", "alias": "string", "version": "string", "secondary_version": "string", "secondary_version_weight": "int32"},
        {"name": [string, required], "alias": [string, required], "version": [string, required]},
    ),
    "delete_registered_model_alias": Message(
        {"name": "string", "alias": "string"}, {"name": [string, required], "alias": [string, required]}
    ),
    "get_model_version_by_alias": Message({"name": "string", "alias": "string"}, {"name": [string, required], "alias": [string, required]}),
    "create_model_version": Message(
        {
            "name": "string",
            "source": "string",
            "run_id": "string",
            "tags": "[message]",
            "run_link": "string",
            "description": "string",
            "model_id": "string",
        },
        {
            "name": [string, required],
            "source": [string, required],
            "run_id": [string],
            "tags": [array],
            "run_link": [string],
            "description": [string],
            "model_id": [string],
        },
    ),
    "get_model_version": Message(_VERSION, _VERSION_SCHEMA),
    "update_model_version": Message(
        {"name": "string", "version": "string", "description": "string"},
        {"name": [string, required], "version": [string, required], "description": [string]},
    ),
    "transition_model_version_stage": Message(
        {"name": "string", "version": "string", "stage": "string", "archive_existing_versions": "bool"},
        {"name": [string, required], "version": [string, required], "stage": [string, required], "archive_existing_versions": [boolean]},
    ),
    "delete_model_version": Message(_VERSION, _VERSION_SCHEMA),
    # MLflow parses this request without a schema: missing fields fail in the store's validation.
    "get_model_version_download_uri": Message(_VERSION),
    "search_model_versions": Message(
        _SEARCH,
        {
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(200_000)],
            "order_by": [array, item_type_string],
            "page_token": [string],
        },
    ),
    "set_model_version_tag": Message(
        {"name": "string", "version": "string", "key": "string", "value": "string"},
        {"name": [string, required], "version": [string, required], "key": [string, required], "value": [string]},
    ),
    "delete_model_version_tag": Message(
        {"name": "string", "version": "string", "key": "string"},
        {"name": [string, required], "version": [string, required], "key": [string, required]},
    ),
}
