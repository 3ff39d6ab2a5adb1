"""Workspaces (MLflow's workspace store, ``store/workspace/sqlalchemy_store.py``) in the ``WORKSPACES`` partition.

``default`` always exists and needs no item: existing tables serve it with no migration (MLflow's migration
inserts it with the description below; an update of it writes the item). Deleting a workspace follows MLflow's
RESTRICT mode: refused while the workspace holds a resource. It is two-phase so that a create racing the delete
cannot leave an orphan: the workspace is first marked ``deletion_pending`` (creates in it check the mark in their
transaction), then checked empty, then removed; a refusal clears the mark.
"""

from __future__ import annotations

import re
from typing import Any

from serverless_mlflow.core.errors import MlflowError, already_exists, invalid, not_found, wrong_state
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import jobs

WORKSPACE = ENTITY["workspace"]

DEFAULT_WORKSPACE = "default"
WORKSPACES_DIR = "workspaces"  # MLflow's WORKSPACES_DIR_NAME: experiments' artifacts under <root>/workspaces/<name>/
DEFAULT_DESCRIPTION = "Default workspace for legacy resources"
_FIELDS = ("description", "default_artifact_root", "trace_archival_location", "trace_archival_retention")

# store/workspace/abstract_store.py WorkspaceNameValidator (Kubernetes-style names).
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MIN_LENGTH, _MAX_LENGTH = 2, 63
_RESERVED = frozenset({"workspaces", "api", "ajax-api", "static-files"})

RESTRICT, CASCADE, SET_DEFAULT = "RESTRICT", "CASCADE", "SET_DEFAULT"
DELETION_MODES = (SET_DEFAULT, CASCADE, RESTRICT)  # MLflow's enum order (its error message lists them so)


def validate_name(name: Any) -> None:
    if not isinstance(name, str):
        raise invalid(f"Workspace name must be a string, got {type(name).__name__!s}.")
    if not (_MIN_LENGTH <= len(name) <= _MAX_LENGTH):
        raise invalid(f"Workspace name '{name}' must be between {_MIN_LENGTH} and {_MAX_LENGTH} characters.")
    if not _NAME.match(name):
        raise invalid(
            f"Workspace name '{name}' must match the pattern {_NAME.pattern} (lowercase alphanumeric with optional internal hyphens)."
        )
    if name in _RESERVED:
        raise invalid(f"Workspace name '{name}' is reserved and cannot be used.")


def workspace_key(name: str) -> dict[str, str]:
    return WORKSPACE.key(workspace=name)


def _default_item() -> dict[str, Any]:
    return {"name": DEFAULT_WORKSPACE, "description": DEFAULT_DESCRIPTION}


def to_api(item: dict[str, Any]) -> dict[str, Any]:
    """The Workspace message as MLflow's server writes it (unset fields left out)."""
    out: dict[str, Any] = {"name": item["name"]}
    for name in ("description", "default_artifact_root"):
        if item.get(name) is not None:
            out[name] = item[name]
    archival = {
        field: item[attribute]
        for field, attribute in (("location", "trace_archival_location"), ("retention", "trace_archival_retention"))
        if item.get(attribute)
    }
    if archival:
        out["trace_archival_config"] = archival
    return out


def missing(name: str) -> MlflowError:
    return not_found(f"Workspace '{name}' not found")


def read(name: str) -> dict[str, Any] | None:
    """The workspace's item (``default``'s stand-in when it has none); None when there is no such workspace or it
    is being deleted."""
    item = table.get(workspace_key(name))
    if item is None:
        return _default_item() if name == DEFAULT_WORKSPACE else None
    return None if item.get("deletion_pending") else item


def get_workspace(name: str) -> dict[str, Any]:
    item = read(name)
    if item is None:
        raise missing(name)
    return to_api(item)


def resolve(header_value: str | None) -> str:
    """workspace_helpers.resolve_workspace_from_header: the header's workspace (validated, and it must exist)
    or ``default`` when the header is absent or blank."""
    name = request_workspace.normalize(header_value)
    if name is None:
        return DEFAULT_WORKSPACE
    if name != DEFAULT_WORKSPACE:
        validate_name(name)
    return get_workspace(name)["name"]


def list_workspaces() -> list[dict[str, Any]]:
    """Every workspace in name order (``default`` included), one strongly consistent Query."""
    items = [item for item in table.iter_query(**WORKSPACE.query("all")) if not item.get("deletion_pending")]
    if not any(item["name"] == DEFAULT_WORKSPACE for item in items):
        items.append(_default_item())
    return [to_api(item) for item in sorted(items, key=lambda item: item["name"])]


def create_workspace(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """A new workspace; RESOURCE_ALREADY_EXISTS when the name is taken (``default`` is refused by the caller)."""
    attributes = {"name": name, **{field: values[field] for field in _FIELDS if values.get(field)}}
    try:
        table.put(WORKSPACE.item(attributes, workspace=name), condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise already_exists(f"Workspace '{name}' already exists.") from None
    return to_api(attributes)


def update_workspace(name: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply the given fields (an empty string clears one, as MLflow's store); 404 for an unknown workspace."""
    current = read(name)
    if current is None:
        raise missing(name)
    attributes = {"name": name, **{field: current[field] for field in _FIELDS if current.get(field)}}
    for field, value in changes.items():
        if value is None:
            continue
        if value:
            attributes[field] = value
        else:
            attributes.pop(field, None)
    condition = (
        "attribute_not_exists(deletion_pending)"
        if name == DEFAULT_WORKSPACE
        else "attribute_exists(pk) AND attribute_not_exists(deletion_pending)"
    )
    try:
        table.put(WORKSPACE.item(attributes, workspace=name), condition=condition)
    except table.ConditionFailed:
        raise missing(name) from None
    return to_api(attributes)


def exists_check(name: str) -> dict[str, Any]:
    """A transaction condition: the workspace exists and is not being deleted (creates in a workspace use it)."""
    return table.check_op(workspace_key(name), "attribute_exists(pk) AND attribute_not_exists(deletion_pending)")


def _count(entity_name: str, workspace: str) -> int:
    """How many items of an entity a workspace's partition holds (the entity's whole sort-key range)."""
    entity = ENTITY[entity_name]
    # A sort key that starts with a field (a model's name) has no prefix: the whole partition.
    items = table.iter_query(entity.pk.render({"workspace": workspace}), entity.sk_prefix() or None)
    return sum(1 for item in items if item.get("entity_type") == entity.name)


# MLflow's tables (``_WORKSPACE_ROOT_MODELS``, in the order its store checks them) and this server's entities for
# the families it scopes to workspaces. A registered model (or prompt) is counted by its entry in the workspace's
# name list; jobs (one partition each) by the workspace's job index.
JOBS = "jobs"
_ROOT_ENTITIES = (
    ("registered_models", "registered_model_entry"),
    ("experiments", "experiment_entry"),
    ("evaluation_datasets", "evaluation_dataset"),
    ("webhooks", "webhook"),
    ("secrets", "gateway_secret"),
    ("endpoints", "gateway_endpoint"),
    ("model_definitions", "gateway_model_definition"),
    ("budget_policies", "gateway_budget_policy"),
    ("guardrails", "gateway_guardrail"),
    (JOBS, "job"),
    ("mcp_servers", "mcp_server"),
    ("skills", "skill"),  # MLflow 3.18's skill registry
)


def _resource_counts(name: str) -> list[tuple[str, int]]:
    """(MLflow's table name, how many) of every resource family this server scopes to workspaces."""
    return [
        (table_name, jobs.count_in_workspace(name) if table_name == JOBS else _count(entity_name, name))
        for table_name, entity_name in _ROOT_ENTITIES
    ]


def delete_workspace(name: str, mode: str) -> None:
    """MLflow's RESTRICT deletion; CASCADE and SET_DEFAULT are refused as a provider without them (FEATURE_DISABLED)."""
    if name == DEFAULT_WORKSPACE:
        raise wrong_state(f"Cannot delete the reserved '{DEFAULT_WORKSPACE}' workspace")
    if mode != RESTRICT:
        raise MlflowError(
            f"Workspace deletion mode '{mode}' is not supported by this server; delete the workspace's resources and use RESTRICT.",
            "FEATURE_DISABLED",
            status=501,
        )
    try:
        table.update(workspace_key(name), "SET deletion_pending = :yes", condition="attribute_exists(pk)", values={":yes": True})
    except table.ConditionFailed:
        raise missing(name) from None
    for table_name, count in _resource_counts(name):
        if count:
            table.update(workspace_key(name), "REMOVE deletion_pending")
            raise wrong_state(
                f"Cannot delete workspace '{name}': table '{table_name}' still contains {count} resource(s). "
                "Remove or reassign them before deleting the workspace."
            )
    table.delete(workspace_key(name))
