"""Model registry routes: parse like MLflow's handlers, call one domain function, answer MLflow's JSON."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.http.api import Request, build_app, lambda_entry

from . import listing, models, version_create, version_writes, versions
from .messages import MESSAGES


def _tags(raw: list[Any] | None) -> dict[str, str]:
    return versions.tags_dict(raw)


# --- registered models ------------------------------------------------------------------------------


def create_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_registered_model"])
    return {"registered_model": models.create_registered_model(msg.get("name", ""), _tags(msg.get("tags")), msg.get("description", ""))}


def get_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_registered_model"])
    return {"registered_model": models.get_registered_model(msg["name"])}


def update_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["update_registered_model"])
    return {"registered_model": models.update_registered_model(msg["name"], msg.get("description", ""))}


def rename_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["rename_registered_model"])
    return {"registered_model": models.rename_registered_model(msg["name"], msg["new_name"])}


def delete_registered_model(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_registered_model"])
    models.delete_registered_model(msg["name"])
    return {}


def search_registered_models(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_registered_models"])
    return listing.search_registered_models(
        msg.get("filter") or None, msg.get("max_results", 100), msg.get("order_by") or None, msg.get("page_token") or None
    )


def get_latest_versions(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_latest_versions"])
    found = versions.get_latest_versions(msg["name"], msg.get("stages") or None)
    return {"model_versions": found} if found else {}


def set_registered_model_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_registered_model_tag"])
    models.set_registered_model_tag(msg["name"], msg["key"], msg.get("value", ""))
    return {}


def delete_registered_model_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_registered_model_tag"])
    models.delete_registered_model_tag(msg["name"], msg["key"])
    return {}


def set_registered_model_alias(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_registered_model_alias"])
    split = (msg.get("secondary_version"), msg.get("secondary_version_weight"))
    models.set_registered_model_alias(msg["name"], msg["alias"], msg["version"], split)
    return {}


def delete_registered_model_alias(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_registered_model_alias"])
    models.delete_registered_model_alias(msg["name"], msg["alias"])
    return {}


def get_model_version_by_alias(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_model_version_by_alias"])
    return {"model_version": versions.get_model_version_by_alias(msg["name"], msg["alias"])}


# --- model versions ------------------------------------------------------------------------------------


def create_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_model_version"])
    return {"model_version": version_create.create_model_version(msg)}


def get_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_model_version"])
    return {"model_version": versions.get_model_version(msg["name"], msg["version"])}


def update_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["update_model_version"])
    return {"model_version": version_writes.update_model_version(msg["name"], msg["version"], msg.get("description"))}


def transition_model_version_stage(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["transition_model_version_stage"])
    found = version_writes.transition_model_version_stage(
        msg["name"], msg["version"], msg["stage"], msg.get("archive_existing_versions", False)
    )
    return {"model_version": found}


def delete_model_version(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_model_version"])
    version_writes.delete_model_version(msg["name"], msg["version"])
    return {}


def get_model_version_download_uri(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_model_version_download_uri"])
    return versions.get_model_version_download_uri(msg.get("name", ""), msg.get("version", ""))


def search_model_versions(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_model_versions"])
    return listing.search_model_versions(
        msg.get("filter") or None, msg.get("max_results", 200_000), msg.get("order_by") or None, msg.get("page_token") or None
    )


def set_model_version_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_model_version_tag"])
    version_writes.set_model_version_tag(msg["name"], msg["version"], msg["key"], msg.get("value", ""))
    return {}


def delete_model_version_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_model_version_tag"])
    version_writes.delete_model_version_tag(msg["name"], msg["version"], msg["key"])
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
