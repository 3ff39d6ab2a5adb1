"""search_registered_models and search_model_versions.

Grammar, matching, ordering and keyset page tokens come from ``serverless_mlflow.search``; this
module only decides which items to read:

* Registered models: the name list ``RMLIST#<workspace>`` is one partition read with ConsistentRead,
  so a model is listed by the very next request after its create (a GSI could lag). Name filters
  and the prompt flag are applied to the list first; then META items are batch-read (for
  timestamps), or whole heads are read when the filter needs tags. Only the returned page is
  expanded with aliases and latest versions.
* Model versions: ``name = 'x'`` / ``name IN (...)`` read those partitions (strongly consistent);
  ``run_id = 'r'`` / ``run_id IN (...)`` use the run-id GSI (gsi3, eventually consistent: a version
  created a moment ago may be missing) and re-read every hit from the table; anything else reads
  every model's partition (after applying name filters to the name list).
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.index import fts
from serverless_mlflow.request.pages import page_response
from serverless_mlflow.storage import table
from serverless_mlflow.store import model_versions

from . import reads
from .items import (
    ENTRY,
    IS_PROMPT_TAG_KEY,
    has_marker,
    meta_key,
    model_json,
    version_json,
    versions_query,
    workspace,
)

# The search grammar (sqlparse) is imported by the searches that parse a filter, not at cold start.
search = deferred("serverless_mlflow.search")


def _entries(flt: search.Filter | None = None) -> list[dict[str, Any]]:
    """The name list, or only the entries the FTS index names as candidates for the filter's name patterns.

    Candidates include names not yet indexed, so the exact filter applied afterwards decides alone.
    """
    names, current = None, workspace()
    if flt is not None:
        names = fts.filter_candidates(
            flt, [fts.registered_models_scope(current)], fts.REGISTERED_MODEL, pending_scope=fts.registered_models_collection(current)
        )
    if names is None:
        return table.query(fts.registered_models_collection(current))
    return table.batch_get([ENTRY.key(workspace=current, model_name=name) for name in names])


def _name_ok(name: str, flt: search.Filter) -> bool:
    return all(search.compare(c, name, v) for c, v in search.name_patterns(flt))


# --- registered models ----------------------------------------------------------------------------


def search_registered_models(
    filter_string: str | None, max_results: int, order_by: list[str] | None, page_token: str | None
) -> dict[str, Any]:
    query = search.prepare_registered_model_search(filter_string, order_by, max_results, page_token)
    flt = query.filter
    candidates = [e["name"] for e in _entries(flt) if (flt.querying_prompts or not e.get("is_prompt")) and _name_ok(e["name"], flt)]
    needs_tags = flt.querying_prompts or any(n[0] == "tag" for n in flt.normalized)
    heads: dict[str, reads.Head] = {}
    if needs_tags:
        for head in parallel.parallel_map(lambda n: reads.read_head(n), candidates):
            if head is not None:
                heads[head.meta["name"]] = head
        metas = [h.meta for h in heads.values()]
    else:
        metas = [m for m in table.batch_get([meta_key(n) for n in candidates]) if not has_marker(m)]
    entities = [
        {
            "name": m["name"],
            "creation_timestamp": m.get("creation_timestamp"),
            "last_updated_timestamp": m.get("last_updated_timestamp"),
            "description": m.get("description"),
            "tags": heads[m["name"]].tags if m["name"] in heads else {IS_PROMPT_TAG_KEY: "true"} if m.get("is_prompt") else {},
        }
        for m in metas
    ]
    page, token = query.run(entities)

    def expand(entity: dict[str, Any]) -> dict[str, Any] | None:
        head = heads.get(entity["name"]) or reads.read_head(entity["name"])
        if head is None:
            return None  # deleted between the list and now
        return model_json(head.meta, head.tags, head.aliases, reads.latest_versions(entity["name"]), head.splits)

    models = [m for m in parallel.parallel_map(expand, page) if m is not None]
    return page_response("registered_models", models, token)


# --- model versions ---------------------------------------------------------------------------------


def _equality_values(flt: search.Filter, key: str) -> list[str] | None:
    """Values of ``key = v`` / ``key IN (...)``: every match has one of them (None: no such comparison)."""
    for type_, k, comparator, value in flt.normalized:
        if type_ == "attribute" and k == key:
            if comparator == "=":
                return [value]
            if comparator == "IN":
                return list(value)
    return None


def _version_entity(item: dict[str, Any], tags: dict[str, str], model_is_prompt: bool | None) -> dict[str, Any]:
    entity = {
        "name": item["name"],
        "version": item["version"],
        "creation_timestamp": item.get("creation_timestamp"),
        "last_updated_timestamp": item.get("last_updated_timestamp"),
        "current_stage": item.get("current_stage"),
        "source": item.get("source"),
        "run_id": item.get("run_id"),
        "status": item.get("status"),
        "tags": tags,
        "_item": item,
    }
    if model_is_prompt is not None:
        entity["model_is_prompt"] = model_is_prompt
    return entity


def _partition_versions(name: str) -> list[dict[str, Any]]:
    """Every live version of one model with its tags: one consistent Query of ``M#V#``."""
    if reads.read_head(name, with_tags=False) is None:  # also finishes a rename/delete in progress
        return []
    items = table.query(**versions_query(name))
    versions: dict[int, dict[str, Any]] = {}
    tags: dict[int, dict[str, str]] = {}
    for item in items:
        if item.get("entity_type") == "model_version" and not item.get("deleting"):
            versions[item["version"]] = item
        elif item.get("entity_type") == "model_version_tag":
            tags.setdefault(item["version"], {})[item["key"]] = item["value"]
    # MLflow hides every version of a model that has any version tagged as a prompt.
    model_is_prompt = any(t.get(IS_PROMPT_TAG_KEY) == "true" for t in tags.values())
    return [_version_entity(item, tags.get(v, {}), model_is_prompt) for v, item in versions.items()]


def _run_versions(run_ids: list[str]) -> list[dict[str, Any]]:
    """Versions of these runs from the run-id GSI, each re-read consistently from the table."""
    hits: list[dict[str, Any]] = []
    for run_id in run_ids:
        hits += model_versions.run_version_hits(run_id)

    def reread(hit: dict[str, Any]) -> dict[str, Any] | None:
        found = reads.read_version(hit["name"], hit["version"])
        if found is None or found[0].get("run_id") != hit.get("run_id"):
            return None
        return _version_entity(found[0], found[1], None)

    return [e for e in parallel.parallel_map(reread, hits) if e is not None]


def search_model_versions(
    filter_string: str | None, max_results: int, order_by: list[str] | None, page_token: str | None
) -> dict[str, Any]:
    query = search.prepare_model_version_search(filter_string, order_by, max_results, page_token)
    flt = query.filter
    names = _equality_values(flt, "name")
    run_ids = _equality_values(flt, "run_id")
    if names is None and run_ids is not None:
        entities = _run_versions(run_ids)
    else:
        if names is None:
            names = [e["name"] for e in _entries(flt) if _name_ok(e["name"], flt)]
        entities = [e for batch in parallel.parallel_map(_partition_versions, sorted(set(names))) for e in batch]
    page, token = query.run(entities)
    return page_response("model_versions", [version_json(e["_item"], e["tags"]) for e in page], token)
