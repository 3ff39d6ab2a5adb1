"""Experiments: create, rename, delete/restore, tags, search (SqlAlchemyStore semantics).

Every write that two items must agree on is one TransactWriteItems:

* create: E#META + name claim (``attribute_not_exists``) + collection copy + tags. Concurrent creates of
  one name: exactly one transaction wins, the others fail their claim condition -> RESOURCE_ALREADY_EXISTS.
* rename: E#META (conditioned on the old name and ``active``) + delete old claim + put new claim.
* delete/restore/tags: E#META or a ConditionCheck on its lifecycle stage + the collection copy.

search_experiments reads the workspace's consistent experiment collection (``EXPLIST#<ws>``, see
``store/experiments.py``) with a strongly consistent Query and filters/sorts/pages it in memory with
MLflow's offset page tokens, so a search right after any write sees it.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, invalid, not_found, wrong_state
from serverless_mlflow.core.validation import (
    MAX_CUSTOM_VIEWS_PER_EXPERIMENT,
    validate_experiment_artifact_location,
    validate_experiment_artifact_location_length,
    validate_experiment_name,
    validate_experiment_tag,
)
from serverless_mlflow.index import fts
from serverless_mlflow.request import key_values_of
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import experiment_items
from serverless_mlflow.store import experiments as store
from serverless_mlflow.store import runs as runs_store
from serverless_mlflow.store import trace_archival_config as archival_config

# The search grammar (sqlparse) is imported by the searches that parse a filter, not at cold start.
search = deferred("serverless_mlflow.search")

CUSTOM_VIEW_TAG_PREFIX = "mlflow.customView.view"


# --- create ------------------------------------------------------------------------------------------------


def _is_custom_view_tag(key: str) -> bool:
    return key.startswith(CUSTOM_VIEW_TAG_PREFIX)


def _custom_view_limit(experiment_id: str | None = None) -> MlflowError:
    experiment_ref = f" for experiment {experiment_id}" if experiment_id else ""
    return invalid(
        f"Unable to create another custom view{experiment_ref}; the maximum number of custom "
        f"views per experiment is {MAX_CUSTOM_VIEWS_PER_EXPERIMENT}. Delete an existing custom "
        "view before creating a new one."
    )


def validate_storage_location_uri(value: str, field_name: str) -> None:
    """handlers._validate_storage_location_uri, without the host-addressed scheme policy (see README)."""
    import urllib.parse

    parsed = urllib.parse.urlparse(value)
    if parsed.fragment or parsed.params:
        raise invalid(f"'{field_name}' URL can't include fragments or params.")
    if ".." in _decode(parsed.query):
        raise invalid("Invalid query string")
    validate_experiment_artifact_location(value)
    validate_experiment_artifact_location_length(value)


def _decode(url: str) -> str:
    import urllib.parse

    for _ in range(10):
        decoded = urllib.parse.unquote(url)
        parsed = urllib.parse.urlunparse(urllib.parse.urlparse(decoded))
        if parsed == url:
            return url
        url = parsed
    raise invalid("Failed to decode url")


def create_experiment(name: str, artifact_location: str | None, tags: list[dict[str, Any]]) -> str:
    """Validate everything, allocate an id from the CONFIG counter, write all items in one transaction."""
    tag_pairs = [(tag["key"], tag["value"]) for tag in key_values_of(tags, "tags")]
    if sum(_is_custom_view_tag(key) for key, _ in tag_pairs) > MAX_CUSTOM_VIEWS_PER_EXPERIMENT:
        raise _custom_view_limit()
    if artifact_location:
        validate_storage_location_uri(artifact_location, "artifact_location")
        if request_workspace.enabled():
            # The workspace-aware store places every experiment under its workspace's root.
            raise invalid("artifact_location cannot be specified when workspaces are enabled")
    validate_experiment_name(name)
    if artifact_location:
        validate_experiment_artifact_location_length(artifact_location)
    for key, value in tag_pairs:
        validate_experiment_tag(key, value)
    # Duplicate tag keys in one request: the last value wins (SQL merges by primary key at flush).
    unique_tags = dict(tag_pairs)

    return store.create_experiment(name, artifact_location, unique_tags)


# --- reads -------------------------------------------------------------------------------------------------


def _with_archival(experiments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MLflow's ``effective_trace_archival_retention`` on each experiment while server-level archival is on."""
    if not archival_config.enabled():
        return experiments
    scopes: dict[str, archival_config.ScopeConfig] = {}  # one read per workspace, not per experiment
    for experiment in experiments:
        experiment["effective_trace_archival_retention"] = archival_config.effective_for_experiment(experiment, scopes)
    return experiments


def get_experiment(experiment_id: str) -> dict[str, Any]:
    return _with_archival([store.get_experiment(experiment_id)])[0]


def get_experiment_by_name(name: str) -> dict[str, Any]:
    experiment = store.get_experiment_by_name(name)
    if experiment is None:
        raise not_found(f"Could not find experiment with name '{name}'")
    return _with_archival([experiment])[0]


# --- rename / delete / restore ------------------------------------------------------------------------------


def _meta_put(meta: dict[str, Any], **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """New E#META and collection items with ``changes`` applied (index keys recomputed)."""
    attributes = {name: meta[name] for name in experiment_items._EXPERIMENT_FIELDS}
    attributes.update(changes)
    attributes["workspace"] = attributes.get("workspace") or experiment_items.DEFAULT_WORKSPACE
    item = ENTITY["experiment"].item(attributes, **attributes, experiment_num=int(attributes["experiment_id"]))
    return item, experiment_items.entry_item(item)


def rename_experiment(experiment_id: str, new_name: str) -> None:
    validate_experiment_name(new_name)
    normalized = store.normalize_experiment_id(experiment_id)
    meta = store.get_experiment_meta(normalized)
    if meta["lifecycle_stage"] != experiment_items.ACTIVE:
        raise wrong_state("Cannot rename a non-active experiment.")
    workspace = meta.get("workspace") or experiment_items.DEFAULT_WORKSPACE
    new_meta, new_entry = _meta_put(meta, name=new_name, last_update_time=clock.now_millis())
    condition = "#n = :old AND lifecycle_stage = :active"
    names = {"#n": "name"}
    values = {":old": meta["name"], ":active": experiment_items.ACTIVE}
    operations = [table.put_op(new_meta, condition=condition, names=names, values=values), table.put_op(new_entry)]
    if new_name != meta["name"]:
        operations += [
            table.delete_op(experiment_items.name_claim_key(meta["name"], workspace)),
            table.put_op(experiment_items.name_claim_item(normalized, new_name, workspace), condition="attribute_not_exists(pk)"),
        ]
    try:
        table.transact(operations)
    except table.ConditionFailed as failure:
        if len(failure.reasons) > 3 and failure.reasons[3] == "ConditionalCheckFailed":
            # SqlAlchemyStore lets the UNIQUE constraint surface as BAD_REQUEST from the session.
            raise MlflowError(
                f"Experiment(name={new_name}) already exists. Error: UNIQUE constraint failed: experiments.workspace, experiments.name",
                "BAD_REQUEST",
            ) from None
        # The experiment changed under us (renamed or deleted concurrently): answer from its new state.
        current = store.get_experiment_meta(normalized)
        if current["lifecycle_stage"] != experiment_items.ACTIVE:
            raise wrong_state("Cannot rename a non-active experiment.") from None
        raise MlflowError("The experiment was modified concurrently; retry the rename.", "ABORTED") from None


def _set_lifecycle(experiment_id: str, from_stage: str, to_stage: str) -> None:
    normalized = store.normalize_experiment_id(experiment_id)
    meta = store.get_experiment_item(normalized)
    if meta is None or meta["lifecycle_stage"] != from_stage:
        raise not_found(f"No Experiment with id={normalized} exists")
    # SqlAlchemyStore marks every run of the experiment deleted (new deleted_time) / active with it, in
    # one SQL transaction. Runs go first: if this request dies half-way the experiment is still in its
    # old stage, so the client's retry passes the check above and finishes the job.
    runs_store.set_experiment_runs_lifecycle(normalized, to_stage)
    for _ in range(3):
        new_meta, new_entry = _meta_put(meta, lifecycle_stage=to_stage, last_update_time=clock.now_millis())
        try:
            table.transact(
                [
                    # Conditioned on the name read too: a Put replaces the item and must not undo a concurrent rename.
                    table.put_op(
                        new_meta,
                        condition="lifecycle_stage = :from AND #n = :name",
                        names={"#n": "name"},
                        values={":from": from_stage, ":name": meta["name"]},
                    ),
                    table.put_op(new_entry),
                ]
            )
            # A run created between the first pass and the flip (create_run checks the experiment is
            # active in its own transaction, so none can follow the flip) is caught by this second pass.
            runs_store.set_experiment_runs_lifecycle(normalized, to_stage, only_stage=from_stage)
            return
        except table.ConditionFailed:
            meta = store.get_experiment_item(normalized)
            if meta is None or meta["lifecycle_stage"] != from_stage:
                raise not_found(f"No Experiment with id={normalized} exists") from None
    raise MlflowError("The experiment was modified concurrently; retry.", "ABORTED")


def delete_experiment(experiment_id: str) -> None:
    """Mark deleted (the SQL store allows deleting the Default experiment too) and every run deleted."""
    _set_lifecycle(experiment_id, experiment_items.ACTIVE, experiment_items.DELETED)


def restore_experiment(experiment_id: str) -> None:
    """Mark active and, as SqlAlchemyStore does, every run of the experiment active again."""
    _set_lifecycle(experiment_id, experiment_items.DELETED, experiment_items.ACTIVE)


# --- tags -------------------------------------------------------------------------------------------------


def set_experiment_tag(experiment_id: str, key: str, value: str, user: str | None = None) -> None:
    if _is_custom_view_tag(key):
        experiment = store.get_experiment(experiment_id)
        existing = {tag["key"] for tag in experiment.get("tags", [])}
        if key not in existing and sum(_is_custom_view_tag(k) for k in existing) >= MAX_CUSTOM_VIEWS_PER_EXPERIMENT:
            raise _custom_view_limit(experiment["experiment_id"])
    validate_experiment_tag(key, value)
    store.put_tag(experiment_id, key, value, user)


def delete_experiment_tag(experiment_id: str, key: str) -> None:
    normalized = store.normalize_experiment_id(experiment_id)
    meta = store.get_experiment_meta(normalized)
    store.check_experiment_active(meta)
    workspace = meta.get("workspace") or experiment_items.DEFAULT_WORKSPACE
    try:
        table.transact(
            [
                table.check_op(
                    experiment_items.meta_key(normalized), "lifecycle_stage = :active", values={":active": experiment_items.ACTIVE}
                ),
                table.delete_op(experiment_items.tag_key(normalized, key), condition="attribute_exists(pk)"),
                table.delete_op(experiment_items.entry_tag_key(normalized, key, workspace)),
            ]
        )
    except table.ConditionFailed as failure:
        if failure.reasons and failure.reasons[0] == "ConditionalCheckFailed":
            store.check_experiment_active(store.get_experiment_meta(normalized))
        raise not_found(f"No tag with name: {key} in experiment with id {experiment_id}") from None


# --- search -----------------------------------------------------------------------------------------------


def search_experiments(
    view_type: int | str | None,
    max_results: int | None,
    filter_string: str | None,
    order_by: list[str] | None,
    page_token: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """SqlAlchemyStore._search_experiments over the consistent collection: same checks in the same order and
    the same order (tie-breakers included). Page tokens are the search package's keyset tokens, so a page
    resumes after the last experiment returned even while experiments are created."""
    query = search.prepare_experiment_search(filter_string, order_by, max_results, page_token)
    stages = search.view_type_stages(view_type)
    # Name substring filters read only the FTS candidates (plus names not yet indexed); the exact filter
    # below removes false candidates, so the index can narrow the read but never change the answer.
    candidate_ids = fts.filter_candidates(query.filter, [fts.experiments_scope(request_workspace.current())], fts.EXPERIMENT)
    experiments = store.list_experiments() if candidate_ids is None else store.list_experiments_by_id(candidate_ids)
    candidates = []
    for experiment in experiments:
        if experiment["lifecycle_stage"] in stages:
            tags = {tag["key"]: tag["value"] for tag in experiment.get("tags", [])}
            candidates.append({**experiment, "tags": tags, "_api": experiment})
    found, token = query.run(candidates)
    return _with_archival([entity["_api"] for entity in found]), token
