"""Model registry routes: parse like MLflow's handlers, call one domain function, answer MLflow's JSON."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.api import Request, build_app, lambda_entry
from serverless_mlflow.request import array, boolean, intlike, item_type_string, less_than_or_equal, required, string

from . import listing, models, versions

_NAME = {"name": "string"}
_NAME_SCHEMA = {"name": [string, required]}
_VERSION = {"name": "string", "version": "string"}
_VERSION_SCHEMA = {"name": [string, required], "version": [string, required]}
_SEARCH = {"filter": "string", "max_results": "int64", "order_by": "[string]", "page_token": "string"}


def _tags(raw: list[Any] | None) -> dict[str, str]:
    return versions.tags_dict(raw)


# --- registered models ------------------------------------------------------------------------------

def create_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "tags": "[message]", "description": "string", "deployment_job_id": "string"},
        {"name": [string, required], "tags": [array], "description": [string]},
    )
    return {"registered_model": models.create_registered_model(msg.get("name", ""), _tags(msg.get("tags")), msg.get("description", ""))}


def get_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(_NAME, _NAME_SCHEMA)
    return {"registered_model": models.get_registered_model(msg["name"])}


def update_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "description": "string", "deployment_job_id": "string"}, {"name": [string, required], "description": [string]})
    return {"registered_model": models.update_registered_model(msg["name"], msg.get("description", ""))}


def rename_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "new_name": "string"}, {"name": [string, required], "new_name": [string, required]})
    return {"registered_model": models.rename_registered_model(msg["name"], msg["new_name"])}


def delete_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(_NAME, _NAME_SCHEMA)
    models.delete_registered_model(msg["name"])
    return {}


def search_registered_models(req: Request) -> dict[str, Any]:
    msg = req.message(
        _SEARCH,
        {
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(1000)],
            "order_by": [array, item_type_string],
            "page_token": [string],
        },
    )
    return listing.search_registered_models(msg.get("filter") or None, msg.get("max_results", 100), msg.get("order_by") or None, msg.get("page_token") or None)


def get_latest_versions(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "stages": "[string]"}, {"name": [string, required], "stages": [array, item_type_string]})
    found = versions.get_latest_versions(msg["name"], msg.get("stages") or None)
    return {"model_versions": found} if found else {}


def set_registered_model_tag(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "key": "string", "value": "string"}, {"name": [string, required], "key": [string, required], "value": [string]})
    models.set_registered_model_tag(msg["name"], msg["key"], msg.get("value", ""))
    return {}


def delete_registered_model_tag(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "key": "string"}, {"name": [string, required], "key": [string, required]})
    models.delete_registered_model_tag(msg["name"], msg["key"])
    return {}


def set_registered_model_alias(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "alias": "string", "version": "string"},
        {"name": [string, required], "alias": [string, required], "version": [string, required]},
    )
    models.set_registered_model_alias(msg["name"], msg["alias"], msg["version"])
    return {}


def delete_registered_model_alias(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "alias": "string"}, {"name": [string, required], "alias": [string, required]})
    models.delete_registered_model_alias(msg["name"], msg["alias"])
    return {}


def get_model_version_by_alias(req: Request) -> dict[str, Any]:
    msg = req.message({"name": "string", "alias": "string"}, {"name": [string, required], "alias": [string, required]})
    return {"model_version": versions.get_model_version_by_alias(msg["name"], msg["alias"])}


# --- model versions ------------------------------------------------------------------------------------

def create_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(
        {
            "name": "string", "source": "string", "run_id": "string", "tags": "[message]",
            "run_link": "string", "description": "string", "model_id": "string",
        },
        {
            "name": [string, required], "source": [string, required], "run_id": [string], "tags": [array],
            "run_link": [string], "description": [string], "model_id": [string],
        },
    )
    return {"model_version": versions.create_model_version(msg)}


def get_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(_VERSION, _VERSION_SCHEMA)
    return {"model_version": versions.get_model_version(msg["name"], msg["version"])}


def update_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "version": "string", "description": "string"},
        {"name": [string, required], "version": [string, required], "description": [string]},
    )
    return {"model_version": versions.update_model_version(msg["name"], msg["version"], msg.get("description"))}


def transition_model_version_stage(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "version": "string", "stage": "string", "archive_existing_versions": "bool"},
        {"name": [string, required], "version": [string, required], "stage": [string, required], "archive_existing_versions": [boolean]},
    )
    found = versions.transition_model_version_stage(msg["name"], msg["version"], msg["stage"], msg.get("archive_existing_versions", False))
    return {"model_version": found}


def delete_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(_VERSION, _VERSION_SCHEMA)
    versions.delete_model_version(msg["name"], msg["version"])
    return {}


def get_model_version_download_uri(req: Request) -> dict[str, Any]:
    # MLflow parses this request without a schema: missing fields fail in the store's validation.
    msg = req.message(_VERSION)
    return versions.get_model_version_download_uri(msg.get("name", ""), msg.get("version", ""))


def search_model_versions(req: Request) -> dict[str, Any]:
    msg = req.message(
        _SEARCH,
        {
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(200_000)],
            "order_by": [array, item_type_string],
            "page_token": [string],
        },
    )
    return listing.search_model_versions(msg.get("filter") or None, msg.get("max_results", 200_000), msg.get("order_by") or None, msg.get("page_token") or None)


def set_model_version_tag(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "version": "string", "key": "string", "value": "string"},
        {"name": [string, required], "version": [string, required], "key": [string, required], "value": [string]},
    )
    versions.set_model_version_tag(msg["name"], msg["version"], msg["key"], msg.get("value", ""))
    return {}


def delete_model_version_tag(req: Request) -> dict[str, Any]:
    msg = req.message(
        {"name": "string", "version": "string", "key": "string"},
        {"name": [string, required], "version": [string, required], "key": [string, required]},
    )
    versions.delete_model_version_tag(msg["name"], msg["version"], msg["key"])
    return {}


app = build_app(
    "registry",
    {
        "create_registered_model": create_registered_model,
        "get_registered_model": get_registered_model,
        "update_registered_model": update_registered_model,
        "rename_registered_model": rename_registered_model,
        "delete_registered_model": delete_registered_model,
        "search_registered_models": search_registered_models,
        "get_latest_versions": get_latest_versions,
        "set_registered_model_tag": set_registered_model_tag,
        "delete_registered_model_tag": delete_registered_model_tag,
        "set_registered_model_alias": set_registered_model_alias,
        "delete_registered_model_alias": delete_registered_model_alias,
        "get_model_version_by_alias": get_model_version_by_alias,
        "create_model_version": create_model_version,
        "get_model_version": get_model_version,
        "update_model_version": update_model_version,
        "transition_model_version_stage": transition_model_version_stage,
        "delete_model_version": delete_model_version,
        "get_model_version_download_uri": get_model_version_download_uri,
        "search_model_versions": search_model_versions,
        "set_model_version_tag": set_model_version_tag,
        "delete_model_version_tag": delete_model_version_tag,
    },
)
lambda_handler = lambda_entry(app)
