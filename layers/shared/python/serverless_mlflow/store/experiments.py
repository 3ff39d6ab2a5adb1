"""Experiments in the table: reading, creating, tagging, and the checks other features make against an experiment.

The items themselves (entities, keys, attributes, the default experiment) are built in ``experiment_items``.
Layout (see ``schema.py``):

* ``EXP#<id> / E#META`` and ``EXP#<id> / E#TAG#<key>``: the experiment and its tags. ``get_experiment``
  reads both with ONE strongly consistent Query (``begins_with "E#"``).
* ``EXPNAME#<ws>#<name> / EXPNAME``: the name claim. Written with ``attribute_not_exists`` in the same
  transaction as the experiment, so names are unique without read-then-write; also resolves a name.
* ``EXPLIST#<ws> / E#<i64 id>#META`` and ``.../E#<i64 id>#T#<key>``: a copy of every experiment and tag
  in one partition, written in the same transactions as the originals. ``search_experiments`` reads this
  partition strongly consistent, so a search right after a create/rename/delete/tag sees it; the gsi2
  collection (eventually consistent) is never used for correctness.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, already_exists, invalid, not_found
from serverless_mlflow.core.validation import parse_experiment_id
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import workspaces
from serverless_mlflow.store.artifact_locations import default_experiment_artifact_location
from serverless_mlflow.store.experiment_items import (
    ACTIVE,
    DEFAULT_EXPERIMENT_ID,
    DEFAULT_WORKSPACE,
    EXPERIMENT,
    EXPERIMENT_ENTRY,
    EXPERIMENT_ENTRY_TAG,
    EXPERIMENT_TAG,
    counter_key,
    entry_item,
    entry_tag_item,
    experiment_attributes,
    issue_schedule_item,
    meta_key,
    name_claim_item,
    name_claim_key,
    tag_item,
)
from serverless_mlflow.store.issue_schedule import SCHEDULE_TAG

# --- ids ----------------------------------------------------------------------------------------------


def normalize_experiment_id(experiment_id: str | int | None) -> str:
    """The SQL store's rule: ids are integers (``"007"`` is experiment 7); other strings are 400."""
    if experiment_id is None or experiment_id == "":
        experiment_id = DEFAULT_EXPERIMENT_ID  # SqlAlchemyStore._get_experiment: `experiment_id or "0"`
    return str(parse_experiment_id(experiment_id))


def _not_found(experiment_id: str) -> MlflowError:
    return not_found(f"No Experiment with id={experiment_id} exists")


def _in_key_range(experiment_id: str) -> bool:
    return keys.INT64_MIN <= int(experiment_id) <= keys.INT64_MAX


# --- reads ---------------------------------------------------------------------------------------------


def to_api(meta: dict[str, Any], tags: list[dict[str, Any]]) -> dict[str, Any]:
    """The Experiment message as MLflow's server writes it (ids as strings, times as numbers)."""
    out: dict[str, Any] = {
        "experiment_id": str(meta["experiment_id"]),
        "name": meta["name"],
        "artifact_location": meta.get("artifact_location", ""),
        "lifecycle_stage": meta["lifecycle_stage"],
        "last_update_time": int(meta["last_update_time"]),
        "creation_time": int(meta["creation_time"]),
    }
    if tags:
        out["tags"] = [{"key": t["key"], "value": t["value"]} for t in sorted(tags, key=lambda t: t["key"])]
    out["workspace"] = meta.get("workspace") or DEFAULT_WORKSPACE
    return out


def visible(meta: dict[str, Any]) -> bool:
    """Whether the request's workspace sees this experiment: with workspaces on, an experiment of another
    workspace does not exist for it (MLflow's workspace-aware store filters every query by workspace)."""
    if not request_workspace.enabled():
        return True
    return (meta.get("workspace") or DEFAULT_WORKSPACE) == request_workspace.current()


# experiment id -> its workspace. An experiment never changes workspace, so entries never go stale.
_WORKSPACE_OF: dict[str, str] = {}
_WORKSPACE_OF_LIMIT = 100_000


def in_request_workspace(experiment_id: str) -> bool:
    """Whether an existing experiment belongs to the request's workspace (always, with workspaces off): what an
    id-addressed child (a run, a trace) checks. One GetItem per experiment per container."""
    if not request_workspace.enabled():
        return True
    workspace = _WORKSPACE_OF.get(experiment_id)
    if workspace is None:
        try:
            in_range = _in_key_range(experiment_id)
        except (TypeError, ValueError):
            return True  # not an experiment id at all: the caller's own validation answers it
        item = table.get(meta_key(experiment_id), projection="#w", names={"#w": "workspace"}) if in_range else None
        if item is None:
            return False
        if len(_WORKSPACE_OF) >= _WORKSPACE_OF_LIMIT:
            _WORKSPACE_OF.clear()
        workspace = _WORKSPACE_OF[experiment_id] = item.get("workspace") or DEFAULT_WORKSPACE
    return workspace == request_workspace.current()


def read_experiment(experiment_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """E#META and its tags, one strongly consistent Query; None when the experiment does not exist."""
    if not _in_key_range(experiment_id):
        return None
    meta: dict[str, Any] | None = None
    tags: list[dict[str, Any]] = []
    for item in table.iter_query(**EXPERIMENT.query("with_tags", experiment_id=experiment_id)):
        if item["entity_type"] == EXPERIMENT.name:
            meta = item
        elif item["entity_type"] == EXPERIMENT_TAG.name:
            tags.append(item)
    return (meta, tags) if meta is not None and visible(meta) else None


def get_experiment(experiment_id: str | int | None) -> dict[str, Any]:
    """The experiment in API shape; 400 for a non-integer id, 404 RESOURCE_DOES_NOT_EXIST when missing."""
    normalized = normalize_experiment_id(experiment_id)
    found = read_experiment(normalized)
    if found is None:
        raise _not_found(normalized)
    return to_api(*found)


def get_experiment_item(experiment_id: str) -> dict[str, Any] | None:
    """Only E#META (a GetItem): enough to check existence, lifecycle and artifact location."""
    normalized = normalize_experiment_id(experiment_id)
    if not _in_key_range(normalized):
        return None
    item = table.get(meta_key(normalized))
    return item if item is not None and visible(item) else None


def get_experiment_meta(experiment_id: str | int | None) -> dict[str, Any]:
    """E#META as a dict (no tags); 400 bad id, 404 missing. Cheaper than ``get_experiment``."""
    normalized = normalize_experiment_id(experiment_id)
    item = get_experiment_item(normalized)
    if item is None:
        raise _not_found(normalized)
    return item


def check_experiment_active(experiment: dict[str, Any]) -> None:
    """SqlAlchemyStore._check_experiment_is_active (used by create_run, tags, logged models ...)."""
    if experiment["lifecycle_stage"] != ACTIVE:
        raise invalid(
            f"The experiment {experiment['experiment_id']} must be in the 'active' state. Current state is {experiment['lifecycle_stage']}."
        )


def get_active_experiment_meta(experiment_id: str | int | None) -> dict[str, Any]:
    """E#META of an existing, active experiment (404 / 400 otherwise)."""
    meta = get_experiment_meta(experiment_id)
    check_experiment_active(meta)
    return meta


def put_tag(experiment_id: str, key: str, value: str, user: str | None = None) -> None:
    """Set one tag of an active experiment: the tag and its collection copy in one transaction, conditioned on
    the experiment still being active (SqlAlchemyStore.set_experiment_tag); the key and value are the caller's
    to validate. Saving an issue-detection schedule (``user``: who saves it, whom its runs act as) also makes it
    due for the monitor's next pass, which anchors, retimes, pauses or drops it as MLflow's dispatcher does."""
    normalized = normalize_experiment_id(experiment_id)
    meta = get_active_experiment_meta(normalized)
    workspace = meta.get("workspace") or DEFAULT_WORKSPACE
    operations = [
        table.check_op(meta_key(normalized), "lifecycle_stage = :active", values={":active": ACTIVE}),
        table.put_op(tag_item(normalized, key, value)),
        table.put_op(entry_tag_item(normalized, key, value, workspace)),
    ]
    if key == SCHEDULE_TAG:
        operations.append(table.put_op(issue_schedule_item(normalized, workspace, clock.now_millis(), user)))
    try:
        table.transact(operations)
    except table.ConditionFailed:
        check_experiment_active(get_experiment_meta(normalized))
        raise


def experiment_id_for_name(name: str, workspace: str | None = None) -> str | None:
    workspace = workspace or request_workspace.current()
    claim = table.get(name_claim_key(name, workspace))
    return str(claim["experiment_id"]) if claim else None


def get_experiment_by_name(name: str, workspace: str | None = None) -> dict[str, Any] | None:
    """GetItem on the name claim, then the experiment; None when no experiment has that name."""
    workspace = workspace or request_workspace.current()
    experiment_id = experiment_id_for_name(name, workspace)
    if experiment_id is None:
        return None
    found = read_experiment(experiment_id)
    # A claim whose experiment is missing (a create that failed half-way cannot leave one: both are
    # in one transaction) would be a bug; answer "not found" rather than a 500.
    if found is None or found[0]["name"] != name:
        return None
    return to_api(*found)


def list_experiments_by_id(experiment_ids: set[str], workspace: str | None = None) -> list[dict[str, Any]]:
    """The named experiments with their tags, from the consistent collection (one Query each)."""
    workspace = workspace or request_workspace.current()
    out = []
    for experiment_id in sorted(experiment_ids, key=int):
        items = table.query(**EXPERIMENT_ENTRY.query("one", workspace=workspace, experiment_num=int(experiment_id)))
        metas = [item for item in items if item["entity_type"] == EXPERIMENT_ENTRY.name]
        if metas:
            out.append(to_api(metas[0], [item for item in items if item["entity_type"] == EXPERIMENT_ENTRY_TAG.name]))
    return out


def list_experiments(workspace: str | None = None) -> list[dict[str, Any]]:
    """Every experiment of the workspace with its tags, in id order, from the consistent collection."""
    workspace = workspace or request_workspace.current()
    experiments: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    current_tags: list[dict[str, Any]] = []
    current_num: str | None = None

    def flush() -> None:
        if current is not None:
            experiments.append(to_api(current, current_tags))

    for item in table.iter_query(**EXPERIMENT_ENTRY.query("collection", workspace=workspace)):
        # An entry (E#<num>#META) sorts before its tags (E#<num>#T#<key>), so it comes first.
        num = item["experiment_id"]
        if item["entity_type"] == EXPERIMENT_ENTRY.name:
            flush()
            current, current_tags, current_num = item, [], num
        elif item["entity_type"] == EXPERIMENT_ENTRY_TAG.name and num == current_num:
            current_tags.append(item)
        # A tag copy without its META (a >48-tag create that failed) is ignored.
    flush()
    return experiments


# --- create ------------------------------------------------------------------------------------------------

# A transaction holds 100 operations; create uses 3 plus 2 per tag, extra tags are written first.
_TAGS_IN_CREATE_TRANSACTION = 48


def _default_location(experiment_id: str, workspace: str) -> str:
    """With workspaces on, MLflow's workspace-aware store: the workspace's own artifact root, else the server's
    root under ``workspaces/<name>/`` (the default workspace too)."""
    if not request_workspace.enabled():
        return default_experiment_artifact_location(experiment_id)
    own_root = (workspaces.read(workspace) or {}).get("default_artifact_root")
    if own_root:
        return f"{own_root.rstrip('/')}/{experiment_id}"
    return default_experiment_artifact_location(f"{workspaces.WORKSPACES_DIR}/{workspace}/{experiment_id}")


def duplicate_name(name: str) -> MlflowError:
    # SqlAlchemyStore appends the database's IntegrityError text; ours names the same constraint.
    return already_exists(
        f"Experiment(name={name}) already exists. Error: UNIQUE constraint failed: experiments.workspace, experiments.name"
    )


def create_experiment(name: str, artifact_location: str | None, tags: dict[str, str], workspace: str | None = None) -> str:
    """Write a validated experiment: allocate an id from the CONFIG counter, write all items in one transaction.

    Shared by the experiments feature (create_experiment) and the gateway (an endpoint's usage-tracking
    experiment). Callers validate name, location and tags first; a taken name is RESOURCE_ALREADY_EXISTS.
    """
    workspace = workspace or request_workspace.current()
    # A cheap pre-check so a plain duplicate does not burn an id (sqlite reuses it, keep ids dense);
    # uniqueness itself comes from the claim condition below.
    if experiment_id_for_name(name, workspace) is not None:
        raise duplicate_name(name)

    counter = table.update(counter_key(), "ADD #v :one", names={"#v": "value"}, values={":one": 1}, return_values="UPDATED_NEW")
    assert counter is not None
    experiment_id = str(counter["value"])
    created = clock.now_millis()
    attributes = experiment_attributes(
        experiment_id, name, artifact_location or _default_location(experiment_id, workspace), created, workspace=workspace
    )
    meta = ENTITY["experiment"].item(attributes, **attributes, experiment_num=int(experiment_id))
    tag_items = [tag_item(experiment_id, key, value) for key, value in tags.items()]
    entry_tags = [entry_tag_item(experiment_id, key, value, workspace) for key, value in tags.items()]

    # Tags beyond what fits the transaction go first: invisible until E#META exists, removed on failure.
    early_tags = tag_items[_TAGS_IN_CREATE_TRANSACTION:] + entry_tags[_TAGS_IN_CREATE_TRANSACTION:]
    if early_tags:
        table.batch_write(puts=early_tags)
    operations = [
        table.put_op(name_claim_item(experiment_id, name, workspace), condition="attribute_not_exists(pk)"),
        table.put_op(meta, condition="attribute_not_exists(pk)"),
        table.put_op(entry_item(meta)),
        *[table.put_op(item) for item in tag_items[:_TAGS_IN_CREATE_TRANSACTION]],
        *[table.put_op(item) for item in entry_tags[:_TAGS_IN_CREATE_TRANSACTION]],
    ]
    if workspace != DEFAULT_WORKSPACE:
        operations.append(workspaces.exists_check(workspace))  # not while the workspace is being deleted
    try:
        # The token makes botocore's retry of a transaction whose answer was lost succeed again.
        table.transact(operations, token=f"create-experiment-{experiment_id}")
    except table.ConditionFailed:
        if experiment_id_for_name(name, workspace) == experiment_id:
            return experiment_id  # our own write, retried after a lost answer (no token support locally)
        if early_tags:
            table.batch_write(deletes=[table.key_of(item) for item in early_tags])
        if workspace != DEFAULT_WORKSPACE and workspaces.read(workspace) is None:
            raise workspaces.missing(workspace) from None
        raise duplicate_name(name) from None
    if SCHEDULE_TAG in tags:
        # Created with an issue-detection schedule: due for the monitor (after the transaction, which may be full).
        table.put(issue_schedule_item(experiment_id, workspace, created, None))
    return experiment_id
