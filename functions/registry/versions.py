"""Model versions: the reads (get, by alias, latest, download URI) and the request helpers every version
operation shares (stage names, tags). Creating a version is in ``version_create``, changing or deleting one
in ``version_writes``."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.core.validation import validate_model_alias_name, validate_model_name
from serverless_mlflow.request import key_values_of

from . import reads
from .items import ALL_STAGES, IS_PROMPT_TAG_KEY, version_json


def canonical_stage(stage: str) -> str:
    mapping = {s.lower(): s for s in ALL_STAGES}
    if stage.lower() not in mapping:
        raise invalid(f"Invalid Model Version stage: {stage}. Value must be one of {', '.join(ALL_STAGES)}.")
    return mapping[stage.lower()]


def tags_dict(tags: list[Any] | None) -> dict[str, str]:
    """Request tags as MLflow's proto sees them: unset strings are "", the last duplicate wins.

    A tag that is not a message, or a key/value that is not a string, is refused (MLflow's server turns
    some of these into an empty key, others into an empty value)."""
    return {pair["key"]: pair["value"] for pair in key_values_of(tags or [], "tags")}


def is_prompt_tags(tags: dict[str, str]) -> bool:
    return tags.get(IS_PROMPT_TAG_KEY, "false").lower() == "true"


def require_version(name: str, version: Any) -> tuple[dict[str, Any], dict[str, str]]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    return found


def get_model_version(name: str, version: Any) -> dict[str, Any]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    head = reads.read_head(name, with_tags=False)
    found = reads.read_version(name, number) if head is not None else None
    if head is None or found is None:
        raise reads.version_not_found(name, number)
    item, tags = found
    return version_json(item, tags, head.aliases_of(number))


def get_model_version_download_uri(name: str, version: Any) -> dict[str, str]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    if reads.read_head(name, with_tags=False) is None:
        raise reads.version_not_found(name, number)
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    item = found[0]
    return {"artifact_uri": item.get("storage_location") or item.get("source") or ""}


def get_model_version_by_alias(name: str, alias: str) -> dict[str, Any]:
    validate_model_name(name)
    validate_model_alias_name(alias)
    if alias.lower() == "latest":
        latest = get_latest_versions(name, None)
        if not latest:
            raise not_found(f"Latest version not found for model {name}.")
        return max(latest, key=lambda v: int(v["version"]))
    head = reads.require_head(name, with_tags=False)
    if alias not in head.aliases:
        raise invalid(f"Registered model alias {alias} not found.")
    number = head.aliases[alias]
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    item, tags = found
    return version_json(item, tags, head.aliases_of(number))


def get_latest_versions(name: str, stages: list[str] | None) -> list[dict[str, Any]]:
    validate_model_name(name)
    head = reads.require_head(name, with_tags=False)
    wanted = tuple(dict.fromkeys(canonical_stage(s) for s in stages)) if stages else ALL_STAGES
    return reads.latest_versions(name, wanted, aliases=head)
