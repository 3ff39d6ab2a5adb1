"""Gateway endpoint changes: create, update and delete an endpoint with its name claim and model mappings,
attach and detach one model definition. Every mapping moves its definition's ``endpoint_count`` in the same
transaction (see ``endpoints``)."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, already_exists, invalid
from serverless_mlflow.core.validation import parse_experiment_id
from serverless_mlflow.llm_gateway import records
from serverless_mlflow.llm_gateway.records import current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.store import experiments

from . import endpoint_bindings, endpoints

PRIMARY, FALLBACK = "PRIMARY", "FALLBACK"
# mlflow_tags: the experiment an endpoint traces to says where it comes from.
GATEWAY_EXPERIMENT_TAGS = ("mlflow.experiment.sourceType", "mlflow.experiment.sourceId", "mlflow.experiment.isGateway")


def _name_taken(name: str) -> MlflowError:
    # MLflow lets the database's IntegrityError through, which its server answers as 400 BAD_REQUEST.
    return MlflowError(
        f"Endpoint with name '{name}' already exists. Error: UNIQUE constraint failed: endpoints.workspace, endpoints.name", "BAD_REQUEST"
    )


def _mapping_item(endpoint_id: str, config: dict[str, Any], position: int, now: int, created_by: str | None) -> dict[str, Any]:
    attributes = {
        "mapping_id": f"m-{uuid.uuid4().hex}",
        "endpoint_id": endpoint_id,
        "model_definition_id": config["model_definition_id"],
        "weight": str(float(config.get("weight", 1.0))),  # floats are stored as text
        "linkage_type": config["linkage_type"],
        "fallback_order": config.get("fallback_order"),
        "position": position,
        "created_at": now,
        "created_by": created_by,
    }
    return endpoints.MAPPING.item(attributes, workspace=current_workspace(), **attributes)


def _count_updates(deltas: Counter[str]) -> list[dict[str, Any]]:
    """One update per model definition: ``endpoint_count`` moves by the net change; attaching needs it to exist."""
    ops = []
    for model_definition_id, delta in sorted(deltas.items()):
        if delta == 0:
            continue
        ops.append(
            table.update_op(
                records.model_definition_key(model_definition_id),
                "ADD endpoint_count :delta",
                values={":delta": delta},
                condition="attribute_exists(pk)",
            )
        )
    return ops


def _fallback_json(configs: list[dict[str, Any]], fallback: dict[str, Any] | None, force: bool) -> str | None:
    fallback_ids = [c["model_definition_id"] for c in configs if c["linkage_type"] == FALLBACK]
    if not (force or fallback or fallback_ids):
        return None
    fallback = fallback or {}
    return json.dumps(
        {"strategy": fallback.get("strategy"), "max_attempts": fallback.get("max_attempts"), "model_definition_ids": fallback_ids}
    )


def _require_definitions(configs: list[dict[str, Any]]) -> None:
    ids = {c["model_definition_id"] for c in configs}
    found = {item["model_definition_id"] for item in table.batch_get([records.model_definition_key(i) for i in sorted(ids)])}
    if missing := ids - found:
        raise MlflowError(f"Model definitions not found: {', '.join(missing)}", "RESOURCE_DOES_NOT_EXIST")


def _gateway_experiment(name: str, endpoint_id: str) -> str:
    """MLflow's ``_get_or_create_experiment_id("gateway/<name>")`` with the gateway source tags."""
    experiment_name = f"gateway/{name}"
    tags = dict(zip(GATEWAY_EXPERIMENT_TAGS, ("GATEWAY", endpoint_id, "true"), strict=True))
    try:
        return experiments.create_experiment(experiment_name, None, tags)
    except MlflowError as error:
        if error.error_code == "RESOURCE_ALREADY_EXISTS":
            existing = experiments.experiment_id_for_name(experiment_name)
            if existing is not None:
                return existing
        raise


def _transact(operations: list[dict[str, Any]]) -> None:
    if len(operations) > table.TRANSACTION_LIMIT:
        raise invalid(f"An endpoint change is limited to {table.TRANSACTION_LIMIT - 4} model configurations.")
    table.transact(operations)


def create_endpoint(
    name: str,
    configs: list[dict[str, Any]],
    created_by: str | None,
    routing_strategy: str | None,
    fallback: dict[str, Any] | None,
    experiment_id: str | None,
    usage_tracking: bool,
) -> dict[str, Any]:
    if not configs:
        raise invalid("Endpoint must have at least one model configuration")
    _require_definitions(configs)
    endpoint_id = f"e-{uuid.uuid4().hex}"
    if usage_tracking and experiment_id is None:
        experiment_id = _gateway_experiment(name, endpoint_id)
    now = clock.now_millis()
    attributes = {
        "endpoint_id": endpoint_id,
        "name": name,
        "created_at": now,
        "last_updated_at": now,
        "created_by": created_by,
        "last_updated_by": created_by,
        "routing_strategy": routing_strategy,
        "fallback_config": _fallback_json(configs, fallback, False),
        "experiment_id": str(parse_experiment_id(experiment_id)) if experiment_id is not None else None,
        "usage_tracking": usage_tracking,
    }
    endpoint = endpoints.ENDPOINT.item(attributes, workspace=current_workspace(), endpoint_id=endpoint_id)
    mappings = [_mapping_item(endpoint_id, config, i, now, created_by) for i, config in enumerate(configs)]
    if len({(m["model_definition_id"], m["linkage_type"]) for m in mappings}) < len(mappings):
        raise already_exists("A model definition is attached to the endpoint twice with the same linkage type")
    claim = endpoints.ENDPOINT_NAME.item({"endpoint_id": endpoint_id}, workspace=current_workspace(), name=name)
    counts = _count_updates(Counter(c["model_definition_id"] for c in configs))
    try:
        _transact(
            [
                table.put_op(claim, condition="attribute_not_exists(pk)"),
                table.put_op(endpoint, condition="attribute_not_exists(pk)"),
                *(table.put_op(m) for m in mappings),
                *counts,
            ]
        )
    except table.ConditionFailed as failure:
        if failure.reasons and failure.reasons[0] == "ConditionalCheckFailed":
            raise _name_taken(name) from None
        raise MlflowError("Model definitions not found: a model definition was deleted meanwhile", "RESOURCE_DOES_NOT_EXIST") from None
    return endpoints.get_endpoint(endpoint_id)


def update_endpoint(
    endpoint_id: str,
    name: str | None,
    configs: list[dict[str, Any]] | None,
    updated_by: str | None,
    routing_strategy: str | None,
    fallback: dict[str, Any] | None,
    experiment_id: str | None,
    usage_tracking: bool | None,
) -> dict[str, Any]:
    items = endpoints.endpoint_items(endpoint_id)
    grouped = endpoints.group_items(items).get(endpoint_id)
    if grouped is None:
        raise endpoints.missing_endpoint(endpoint_id)
    endpoint = dict(grouped["endpoint"])
    old_name = endpoint["name"]
    if name is not None:
        endpoint["name"] = name
    if usage_tracking is not None:
        endpoint["usage_tracking"] = usage_tracking
    if usage_tracking and experiment_id is None and endpoint.get("experiment_id") is None:
        experiment_id = _gateway_experiment(endpoint["name"], endpoint_id)
    if experiment_id is not None:
        endpoint["experiment_id"] = str(parse_experiment_id(experiment_id))
    if routing_strategy is not None:
        endpoint["routing_strategy"] = routing_strategy
    operations: list[dict[str, Any]] = []
    now = clock.now_millis()
    if configs is not None:
        for model_definition_id in sorted({c["model_definition_id"] for c in configs}):
            records.get_model_definition(model_definition_id)
        old = grouped["mappings"]
        new = [_mapping_item(endpoint_id, config, i, now, updated_by) for i, config in enumerate(configs)]
        deltas = Counter(c["model_definition_id"] for c in configs)
        deltas.subtract(Counter(m["model_definition_id"] for m in old))
        new_keys = {(m["pk"], m["sk"]) for m in new}
        operations += [table.delete_op(table.key_of(m)) for m in old if (m["pk"], m["sk"]) not in new_keys]
        operations += [table.put_op(m) for m in new]
        operations += _count_updates(deltas)
        endpoint["fallback_config"] = _fallback_json(configs, fallback, True)
    elif fallback is not None:
        existing = json.loads(endpoint["fallback_config"]) if endpoint.get("fallback_config") else {}
        endpoint["fallback_config"] = json.dumps(
            {
                "strategy": fallback.get("strategy"),
                "max_attempts": fallback.get("max_attempts"),
                "model_definition_ids": existing.get("model_definition_ids", []),
            }
        )
    endpoint["last_updated_at"] = now
    if updated_by:
        endpoint["last_updated_by"] = updated_by
    # The endpoint put is conditioned on the version read: a concurrent update retries nothing silently.
    operations.insert(
        0, table.put_op(endpoint, condition="last_updated_at = :read", values={":read": grouped["endpoint"]["last_updated_at"]})
    )
    if endpoint["name"] != old_name:
        operations += [
            table.delete_op(endpoints.ENDPOINT_NAME.key(workspace=current_workspace(), name=old_name)),
            table.put_op(
                endpoints.ENDPOINT_NAME.item({"endpoint_id": endpoint_id}, workspace=current_workspace(), name=endpoint["name"]),
                condition="attribute_not_exists(pk)",
            ),
        ]
    try:
        _transact(operations)
    except table.ConditionFailed as failure:
        if failure.reasons[0] == "ConditionalCheckFailed":
            raise MlflowError("The endpoint was changed concurrently; retry the update.", "ABORTED") from None
        if endpoint["name"] != old_name and failure.reasons[-1] == "ConditionalCheckFailed":
            raise _name_taken(endpoint["name"]) from None
        raise MlflowError("Model definitions not found: a model definition was deleted meanwhile", "RESOURCE_DOES_NOT_EXIST") from None
    return endpoints.get_endpoint(endpoint_id)


def delete_endpoint(endpoint_id: str) -> None:
    """The endpoint, its name claim and mappings (releasing their definitions) at once; tags, bindings and
    guardrail configs after (they are only reachable through the endpoint), as MLflow's cascade removes them."""
    items = endpoints.endpoint_items(endpoint_id)
    grouped = endpoints.group_items(items).get(endpoint_id)
    if grouped is None:
        raise endpoints.missing_endpoint(endpoint_id)
    endpoint = grouped["endpoint"]
    mappings = grouped["mappings"]
    deltas = Counter(
        {model_definition_id: -count for model_definition_id, count in Counter(m["model_definition_id"] for m in mappings).items()}
    )
    try:
        _transact(
            [
                table.delete_op(endpoints.endpoint_key(endpoint_id), condition="attribute_exists(pk)"),
                table.delete_op(endpoints.ENDPOINT_NAME.key(workspace=current_workspace(), name=endpoint["name"])),
                *(table.delete_op(table.key_of(m)) for m in mappings),
                *_count_updates(deltas),
            ]
        )
    except table.ConditionFailed:
        raise endpoints.missing_endpoint(endpoint_id) from None
    guardrail_configs = [item for item in items if item.get("entity_type") == endpoints.GUARDRAIL_CONFIG.name]
    bindings = [table.key_of(item) for item in endpoint_bindings.binding_items(endpoint_id)]
    rest = [table.key_of(item) for item in grouped["tags"] + guardrail_configs] + bindings
    if rest:
        table.batch_write(deletes=rest)


def attach_model(endpoint_id: str, config: dict[str, Any], created_by: str | None) -> dict[str, Any]:
    endpoints.get_endpoint_item(endpoint_id)
    definition = records.get_model_definition(config["model_definition_id"])
    now = clock.now_millis()
    # Position: the attach time, after the 0..n positions of the mappings the endpoint was created with.
    mapping = _mapping_item(endpoint_id, config, now, now, created_by)
    updates = {":now": now}
    expression = "SET last_updated_at = :now"
    if created_by:
        expression += ", last_updated_by = :by"
        updates[":by"] = created_by
    try:
        table.transact(
            [
                table.put_op(mapping, condition="attribute_not_exists(pk)"),
                table.update_op(endpoints.endpoint_key(endpoint_id), expression, values=updates, condition="attribute_exists(pk)"),
                *_count_updates(Counter({config["model_definition_id"]: 1})),
            ]
        )
    except table.ConditionFailed as failure:
        if failure.reasons[0] == "ConditionalCheckFailed":
            raise already_exists(
                f"Model definition '{config['model_definition_id']}' is already attached to endpoint '{endpoint_id}'"
            ) from None
        if failure.reasons[1] == "ConditionalCheckFailed":
            raise endpoints.missing_endpoint(endpoint_id) from None
        raise records.missing("GatewayModelDefinition", "model_definition_id", config["model_definition_id"]) from None
    return endpoints.mapping_json(mapping, {definition["model_definition_id"]: records.model_definitions_json([definition])[0]})


def detach_model(endpoint_id: str, model_definition_id: str) -> None:
    """Every linkage of that definition to the endpoint (MLflow deletes the first it finds; it allows one per type)."""
    items = table.query(records.partition(), endpoints.MAPPING.sk_prefix(endpoint_id=endpoint_id, model_definition_id=model_definition_id))
    mapping = next((m for m in items if m.get("entity_type") == endpoints.MAPPING.name), None)
    if mapping is None:
        if table.get(endpoints.endpoint_key(endpoint_id)) is None:
            raise endpoints.missing_endpoint(endpoint_id)
        raise MlflowError(
            f"Model definition '{model_definition_id}' is not attached to endpoint '{endpoint_id}'", "RESOURCE_DOES_NOT_EXIST"
        )
    try:
        table.transact(
            [
                table.delete_op(table.key_of(mapping), condition="attribute_exists(pk)"),
                *_count_updates(Counter({model_definition_id: -1})),
            ]
        )
    except table.ConditionFailed:
        raise MlflowError(
            f"Model definition '{model_definition_id}' is not attached to endpoint '{endpoint_id}'", "RESOURCE_DOES_NOT_EXIST"
        ) from None
