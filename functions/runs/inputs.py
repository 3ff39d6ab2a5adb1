"""Run inputs and outputs: log-inputs (datasets, model inputs), runs/outputs, and the legacy log-model.

Datasets follow ``SqlAlchemyStore._log_inputs_impl``: an experiment holds one dataset per (name,
digest) and the first logged copy wins; a run links a dataset once (the first input's tags win).
The run's input item carries a copy of the dataset so ``get_run`` stays one Query; schema and
profile larger than an item allows are split into ``#C<n>`` part items that sort right after it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from serverless_mlflow.core import clock, validation
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.index import run_summaries
from serverless_mlflow.request import NestedParseError, json_text, key_values_of, nested_error, to_int64, to_string
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import logging_order
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import RUN_INPUT, RUN_INPUT_PART, RUN_MODEL_INPUT, RUN_OUTPUT, RUN_TAG

DATASET = ENTITY["dataset"]
DATASET_PART = ENTITY["dataset_part"]

# Items are capped at 400 KB: dataset fields beyond this many UTF-8 bytes move to part items of at
# most PART_CHARS characters (<= 4 bytes each, so a part stays under 400 KB with its key).
INLINE_BYTES = 300_000
PART_CHARS = 90_000
LARGE_FIELDS = ("schema", "profile")
LOGGED_MODELS_HISTORY_TAG = "mlflow.log-model.history"


# --- parsing -------------------------------------------------------------------------------------------


def dataset_inputs_of(entries: list[Any]) -> list[dict[str, Any]]:
    """DatasetInput messages as ``DatasetInput.from_proto`` sees them: unset strings are "", unset
    schema/profile are None."""
    out = []
    for idx, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise nested_error(f"datasets[{idx}]", entry)
        raw = entry.get("dataset") or {}
        if not isinstance(raw, dict):
            raise nested_error(f"datasets[{idx}].dataset", raw)
        dataset: dict[str, Any] = {}
        for name in ("name", "digest", "source_type", "source", "schema", "profile"):
            value = raw.get(name)
            if value is None:
                dataset[name] = None if name in LARGE_FIELDS else ""
                continue
            try:
                dataset[name] = to_string(value)
            except NestedParseError:
                raise nested_error(f"datasets[{idx}].dataset.{name}", value) from None
        out.append({"dataset": dataset, "tags": key_values_of(entry.get("tags") or [], f"datasets[{idx}].tags")})
    return out


def model_outputs_of(entries: list[Any]) -> list[dict[str, Any]]:
    out = []
    for idx, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise nested_error(f"models[{idx}]", entry)
        try:
            model_id = to_string(entry.get("model_id", ""))
            step = to_int64(entry["step"]) if entry.get("step") is not None else 0
        except NestedParseError:
            raise nested_error(f"models[{idx}]", entry) from None
        out.append({"model_id": model_id, "step": step})
    return out


# --- large dataset fields ------------------------------------------------------------------------------


def split_large_fields(dataset: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """(inline dataset, [(field, slice), ...]): fields moved to parts are "" inline."""
    size = sum(len(v.encode("utf-8")) for v in dataset.values() if isinstance(v, str))
    if size <= INLINE_BYTES:
        return dataset, []
    inline = dict(dataset)
    parts: list[tuple[str, str]] = []
    for name in LARGE_FIELDS:
        value = dataset.get(name)
        if value:
            inline[name] = ""
            parts.extend((name, value[i : i + PART_CHARS]) for i in range(0, len(value), PART_CHARS))
    return inline, parts


def _join_parts(dataset: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    joined = dict(dataset)
    for part in parts:
        joined[part["field"]] = joined.get(part["field"], "") + part["data"]
    return joined


# --- experiment datasets (first copy wins) -------------------------------------------------------------


def _dataset_fields(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item.get(name) for name in ("name", "digest", "source_type", "source", "schema", "profile")}


def _read_dataset(experiment_id: str, item: dict[str, Any]) -> dict[str, Any]:
    dataset = _dataset_fields(item)
    if item.get("parts"):
        parts = DATASET_PART.query("parts", experiment_id=experiment_id, dataset_name=dataset["name"], dataset_digest=dataset["digest"])
        dataset = _join_parts(dataset, table.query(**parts))
    return dataset


def experiment_datasets(experiment_id: str, datasets: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The experiment's copy of each (name, digest): the stored one, or this one once claimed."""
    keys = [DATASET.key(experiment_id=experiment_id, dataset_name=d["name"], dataset_digest=d["digest"]) for d in datasets]
    found = {(item["name"], item["digest"]): item for item in table.batch_get(keys)}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for dataset in datasets:
        ident = (dataset["name"], dataset["digest"])
        if ident not in found:
            inline, parts = split_large_fields(dataset)
            values = {"experiment_id": experiment_id, "dataset_name": dataset["name"], "dataset_digest": dataset["digest"]}
            if parts:
                table.batch_write(
                    DATASET_PART.item({"field": name, "data": data}, **values, part=i) for i, (name, data) in enumerate(parts)
                )
            try:
                table.put(DATASET.item({**inline, "parts": len(parts)}, **values), "attribute_not_exists(pk)")
                out[ident] = dataset
                continue
            except table.ConditionFailed:
                # A concurrent log_inputs claimed it first: its copy wins.
                found[ident] = table.get(DATASET.key(**values)) or {}
        out[ident] = _read_dataset(experiment_id, found[ident])
    return out


# --- operations ----------------------------------------------------------------------------------------


def log_inputs(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    validation.validate_run_id(run_id)
    inputs = dataset_inputs_of(msg.get("datasets") or [])
    validation.validate_dataset_inputs(inputs)
    model_ids = [model_input_id(i, m) for i, m in enumerate(msg.get("models") or [])]
    run = store.get_active_run_item(run_id)
    experiment_id = run["experiment_id"]
    unique: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in inputs:
        unique.setdefault((entry["dataset"]["name"], entry["dataset"]["digest"]), entry)
    if unique:
        canonical = experiment_datasets(experiment_id, [entry["dataset"] for entry in unique.values()])
        input_keys = {
            ident: RUN_INPUT.key(experiment_id=experiment_id, run_id=run_id, dataset_name=ident[0], dataset_digest=ident[1])
            for ident in unique
        }
        linked = {(item["dataset"]["name"], item["dataset"]["digest"]) for item in table.batch_get(input_keys.values())}
        for (ident, entry), logged in zip(unique.items(), logging_order.stamps(len(unique)), strict=True):
            if ident not in linked:
                _link_input(experiment_id, run_id, canonical[ident], entry["tags"], logged)
    if model_ids:
        table.batch_write(
            RUN_MODEL_INPUT.item({"model_id": model_id}, experiment_id=experiment_id, run_id=run_id, model_id=model_id)
            for model_id in model_ids
        )
    if unique or model_ids:
        # Inputs carry no flag of their own: the run's (after they are written) keeps searches off its stale summary.
        run_summaries.flag_run(run)
    return {}


def model_input_id(idx: int, entry: Any) -> str:
    """A ModelInput message's model_id ("" when unset, as protobuf reads it)."""
    if not isinstance(entry, dict):
        raise nested_error(f"models[{idx}]", entry)
    try:
        return to_string(entry.get("model_id", ""))
    except NestedParseError:
        raise nested_error(f"models[{idx}].model_id", entry.get("model_id")) from None


def _link_input(experiment_id: str, run_id: str, dataset: dict[str, Any], tags: list[dict[str, Any]], logged: int) -> None:
    """Parts first, then the input item (conditional: the first link of a dataset to a run wins); ``logged``: its
    position among the run's inputs (``logging_order``)."""
    inline, parts = split_large_fields(dataset)
    values = {"experiment_id": experiment_id, "run_id": run_id, "dataset_name": dataset["name"], "dataset_digest": dataset["digest"]}
    attributes = {"dataset": {k: v for k, v in inline.items() if v is not None}, "tags": tags, logging_order.ATTRIBUTE: logged}
    item = RUN_INPUT.item(attributes, **values)
    if parts:
        table.batch_write(RUN_INPUT_PART.item({"field": name, "data": data}, **values, part=i) for i, (name, data) in enumerate(parts))
    try:
        table.put(item, "attribute_not_exists(pk)")
    except table.ConditionFailed:
        return
    _record_context(experiment_id, dataset, tags)


# The input tag MLflow's search-datasets reports as the dataset's context.
CONTEXT_TAG = "mlflow.data.context"


def _record_context(experiment_id: str, dataset: dict[str, Any], tags: list[dict[str, Any]]) -> None:
    """The experiment's dataset item collects the contexts its inputs were logged with (``contexts``, a string
    set; ``uncontexted`` for an input without one): search-datasets answers one summary per (dataset, context)
    as MLflow's join of datasets, inputs and input tags does, without reading every run's inputs."""
    context = next((tag["value"] for tag in tags if tag["key"] == CONTEXT_TAG), None)
    key = DATASET.key(experiment_id=experiment_id, dataset_name=dataset["name"], dataset_digest=dataset["digest"])
    if context:
        table.update(key, "ADD contexts :c", values={":c": {context}})
    else:
        table.update(key, "SET uncontexted = :t", values={":t": True})


def log_outputs(msg: dict[str, Any]) -> dict[str, Any]:
    run_id = msg.get("run_id", "")
    models = model_outputs_of(msg.get("models") or [])
    run = store.get_active_run_item(run_id)
    if models:
        table.batch_write(
            RUN_OUTPUT.item(model, experiment_id=run["experiment_id"], run_id=run_id, model_id=model["model_id"]) for model in models
        )
        run_summaries.flag_run(run)
    return {}


def _model_tags_dict(model: dict[str, Any]) -> dict[str, Any]:
    """``Model.from_dict(model).get_tags_dict()`` without mlflow: run_id, artifact_path,
    utc_time_created, model_uuid, then flavors without their "config"."""
    out: dict[str, Any] = {}
    if model.get("run_id") is not None:
        out["run_id"] = model["run_id"]
    if model.get("artifact_path") is not None:
        out["artifact_path"] = model["artifact_path"]
    created = model.get("utc_time_created") or datetime.fromtimestamp(clock.now_seconds(), UTC).replace(tzinfo=None)
    out["utc_time_created"] = str(created)
    out["model_uuid"] = model.get("model_uuid")
    flavors = model.get("flavors") or {}
    out["flavors"] = {
        name: ({k: v for k, v in config.items() if k != "config"} if isinstance(config, dict) else config)
        for name, config in flavors.items()
    }
    return out


def log_model(msg: dict[str, Any]) -> dict[str, Any]:
    """Legacy (MLflow 2) log-model: append the model's summary to the mlflow.log-model.history tag."""
    run_id = msg.get("run_id", "")
    model_json = msg.get("model_json", "")
    try:
        model = json_text.loads(model_json)
    except ValueError:
        raise invalid(f"Malformed model info. \n {model_json} \n is not a valid JSON.") from None
    if not isinstance(model, dict):
        raise invalid(f"Malformed model info. \n {model_json} \n is not a valid JSON.")
    missing = {"artifact_path", "flavors", "utc_time_created", "run_id"} - set(model)
    if missing:
        raise invalid(f"Model json is missing mandatory fields: {missing}")
    summary = _model_tags_dict(model)
    run = store.get_active_run_item(run_id)
    key = RUN_TAG.key(experiment_id=run["experiment_id"], run_id=run_id, key=LOGGED_MODELS_HISTORY_TAG)
    # Read-modify-write of one tag: optimistic, conditioned on the value we read.
    for _ in range(10):
        previous = table.get(key)
        history = json.loads(previous["value"]) if previous else []
        value = json.dumps([*history, summary])
        tag_key, tag_value = validation.validate_tag(LOGGED_MODELS_HISTORY_TAG, value)
        item = RUN_TAG.item(
            {"key": tag_key, "value": tag_value, logging_order.ATTRIBUTE: logging_order.stamps(1)[0]},
            experiment_id=run["experiment_id"],
            run_id=run_id,
            key=tag_key,
            changed_at=clock.now_millis(),
        )
        try:
            if previous:
                parts = table.as_update(item, logging_order.KEEP, {"#value": "value"}, {":old": previous["value"]})
                table.update(*parts, condition="#value = :old")
            else:
                table.put(item, "attribute_not_exists(pk)")
            return {}
        except table.ConditionFailed:
            continue
    raise invalid("Could not record the logged model: the run's log-model history kept changing.")
