"""Strongly consistent reads of a registered model's partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.core.errors import not_found, retry_later
from serverless_mlflow.core.validation import validate_model_version
from serverless_mlflow.storage import table
from serverless_mlflow.storage.keys import VERSION_WIDTH
from serverless_mlflow.storage.schema import ENTITY_TYPE

from . import lifecycle
from .items import (
    ALL_STAGES,
    MV,
    RM,
    has_marker,
    head_query,
    scope,
    split_of,
    version_json,
    version_tags_query,
    versions_query,
)


@dataclass
class Head:
    """META, model tags and aliases of one model (everything sorted before its versions)."""

    meta: dict[str, Any]
    tags: dict[str, str]
    aliases: dict[str, int]
    # Traffic splits (an extension: stock clients resolve an alias to its primary version only).
    splits: dict[str, tuple[int, int]] = field(default_factory=dict)

    def aliases_of(self, version: int) -> list[str]:
        return [alias for alias, target in self.aliases.items() if target == version]


def model_not_found(name: str) -> Exception:
    return not_found(f"Registered Model with name={name} not found")


def version_not_found(name: str, version: Any) -> Exception:
    return not_found(f"Model Version (name={name}, version={version}) not found")


def read_head(name: str, with_tags: bool = True) -> Head | None:
    """One Query: aliases + META (+ model tags). Finishes a rename/delete it meets; None if absent."""
    for _ in range(lifecycle.MAX_SETTLE_ROUNDS):
        items = table.query(**head_query(name, with_tags))
        meta = next((item for item in items if item.get(ENTITY_TYPE) == RM.name), None)
        if meta is None:
            return None
        if has_marker(meta):
            lifecycle.finish(meta)
            continue
        return Head(
            meta=meta,
            tags={item["key"]: item["value"] for item in items if item.get("entity_type") == "registered_model_tag"},
            aliases={item["alias"]: item["version"] for item in items if item.get("entity_type") == "model_alias"},
            splits={item["alias"]: split for item in items if (split := split_of(item)) is not None},
        )
    raise retry_later(f"Registered Model (name={name}) is busy; retry the request.")


def require_head(name: str, with_tags: bool = True) -> Head:
    head = read_head(name, with_tags)
    if head is None:
        raise model_not_found(name)
    return head


def require_meta(name: str) -> dict[str, Any]:
    meta = lifecycle.settle(name)
    if meta is None:
        raise model_not_found(name)
    return meta


def read_version(name: str, version: int) -> tuple[dict[str, Any], dict[str, str]] | None:
    """One Query: the version item and its tags; None for a missing or half-deleted version."""
    if not is_storable_version(version):
        return None  # no such version can exist (MLflow answers "not found" too)
    items = table.query(**versions_query(name, version))
    item = next((i for i in items if i.get("entity_type") == "model_version"), None)
    if item is None or item.get("deleting"):
        return None
    tags = {i["key"]: i["value"] for i in items if i.get("entity_type") == "model_version_tag"}
    return item, tags


def version_number(name: str, version: Any) -> int:
    """The version as a number; one that no version can have (< 1, >= 10^10) is simply not found, like MLflow."""
    number = validate_model_version(version)
    if not is_storable_version(number):
        raise version_not_found(name, version)
    return number


def is_storable_version(version: int) -> bool:
    """Versions are numbered from 1; keys hold 10 digits (a model reaching 10^10 versions is not a concern)."""
    return 1 <= version < 10**VERSION_WIDTH


def version_tags(name: str, version: int) -> dict[str, str]:
    if not is_storable_version(version):
        return {}
    items = table.query(**version_tags_query(name, version))
    return {i["key"]: i["value"] for i in items}


def latest_in_stage(name: str, stage: str) -> dict[str, Any] | None:
    """Highest live version in ``stage``: a descending, limit-1 consistent query on the stage LSI."""
    in_stage = MV.query("by_stage", model_name=name, model_scope=scope(), current_stage=stage)
    before: str | None = None
    while True:
        if before is None:
            items = table.query(**in_stage, forward=False, limit=1)
        else:
            items = table.query(**in_stage.between(in_stage.bound(), before), forward=False, limit=2)
            items = [item for item in items if item[in_stage.sk_attr] != before][:1]
        if not items:
            return None
        if not items[0].get("deleting"):
            return items[0]
        before = items[0][in_stage.sk_attr]


def latest_versions(name: str, stages: tuple[str, ...] = ALL_STAGES, aliases: Head | None = None) -> list[dict[str, Any]]:
    """Latest version per stage as ModelVersion JSON (tags included; aliases only when ``aliases`` given)."""
    found = [item for item in parallel.parallel_map(lambda stage: latest_in_stage(name, stage), list(stages)) if item is not None]
    found.sort(key=lambda item: item["version"])
    tags = parallel.parallel_map(lambda item: version_tags(name, item["version"]), found)
    return [
        version_json(item, item_tags, aliases.aliases_of(item["version"]) if aliases else None)
        for item, item_tags in zip(found, tags, strict=True)
    ]
