"""Gateway endpoint tags and resource bindings (which MLflow resources, e.g. scorers, use an endpoint). Tags are
small items under the endpoint's sort-key prefix; bindings live in the workspace's bindings partition
(``schema.GW_BINDINGS``), written only while the endpoint exists. Bindings an earlier release wrote under their
endpoint (``LEGACY["gateway_endpoint_binding"]``) are still listed and deleted here."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, not_found
from serverless_mlflow.llm_gateway import records
from serverless_mlflow.llm_gateway.records import current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import LEGACY

from . import endpoints

BINDING_IN_GW = LEGACY["gateway_endpoint_binding"]


def set_tag(endpoint_id: str, key: str, value: str | None) -> None:
    endpoints.get_endpoint_item(endpoint_id)
    item = endpoints.TAG.item(
        {"key": key, "value": value, "endpoint_id": endpoint_id}, workspace=current_workspace(), endpoint_id=endpoint_id, key=key
    )
    try:
        table.transact([table.put_op(item), table.check_op(endpoints.endpoint_key(endpoint_id), "attribute_exists(pk)")])
    except table.ConditionFailed:
        raise endpoints.missing_endpoint(endpoint_id) from None


def delete_tag(endpoint_id: str, key: str) -> None:
    endpoints.get_endpoint_item(endpoint_id)
    table.delete(endpoints.TAG.key(workspace=current_workspace(), endpoint_id=endpoint_id, key=key))


def binding_json(item: dict[str, Any]) -> dict[str, Any]:
    out = {k: item[k] for k in ("endpoint_id", "resource_type", "resource_id")}
    out["created_at"] = int(item["created_at"])
    out["last_updated_at"] = int(item["last_updated_at"])
    for field in ("created_by", "last_updated_by", "display_name"):
        if item.get(field) is not None:
            out[field] = item[field]
    return out


def create_binding(endpoint_id: str, resource_type: str, resource_id: str, created_by: str | None) -> dict[str, Any]:
    endpoints.get_endpoint_item(endpoint_id)
    now = clock.now_millis()
    attributes = {
        "endpoint_id": endpoint_id,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "created_at": now,
        "last_updated_at": now,
        "created_by": created_by,
        "last_updated_by": created_by,
    }
    item = endpoints.BINDING.item(attributes, workspace=current_workspace(), **attributes)
    try:
        table.transact(
            [
                table.put_op(item, condition="attribute_not_exists(pk)"),
                table.check_op(endpoints.endpoint_key(endpoint_id), "attribute_exists(pk)"),
            ]
        )
    except table.ConditionFailed as failure:
        if failure.reasons[1] == "ConditionalCheckFailed":
            raise endpoints.missing_endpoint(endpoint_id) from None
        # MLflow's primary key (endpoint, type, resource) fails the insert with an IntegrityError (a 500 there);
        # bad input answers a 4xx here.
        raise MlflowError(
            f"The binding of {resource_type} '{resource_id}' to endpoint '{endpoint_id}' already exists", "RESOURCE_ALREADY_EXISTS"
        ) from None
    return binding_json(item)


def delete_binding(endpoint_id: str, resource_type: str, resource_id: str) -> None:
    names = {"workspace": current_workspace(), "endpoint_id": endpoint_id, "resource_type": resource_type, "resource_id": resource_id}
    for entity in (endpoints.BINDING, BINDING_IN_GW):
        try:
            table.delete(entity.key(**names), condition="attribute_exists(pk)")
            return
        except table.ConditionFailed:
            continue
    raise not_found(
        f"GatewayEndpointBinding not found (endpoint_id='{endpoint_id}', resource_type='{resource_type}', resource_id='{resource_id}')"
    )


def binding_items(endpoint_id: str | None) -> list[dict[str, Any]]:
    """The bindings of one endpoint (or of the workspace), in creation order, those of an earlier release too."""
    query = endpoints.BINDING.query("by_endpoint", workspace=current_workspace(), endpoint_id=endpoint_id)
    current = table.query(query.pk_value, query.sk_prefix)
    prefix = BINDING_IN_GW.sk.prefix({"endpoint_id": endpoint_id}) if endpoint_id else endpoints.ENDPOINT.sk_prefix()
    seen = {item["sk"] for item in current}
    earlier = [i for i in records.query_kind(prefix) if i.get("entity_type") == endpoints.BINDING.name and i["sk"] not in seen]
    return sorted(current + earlier, key=lambda item: (int(item.get("created_at", 0)), item["sk"]))


def list_bindings(endpoint_id: str | None, resource_type: str | None, resource_id: str | None) -> list[dict[str, Any]]:
    return [
        binding_json(item)
        for item in binding_items(endpoint_id)
        if (resource_type is None or item["resource_type"] == resource_type) and (resource_id is None or item["resource_id"] == resource_id)
    ]
