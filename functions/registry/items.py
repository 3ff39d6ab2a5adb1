"""Registry items: keys, item builders and the JSON shapes MLflow's server answers.

Everything of one registered model lives in its partition ``RM#<name>`` (with the workspace after the name
outside ``default``: ``schema.model_scope``); the sort keys order the
partition as ``M#ALIAS#...`` < ``M#META`` < ``M#TAG#...`` < ``M#V#<version>`` (each version followed by
its ``#T#`` tags), so "head" reads (aliases, metadata, model tags) are one Query with ``sk < M#V#``
and a version with its tags is one Query on the version's prefix.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage.schema import ENTITY, PK, SK, KeyQuery, model_scope

RM = ENTITY["registered_model"]
ENTRY = ENTITY["registered_model_entry"]
MV = ENTITY["model_version"]
MV_TAG = ENTITY["model_version_tag"]
RM_TAG = ENTITY["registered_model_tag"]
ALIAS = ENTITY["model_alias"]

IS_PROMPT_TAG_KEY = "mlflow.prompt.is_prompt"

STAGE_NONE = "None"
STAGE_STAGING = "Staging"
STAGE_PRODUCTION = "Production"
STAGE_ARCHIVED = "Archived"
ALL_STAGES = (STAGE_NONE, STAGE_STAGING, STAGE_PRODUCTION, STAGE_ARCHIVED)
ACTIVE_STAGES = (STAGE_STAGING, STAGE_PRODUCTION)
READY = "READY"

# A META item carrying one of these is in the middle of a rename or a delete: every request that
# meets one finishes that job first (see lifecycle.py).
MARKERS = ("renaming_to", "renaming_from", "deleting")
NO_MARKERS = (
    "attribute_exists(pk) AND attribute_not_exists(renaming_to) AND attribute_not_exists(renaming_from) AND attribute_not_exists(deleting)"
)
VERSION_LIVE = "attribute_exists(pk) AND attribute_not_exists(deleting)"


def workspace() -> str:
    """The request's workspace: every model name is looked up there (MLflow's workspace-aware registry store
    filters every query by it), so the same name in two workspaces is two models."""
    return request_workspace.current()


def scope() -> str:
    """The ``model_scope`` of the request's workspace in a model's partition key (empty in ``default``)."""
    return model_scope(request_workspace.current())


def partition(name: str) -> str:
    return RM.key(model_name=name, model_scope=scope())[PK]


def meta_key(name: str) -> dict[str, str]:
    return RM.key(model_name=name, model_scope=scope())


def entry_key(name: str) -> dict[str, str]:
    return ENTRY.key(workspace=workspace(), model_name=name)


def version_key(name: str, version: int) -> dict[str, str]:
    return MV.key(model_name=name, model_scope=scope(), version=version)


def versions_query(name: str, version: int | None = None) -> KeyQuery:
    """Every version of the model with its tags, or one version with its tags (fixed width: version 1 is
    never a prefix of 10)."""
    return MV.query("with_tags", model_name=name, model_scope=scope(), version=version)


def version_tags_query(name: str, version: int) -> KeyQuery:
    return MV_TAG.query("of_version", model_name=name, model_scope=scope(), version=version)


def aliases_query(name: str) -> KeyQuery:
    return ALIAS.query("of_model", model_name=name, model_scope=scope())


def head_query(name: str, with_tags: bool = True) -> KeyQuery:
    """Everything sorted before the versions: aliases, META and (``with_tags``) the model's tags."""
    if with_tags:
        return RM.query("head", model_name=name, model_scope=scope()).below()
    aliases = aliases_query(name)
    return aliases.between(aliases.bound(), meta_key(name)[SK])


def has_marker(meta: dict[str, Any]) -> bool:
    return any(meta.get(marker) for marker in MARKERS)


# --- item builders ------------------------------------------------------------------------------


def meta_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return RM.item(attributes, model_name=attributes["name"], model_scope=scope())


def entry_item(name: str, is_prompt: bool) -> dict[str, Any]:
    # changed_at sets the lsi5 "name not yet indexed" flag the FTS indexer clears (serverless_mlflow.index.fts).
    return ENTRY.item({"name": name, "is_prompt": is_prompt}, workspace=workspace(), model_name=name, changed_at=clock.now_millis())


def version_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return MV.item(
        attributes,
        model_name=attributes["name"],
        model_scope=scope(),
        version=attributes["version"],
        # Versions without a run stay out of the run-id index (sparse index).
        run_id=attributes.get("run_id") or None,
        current_stage=attributes["current_stage"],
    )


def version_tag_item(name: str, version: int, key: str, value: str) -> dict[str, Any]:
    return MV_TAG.item({"key": key, "value": value, "version": version}, model_name=name, model_scope=scope(), version=version, key=key)


def model_tag_item(name: str, key: str, value: str) -> dict[str, Any]:
    return RM_TAG.item({"key": key, "value": value}, model_name=name, model_scope=scope(), key=key)


def alias_item(name: str, alias: str, version: int, split: tuple[int, int] | None = None) -> dict[str, Any]:
    """An alias; ``split`` = (secondary version, its traffic weight in percent), the seeds' canary extension."""
    attributes: dict[str, Any] = {"alias": alias, "version": version}
    if split is not None:
        attributes.update(secondary_version=split[0], secondary_weight=split[1])
    return ALIAS.item(attributes, model_name=name, model_scope=scope(), alias=alias)


def split_of(item: dict[str, Any]) -> tuple[int, int] | None:
    if item.get("secondary_version") is None:
        return None
    return int(item["secondary_version"]), int(item.get("secondary_weight") or 0)


def rebuild_for(item: dict[str, Any], new_name: str, renamed_at: int) -> dict[str, Any]:
    """The same item in the partition of ``new_name`` (rename copies every item through this)."""
    attributes = {k: v for k, v in item.items() if k not in (PK, SK, "entity_type") and not k.startswith(("gsi", "lsi"))}
    kind = item.get("entity_type")
    if kind == "model_version":
        return version_item({**attributes, "name": new_name, "last_updated_timestamp": renamed_at})
    if kind == "model_version_tag":
        return version_tag_item(new_name, attributes["version"], attributes["key"], attributes["value"])
    if kind == "registered_model_tag":
        return model_tag_item(new_name, attributes["key"], attributes["value"])
    if kind == "model_alias":
        return alias_item(new_name, attributes["alias"], attributes["version"], split_of(attributes))
    raise ValueError(f"unexpected item {kind} in a registry partition")


# --- JSON (what MLflow's to_proto + message_to_json produce) ------------------------------------


def tags_json(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in tags.items()]


def version_json(item: dict[str, Any], tags: dict[str, str] | None = None, aliases: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": item["name"],
        "version": str(item["version"]),
        "creation_timestamp": item["creation_timestamp"],
    }
    if item.get("last_updated_timestamp") is not None:
        out["last_updated_timestamp"] = item["last_updated_timestamp"]
    # proto2 semantics: a field MLflow stored (even "") is present, a None one is absent.
    for field in ("description", "user_id", "current_stage", "source", "run_id", "run_link"):
        if item.get(field) is not None:
            out[field] = item[field]
    out["status"] = item.get("status") or READY
    if item.get("status_message"):
        out["status_message"] = item["status_message"]
    if tags:
        out["tags"] = tags_json(tags)
    if item.get("model_id"):
        out["model_id"] = item["model_id"]
    if aliases:
        out["aliases"] = list(aliases)
    return out


def model_json(
    meta: dict[str, Any],
    tags: dict[str, str],
    aliases: dict[str, int],
    latest: list[dict[str, Any]],
    splits: dict[str, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": meta["name"]}
    if meta.get("creation_timestamp") is not None:
        out["creation_timestamp"] = meta["creation_timestamp"]
    if meta.get("last_updated_timestamp"):
        out["last_updated_timestamp"] = meta["last_updated_timestamp"]
    if meta.get("description"):
        out["description"] = meta["description"]
    if latest:
        out["latest_versions"] = latest
    if tags:
        out["tags"] = tags_json(tags)
    if aliases:
        out["aliases"] = [_alias_json(alias, version, (splits or {}).get(alias)) for alias, version in aliases.items()]
    return out


def _alias_json(alias: str, version: int, split: tuple[int, int] | None) -> dict[str, Any]:
    # Extra fields only on split aliases: MLflow's client parses answers with ignore_unknown_fields.
    out: dict[str, Any] = {"alias": alias, "version": str(version)}
    if split is not None:
        out["secondary_version"], out["secondary_version_weight"] = str(split[0]), split[1]
    return out
