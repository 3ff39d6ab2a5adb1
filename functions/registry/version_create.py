"""Model version creation: the source's lineage (runs, logged models, ``models:/`` URIs), its storage
location, and the atomic numbering that writes the version, its tags and registry event in one transaction."""

from __future__ import annotations

import os
import random
import re
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, retry_later
from serverless_mlflow.core.validation import validate_model_name, validate_model_version_tag
from serverless_mlflow.storage import table
from serverless_mlflow.store import logged_models, registry_events

from . import reads, sources, version_writes, versions
from .items import ALL_STAGES, IS_PROMPT_TAG_KEY, NO_MARKERS, READY, STAGE_NONE, meta_key, version_item, version_json, version_tag_item

MAX_ALLOCATION_ATTEMPTS = 50
TAGS_IN_CREATE_TRANSACTION = 98


def create_model_version(message: dict[str, Any]) -> dict[str, Any]:
    name: str = message.get("name", "")
    source: str = message.get("source", "")
    run_id: str | None = message.get("run_id", "")
    model_id: str | None = message.get("model_id", "")
    description: str = message.get("description", "")
    run_link: str = message.get("run_link", "")
    tags = versions.tags_dict(message.get("tags"))

    regex = os.environ.get("MLFLOW_CREATE_MODEL_VERSION_SOURCE_VALIDATION_REGEX")
    if source and regex and not re.search(regex, source):
        raise invalid(f"Invalid model version source: '{source}'.")
    is_prompt = versions.is_prompt_tags(tags)
    if is_prompt:
        sources.validate_prompt_source(source)
    else:
        source, run_id, model_id = resolve_lineage(source, run_id, model_id, "run_id" in message, "model_id" in message)
        if model_id:
            sources.validate_source_model(source, model_id)
        else:
            sources.validate_source_run(source, run_id)

    # The store's own checks (SqlAlchemyStore.create_model_version), still before any write.
    validate_model_name(name)
    for key, value in tags.items():
        validate_model_version_tag(key, value)
    storage_location, run_id = storage_location_for(source, run_id)
    if not run_id and model_id:
        run_id = sources.get_logged_model(model_id).get("source_run_id")

    attributes = {
        "name": name,
        "description": description,
        "current_stage": STAGE_NONE,
        "source": source,
        "run_id": run_id,
        "run_link": run_link,
        "status": READY,
        "storage_location": storage_location,
        "model_id": model_id or None,
    }
    # A version registered from a logged model is listed in that model's mlflow.modelVersions tag (MLflow's
    # server does this right after creating the version; here it is part of the same transaction).
    link = (lambda number: logged_models.model_versions_tag_op(model_id, name, number)) if model_id and not is_prompt else None

    def event(number: int) -> dict[str, Any]:
        entity, payload = registry_events.version_created(name, number, source, run_id, tags, description, is_prompt)
        return registry_events.event_op(entity, "created", payload, name)

    item = allocate_and_put(name, attributes, tags, link, event)
    return version_json(item, tags, [])


def allocate_and_put(
    name: str,
    attributes: dict[str, Any],
    tags: dict[str, str],
    link: Callable[[int], dict[str, Any] | None] | None = None,
    event: Callable[[int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Take the next version number and write the version in one transaction.

    The transaction increments META's ``next_version`` only if it still holds the value read, so two
    concurrent creates can never write the same number: the loser's condition fails and it retries
    with the next number. The version put is also conditioned on the key being free. ``link(number)``
    gives one more (conditioned) write of the same transaction, rebuilt from fresh reads on every attempt;
    ``event(number)`` the registry event (outbox item) of the new version, last in the transaction.
    """
    tag_items = list(tags.items())
    for attempt in range(MAX_ALLOCATION_ATTEMPTS):
        meta = reads.require_meta(name)
        number = int(meta.get("next_version") or 1)
        now = clock.now_millis()
        item = version_item({**attributes, "version": number, "creation_timestamp": now, "last_updated_timestamp": now})
        linked = link(number) if link else None
        announced = event(number) if event else None
        in_transaction = TAGS_IN_CREATE_TRANSACTION - (1 if linked else 0) - (1 if announced else 0)
        operations = [
            table.update_op(
                meta_key(name),
                "SET next_version = :next, last_updated_timestamp = :now",
                values={":next": number + 1, ":now": now, ":expected": number},
                condition=f"{NO_MARKERS} AND (next_version = :expected OR attribute_not_exists(next_version))",
            ),
            table.put_op(item, condition="attribute_not_exists(pk)"),
            *(table.put_op(version_tag_item(name, number, k, v)) for k, v in tag_items[:in_transaction]),
            *([linked] if linked else []),
            *([announced] if announced else []),
        ]
        try:
            table.transact(operations)
        except table.ConditionFailed:
            time.sleep(min(0.5, 0.01 * (2 ** min(attempt, 6))) * random.random())
            continue
        # Tags beyond one transaction's capacity (rare) follow in guarded batches.
        for key, value in tag_items[in_transaction:]:
            version_writes.guarded_version_write(name, number, [table.put_op(version_tag_item(name, number, key, value))])
        return item
    raise retry_later(f"Model Version creation error (name={name}). Giving up after {MAX_ALLOCATION_ATTEMPTS} attempts.")


def resolve_lineage(
    source: str, run_id: str | None, model_id: str | None, has_run_id: bool, has_model_id: bool
) -> tuple[str, str | None, str | None]:
    """``models:/<name>/<version|stage|latest>`` and ``models:/<name>@<alias>`` sources (copy_model_version)."""
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme != "models":
        return source, run_id, model_id
    if parsed.netloc:
        raise invalid(f"Invalid model version source: '{source}'. Registered model sources must use the active model registry.")
    uri = sources.parse_model_uri(source) if _parses(source) else None
    if uri is None:
        raise sources.invalid_source(source, "model_id")
    if uri.model_id is not None:
        return source, run_id, model_id
    head = reads.require_head(uri.name or "")
    if head.tags.get(IS_PROMPT_TAG_KEY, "false").lower() == "true":
        raise invalid(f"Invalid model version source: '{source}'. Prompt versions cannot be used as model version sources.")
    name, version = model_name_and_version(uri)
    source_version, _ = versions.require_version(name, version)
    if (has_run_id and (run_id or "") != (source_version.get("run_id") or "")) or (
        has_model_id and (model_id or "") != (source_version.get("model_id") or "")
    ):
        raise invalid(
            f"Invalid model version source: '{source}'. The run_id and model_id request parameters must match the referenced model version."
        )
    return (
        f"models:/{name}/{source_version['version']}",
        run_id if has_run_id else source_version.get("run_id"),
        model_id if has_model_id else source_version.get("model_id"),
    )


def _parses(source: str) -> bool:
    try:
        sources.parse_model_uri(source)
    except MlflowError:
        return False
    return True


def model_name_and_version(uri: sources.ParsedModelUri) -> tuple[str, str]:
    name = uri.name or ""
    if uri.version is not None:
        return name, uri.version
    if uri.alias is not None:
        return name, versions.get_model_version_by_alias(name, uri.alias)["version"]
    stages = (versions.canonical_stage(uri.stage),) if uri.stage is not None else ALL_STAGES
    reads.require_head(name, with_tags=False)
    latest = reads.latest_versions(name, stages)
    if not latest:
        stage_str = "" if uri.stage is None else f" and stage '{uri.stage}'"
        raise invalid(f"No versions of model with name '{name}'{stage_str} found")  # MLflow: a 500
    return name, str(max(int(v["version"]) for v in latest))


def storage_location_for(source: str, run_id: str | None) -> tuple[str, str | None]:
    """(storage_location, run_id) as SqlAlchemyStore.create_model_version resolves them."""
    scheme = urllib.parse.urlparse(source).scheme
    if scheme == "models":
        try:
            uri = sources.parse_model_uri(source)
            if uri.model_id is not None:
                model = sources.get_logged_model(uri.model_id)
                return sources.logged_model_location(model), run_id or model.get("source_run_id")
            return versions.get_model_version_download_uri(uri.name or "", uri.version)["artifact_uri"], run_id
        except MlflowError as error:
            raise invalid(  # MLflow raises it without an error code (a 500 from its server)
                f"Unable to fetch model from model URI source artifact location '{source}'.Error: {error.message}"
            ) from error
    if scheme == "runs":
        source_run_id, artifact_path = sources.parse_runs_uri(source)
        try:
            run = sources.get_run(source_run_id)
        except MlflowError:
            return source, run_id
        return sources.join_uri(run.get("artifact_uri") or "", artifact_path), run_id
    return source, run_id
