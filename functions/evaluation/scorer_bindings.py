"""A scorer judging with a gateway endpoint is bound to it, as SqlAlchemyStore.register_scorer binds it: the
endpoint's "Used by" in the UI lists the bindings (``resource_type`` ``scorer``, ``resource_id`` the scorer id,
``display_name`` its name). Registering a version on another endpoint moves the binding there (MLflow deletes the
scorer's bindings and adds one), a version without a gateway model keeps it, and deleting the scorer removes it.

The binding lives in the workspace's bindings partition (``schema.GW_BINDINGS``), outside the gateway's
configuration, which this function may not write; the scorer item remembers the endpoint it is bound to
(``bound_endpoint_id``), so moving or removing the binding needs no lookup. A binding the release before wrote
under its endpoint stays there until the endpoint or the binding is deleted through the gateway API.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

ENDPOINT = ENTITY["gateway_endpoint"]
BINDING = ENTITY["gateway_endpoint_binding"]
SCORER = "scorer"  # MLflow's GatewayResourceType.SCORER


def binding_key(endpoint_id: str, scorer_id: str) -> dict[str, str]:
    return BINDING.key(workspace=request_workspace.current(), endpoint_id=endpoint_id, resource_type=SCORER, resource_id=scorer_id)


def bind_ops(scorer: dict[str, Any], endpoint_id: str, name: str) -> list[dict[str, Any]]:
    """Transaction operations binding the (existing or new) scorer to ``endpoint_id``; the endpoint must still
    exist when they are written. The scorer item itself must be put or updated with ``bound_endpoint_id`` too."""
    now = clock.now_millis()
    keys = {"endpoint_id": endpoint_id, "resource_type": SCORER, "resource_id": scorer["scorer_id"]}
    item = BINDING.item(
        {**keys, "display_name": name, "created_at": now, "last_updated_at": now}, **keys, workspace=request_workspace.current()
    )
    ops = [
        table.put_op(item),
        table.check_op(ENDPOINT.key(workspace=request_workspace.current(), endpoint_id=endpoint_id), "attribute_exists(pk)"),
    ]
    previous = scorer.get("bound_endpoint_id")
    if previous and previous != endpoint_id:
        ops.append(table.delete_op(binding_key(previous, scorer["scorer_id"])))
    return ops


def unbind_keys(scorer: dict[str, Any]) -> list[dict[str, str]]:
    """The binding keys to delete with the scorer."""
    endpoint_id = scorer.get("bound_endpoint_id")
    return [binding_key(endpoint_id, scorer["scorer_id"])] if endpoint_id else []
