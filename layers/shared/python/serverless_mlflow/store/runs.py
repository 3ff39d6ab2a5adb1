"""Run items shared by every feature that touches runs (runs, artifacts, registry, experiments).

A run lives in its experiment's partition: ``R#<run_id>`` is the run (info) and ``R#<run_id>#<kind>...`` are its
params, tags, inputs, outputs and the indexer's digest of its latest metrics, so one strongly consistent Query
returns a whole run. The latest metric values themselves live in the run's own partition (``RUN#<run_id>``,
``run_metrics``): they are read there only while the run carries a ``run_metrics_marker`` (changed since the
indexer's last pass) or its digest does not fit one item. Metric history lives elsewhere and is not read here.
``RUN#<run_id>`` also holds the locator, which maps a run id to its experiment; runs never move, so warm Lambdas
keep that mapping in ``LOCATOR_CACHE``.

This module also renders runs as MLflow's server answers them (``Run.to_proto()`` through
``message_to_json``), so every feature returns the same JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import clock, parallel
from serverless_mlflow.core.errors import MlflowError, not_found
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, SK
from serverless_mlflow.store import experiments, logging_order, run_metrics

RUN = ENTITY["run"]
RUN_LOCATOR = ENTITY["run_locator"]
LATEST_METRIC = ENTITY["latest_metric"]
PARAM = ENTITY["param"]
RUN_TAG = ENTITY["run_tag"]
RUN_INPUT = ENTITY["run_input"]
RUN_INPUT_PART = ENTITY["run_input_part"]
RUN_MODEL_INPUT = ENTITY["run_model_input"]
RUN_OUTPUT = ENTITY["run_output"]

ACTIVE = "active"
DELETED = "deleted"
RUN_NAME_TAG = "mlflow.runName"
SQL_MAX_DOUBLE = run_metrics.SQL_MAX_DOUBLE
RUN_ID_LENGTH = 32
_LATEST_READ_WORKERS = 16
# A run whose latest values of more keys than this were read already reads its partition whole (Queries cost too).
_KNOWN_KEYS_READ_AROUND = 2

# run id -> experiment id. Runs never move between experiments, so entries never go stale.
LOCATOR_CACHE: dict[str, str] = {}
_LOCATOR_CACHE_LIMIT = 100_000
# A run id we could have generated (uuid4 hex); anything else cannot be in the table.
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def run_not_found(run_id: str) -> MlflowError:
    return not_found(f"Run with id={run_id} not found")


def run_not_active(run_id: str, lifecycle_stage: str) -> MlflowError:
    return MlflowError(
        f"The run {run_id} must be in the 'active' state. Current state is {lifecycle_stage}.",
        "INVALID_PARAMETER_VALUE",
    )


# --- locating a run --------------------------------------------------------------------------


def find_experiment_id(run_id: str) -> str | None:
    """The experiment holding ``run_id``, or None (also for a run of another workspace's experiment, which does
    not exist for this request as in MLflow's workspace-aware store). One consistent GetItem unless cached."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        return None
    experiment_id = LOCATOR_CACHE.get(run_id)
    if experiment_id is None:
        item = table.get(RUN_LOCATOR.key(run_id=run_id))
        if item is None:
            return None
        experiment_id = item["experiment_id"]
        remember_location(run_id, experiment_id)
    return experiment_id if experiments.in_request_workspace(experiment_id) else None


def remember_location(run_id: str, experiment_id: str) -> None:
    if len(LOCATOR_CACHE) >= _LOCATOR_CACHE_LIMIT:
        LOCATOR_CACHE.clear()
    LOCATOR_CACHE[run_id] = experiment_id


def locate_run(run_id: str) -> str:
    """The experiment id of a run; 404 RESOURCE_DOES_NOT_EXIST as MLflow answers for unknown runs."""
    experiment_id = find_experiment_id(run_id)
    if experiment_id is None:
        raise run_not_found(run_id)
    return experiment_id


def get_run_item(run_id: str) -> dict[str, Any]:
    """The run (info) item alone: locator (cached) + one consistent GetItem."""
    experiment_id = locate_run(run_id)
    item = table.get(RUN.key(experiment_id=experiment_id, run_id=run_id))
    if item is None:
        raise run_not_found(run_id)
    return item


def get_active_run_item(run_id: str) -> dict[str, Any]:
    item = get_run_item(run_id)
    if item["lifecycle_stage"] != ACTIVE:
        raise run_not_active(run_id, item["lifecycle_stage"])
    return item


# --- a run with its data -------------------------------------------------------------------------


@dataclass
class RunView:
    """One run as read from its ``R#<run_id>`` range (its latest metrics from its partition when needed)."""

    info: dict[str, Any]
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    dataset_inputs: list[dict[str, Any]] = field(default_factory=list)
    model_inputs: list[str] = field(default_factory=list)
    model_outputs: list[dict[str, Any]] = field(default_factory=list)
    # The range's own latest values: layout-1 items and the digest's entries (``metrics`` is the newest of them).
    range_metrics: list[dict[str, Any]] = field(default_factory=list)
    marked: bool = False  # a run_metrics_marker: the digest may be stale
    digest_oversize: bool = False

    @property
    def run_id(self) -> str:
        return self.info["run_id"]

    @property
    def metrics_exact(self) -> bool:
        """Whether the range alone gives the run's latest metrics (else read ``RUN#<run>`` too: ``with_latest``)."""
        return not self.marked and not self.digest_oversize

    def with_latest(self, latest: list[dict[str, Any]]) -> RunView:
        """The view with its latest metrics from the run's partition (merged with the range's layout-1 items)."""
        self.metrics = _newest_in_order([*self.range_metrics, *latest])
        self.marked = self.digest_oversize = False
        return self


def run_id_of_sk(sk: str) -> str:
    """Every item of a run's range starts ``R#<32 hex>``: the run id is a fixed slice."""
    return sk[2 : 2 + RUN_ID_LENGTH]


def assemble_runs(items: Iterable[dict[str, Any]]) -> list[RunView]:
    """Group the items of one or more ``R#<run>`` ranges (in key order) into runs, in key order.

    Data items whose run item is missing (a create that never completed cannot leave any, but a
    reader racing a hard delete could) are ignored.
    """
    runs: dict[str, RunView] = {}
    inputs_by_sk: dict[str, dict[str, Any]] = {}
    # Each run's param and tag items, read in key order, put in logging order below (and its inputs' positions).
    data_items: dict[str, dict[str, list[dict[str, Any]]]] = {}
    input_positions: dict[int, int] = {}
    for item in items:
        kind = item.get(ENTITY_TYPE)
        run_id = run_id_of_sk(item[SK])
        if kind == "run":
            runs[run_id] = RunView(info=item)
            continue
        view = runs.get(run_id)
        if view is None:
            continue
        if kind == "latest_metric":  # layout 1: in the range
            view.range_metrics.append(item)
        elif kind == "run_metrics_digest":
            entries = run_metrics.digested(item)
            view.digest_oversize = entries is None
            view.range_metrics.extend(entries or [])
        elif kind == "run_metrics_marker":
            view.marked = True
        elif kind in ("param", "run_tag"):
            data_items.setdefault(run_id, {}).setdefault(kind, []).append(item)
        elif kind == "run_input":
            entry = {"dataset": dict(item["dataset"]), "tags": list(item.get("tags") or [])}
            inputs_by_sk[item[SK]] = entry
            input_positions[id(entry)] = logging_order.position(item)
            view.dataset_inputs.append(entry)
        elif kind == "run_input_part":
            # Parts sort right after their input item (its key is their prefix): append in order.
            parent = inputs_by_sk.get(item[SK][: item[SK].rindex("#C")])
            if parent is not None:
                dataset = parent["dataset"]
                dataset[item["field"]] = dataset.get(item["field"], "") + item["data"]
        elif kind == "run_model_input":
            view.model_inputs.append(item["model_id"])
        elif kind == "run_output":
            view.model_outputs.append({"model_id": item["model_id"], "step": item.get("step", 0)})
    for run_id, view in runs.items():
        view.metrics = _newest_in_order(view.range_metrics)
        found = data_items.get(run_id, {})
        view.params = {item["key"]: item.get("value", "") for item in logging_order.ordered(found.get("param", []))}
        view.tags = {item["key"]: item.get("value", "") for item in logging_order.ordered(found.get("run_tag", []))}
        view.dataset_inputs.sort(key=lambda entry: input_positions[id(entry)])
    return list(runs.values())


def _newest_in_order(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Key -> latest value, keys in the order they were first logged (MLflow's), then by key."""
    newest = run_metrics.newest(items)
    return {item["key"]: item for item in logging_order.ordered(newest.values())}


def run_range(experiment_id: str, run_id: str) -> list[dict[str, Any]]:
    """The run item and its data items (``R#<run_id>`` and ``R#<run_id>#...``): ONE consistent Query."""
    return table.query(**RUN.query("with_data", experiment_id=experiment_id, run_id=run_id))


def complete_metrics(views: list[RunView], known: dict[str, dict[str, dict[str, Any] | None]] | None = None) -> list[RunView]:
    """Views whose range does not give their latest metrics (marked, oversize digest) get them from their
    partitions (one Query per such run, in parallel).

    ``known``: run id -> metric key -> its latest item (None: the run lacks it) the caller read already; a run
    with a few known keys reads the rest of its partition around them (one Query more per key) instead of reading
    them again."""
    wanting = [view for view in views if not view.metrics_exact]

    def read(view: RunView) -> list[dict[str, Any]]:
        have = (known or {}).get(view.run_id) or {}
        if not have or len(have) > _KNOWN_KEYS_READ_AROUND:
            return run_metrics.read_latest(view.run_id)
        return [*run_metrics.read_latest_except(view.run_id, have), *(item for item in have.values() if item is not None)]

    if wanting:
        latest = parallel.parallel_map(read, wanting, workers=_LATEST_READ_WORKERS)
        for view, items in zip(wanting, latest, strict=True):
            view.with_latest(items)
    return views


def read_run_in(experiment_id: str, run_id: str) -> RunView | None:
    """A run of a known experiment with its data (None if it does not exist): one Query of its range, and one
    of its partition while its metrics wait for the indexer."""
    runs = complete_metrics(assemble_runs(run_range(experiment_id, run_id)))
    return runs[0] if runs else None


def read_runs_of_items(run_items: list[dict[str, Any]]) -> dict[str, RunView]:
    """Runs whose run item the caller has read (consistently) already, with their data, by run id: the rest of each
    run's range (one Query each, in parallel: the run item is not read again) and ``complete_metrics``'s reads."""

    def read(item: dict[str, Any]) -> list[RunView]:
        data = table.query(**RUN.query("data", experiment_id=item["experiment_id"], run_id=item["run_id"]))
        return assemble_runs([item, *data])

    views = [view for found in parallel.parallel_map(read, run_items, workers=_LATEST_READ_WORKERS) for view in found]
    return {view.run_id: view for view in complete_metrics(views)}


def read_run(run_id: str) -> RunView:
    """A run with its data: locator (cached) + ONE consistent Query over ``R#<run_id>`` (+ ``read_run_in``'s)."""
    view = read_run_in(locate_run(run_id), run_id)
    if view is None:
        raise run_not_found(run_id)
    return view


def get_run(run_id: str) -> dict[str, Any]:
    """The ``run`` of MLflow's GetRun response: ``{info, data, inputs, outputs}``."""
    return run_json(read_run(run_id))


def experiment_runs(experiment_id: str) -> list[RunView]:
    """Every run of an experiment with its data: one paged consistent Query over ``R#`` (and the partitions of
    the runs whose metrics wait for the indexer)."""
    return complete_metrics(assemble_runs(table.iter_query(**RUN.query("with_data", experiment_id=experiment_id))))


# --- JSON as MLflow's server writes it ----------------------------------------------------------------


def metric_value_json(value: float, is_nan: bool = False) -> float | str:
    """What MLflow's server answers for a stored metric value: NaN as "NaN", +-inf as +-max double."""
    if is_nan or math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return SQL_MAX_DOUBLE if value > 0 else -SQL_MAX_DOUBLE
    return value


def metric_json(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": item["key"],
        "value": metric_value_json(float(item["value"]), bool(item.get("is_nan"))),
        "timestamp": item["timestamp"],
        "step": item["step"],
    }


def run_info_json(item: dict[str, Any]) -> dict[str, Any]:
    """RunInfo in proto field order; unset optional fields are left out as proto2 JSON does."""
    info: dict[str, Any] = {"run_uuid": item["run_id"], "experiment_id": item["experiment_id"]}
    for name in ("run_name", "user_id", "status", "start_time", "end_time", "artifact_uri", "lifecycle_stage"):
        if item.get(name) is not None:
            info[name] = item[name]
    info["run_id"] = item["run_id"]
    return info


def dataset_json(dataset: dict[str, Any]) -> dict[str, Any]:
    out = {name: dataset[name] for name in ("name", "digest", "source_type", "source")}
    for name in ("schema", "profile"):
        if dataset.get(name) is not None:
            out[name] = dataset[name]
    return out


def run_json(view: RunView, inputs: bool = True, outputs: bool = True, model_inputs: bool = True) -> dict[str, Any]:
    """``model_inputs=False``: as search_runs answers (MLflow's store fills only dataset inputs there)."""
    data: dict[str, Any] = {}
    if view.metrics:
        data["metrics"] = [metric_json(m) for m in view.metrics.values()]
    if view.params:
        data["params"] = [{"key": k, "value": v} for k, v in view.params.items()]
    if view.tags:
        data["tags"] = [{"key": k, "value": v} for k, v in view.tags.items()]
    out: dict[str, Any] = {"info": run_info_json(view.info), "data": data}
    if inputs:
        run_inputs: dict[str, Any] = {}
        if view.dataset_inputs:
            run_inputs["dataset_inputs"] = [
                {**({"tags": entry["tags"]} if entry["tags"] else {}), "dataset": dataset_json(entry["dataset"])}
                for entry in view.dataset_inputs
            ]
        if view.model_inputs and model_inputs:
            run_inputs["model_inputs"] = [{"model_id": model_id} for model_id in view.model_inputs]
        out["inputs"] = run_inputs
    if outputs:
        out["outputs"] = {"model_outputs": view.model_outputs} if view.model_outputs else {}
    return out


# --- run items and their index keys -----------------------------------------------------------------


def run_item(attributes: dict[str, Any]) -> dict[str, Any]:
    """A complete run item (keys + LSI keys) from its attributes."""
    return RUN.item({k: v for k, v in attributes.items() if v is not None}, **attributes)


def run_update(current: dict[str, Any], changes: dict[str, Any], remove: Iterable[str] = ()) -> tuple[str, dict[str, str], dict[str, Any]]:
    """An UpdateItem expression that sets ``changes`` and re-derives the index keys they feed.

    Only the changed attributes (and the index keys built from them plus immutable ones such as
    start_time and run_id) are written, so concurrent updates of other attributes are not lost.
    """
    merged = {**current, **changes, "last_update_time": changes.get("last_update_time", clock.now_millis())}
    index_values = RUN.index_keys(**merged)
    sets: dict[str, Any] = {"last_update_time": merged["last_update_time"], **changes}
    touched = set(changes) | {"last_update_time"}
    for index_name, (_, sk_template) in RUN.indexes.items():
        if index_name.startswith("lsi") and touched & set(sk_template.fields):
            attribute = f"{index_name}sk"
            if attribute in index_values:
                sets[attribute] = index_values[attribute]
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses = []
    for i, (name, value) in enumerate(sets.items()):
        names[f"#a{i}"] = name
        values[f":v{i}"] = value
        clauses.append(f"#a{i} = :v{i}")
    expression = "SET " + ", ".join(clauses)
    removed = [name for name in remove if name not in sets]
    if removed:
        for j, name in enumerate(removed):
            names[f"#r{j}"] = name
        expression += " REMOVE " + ", ".join(f"#r{j}" for j in range(len(removed)))
    return expression, names, values


def set_lifecycle(run: dict[str, Any], stage: str, condition_active: bool = False) -> None:
    """Delete (stage=deleted, deleted_time=now) or restore (active, no deleted_time) one run."""
    if stage == DELETED:
        expression, names, values = run_update(run, {"lifecycle_stage": DELETED, "deleted_time": clock.now_millis()})
    else:
        expression, names, values = run_update(run, {"lifecycle_stage": ACTIVE}, remove=("deleted_time",))
    condition = "attribute_exists(pk)"
    if condition_active:
        names["#lc"] = "lifecycle_stage"
        values[":active"] = ACTIVE
        condition += " AND #lc = :active"
    table.update(RUN.key(experiment_id=run["experiment_id"], run_id=run["run_id"]), expression, names, values, condition=condition)


def set_experiment_runs_lifecycle(experiment_id: str, stage: str, only_stage: str | None = None) -> int:
    """What MLflow's delete/restore_experiment do to runs: every run of the experiment is marked
    deleted (with a new deleted_time) or active. Returns how many runs were updated.

    Reads the run items from LSI2 (run items only, no data), or only the runs in ``only_stage`` from
    LSI1, and updates each with UpdateItem, so a concurrent update of another attribute of a run is
    not overwritten.
    """
    if only_stage is None:
        runs = table.query(**RUN.query("by_start_time", experiment_id=experiment_id))
    else:
        runs = table.query(**RUN.query("by_lifecycle", experiment_id=experiment_id, lifecycle_stage=only_stage))
    runs = [run for run in runs if run.get(ENTITY_TYPE) == "run"]
    if not runs:
        return 0
    parallel.parallel_map(lambda run: set_lifecycle(run, stage), runs)
    return len(runs)
