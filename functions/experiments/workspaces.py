"""MLflow's workspace API (``/api/3.0/mlflow/workspaces``), as ``server/handlers.py`` serves it with workspaces on.

With workspaces off (``MLFLOW_ENABLE_WORKSPACES`` unset) the routes answer ENDPOINT_NOT_FOUND as before they
existed: MLflow's own answer there is a 503 plain-text page, which would break the rule that a refused request
gets MLflow's JSON error below 500.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow import auth
from serverless_mlflow.auth import workspace_roles
from serverless_mlflow.core.errors import endpoint_not_found, invalid
from serverless_mlflow.http.api import Request, json_response
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.store import workspaces as store

from .messages import MESSAGES

_ARCHIVAL_FIELDS = (("location", "trace_archival_location"), ("retention", "trace_archival_retention"))


def _require_enabled(req: Request) -> None:
    if not request_workspace.enabled():
        raise endpoint_not_found(req.method, req.path)


def _path_name(req: Request) -> str:
    name = req.path_params.get("workspace_name", "")
    if name != store.DEFAULT_WORKSPACE:
        store.validate_name(name)
    return name


def _fields(req: Request, operation: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the request's JSON, its workspace fields: None where not sent, stripped strings as MLflow validates them)."""
    body = req.message(MESSAGES[operation])
    values: dict[str, Any] = {"description": body.get("description"), "default_artifact_root": _stripped(body.get("default_artifact_root"))}
    archival = body.get("trace_archival_config")
    if archival is not None and not isinstance(archival, dict):
        raise invalid(f"Invalid value {archival!r} for parameter 'trace_archival_config' supplied: must be a dict")
    for field, attribute in _ARCHIVAL_FIELDS:
        value = (archival or {}).get(field)
        if value is not None and not isinstance(value, str):
            raise invalid(f"Invalid value {value!r} for parameter '{field}' supplied: must be a string")
        values[attribute] = _stripped(value)
    root = values["default_artifact_root"]
    if root and ":" not in root and not root.startswith("/"):
        raise invalid(
            "Invalid value for 'default_artifact_root'. Expected a URI (for example 's3://bucket/prefix' or "
            f"'mlflow-artifacts:/prefix') or an absolute path, got '{root}'."
        )
    return body, values


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def list_workspaces(req: Request) -> dict[str, Any]:
    _require_enabled(req)
    return {"workspaces": store.list_workspaces()}


def create_workspace(req: Request) -> Response:
    _require_enabled(req)
    body, values = _fields(req, "create_workspace")
    name = body["name"]
    if name == store.DEFAULT_WORKSPACE:
        raise invalid(f"The '{store.DEFAULT_WORKSPACE}' workspace is reserved and cannot be created")
    store.validate_name(name)
    created = store.create_workspace(name, values)
    if auth.basic_enabled():
        workspace_roles.seed_roles(name)  # MLflow's after-request handler: the new workspace's default roles
    return json_response({"workspace": created}, 201)


def get_workspace(req: Request) -> dict[str, Any]:
    _require_enabled(req)
    return {"workspace": store.get_workspace(_path_name(req))}


def update_workspace(req: Request) -> dict[str, Any]:
    _require_enabled(req)
    name = _path_name(req)
    _, values = _fields(req, "update_workspace")
    if all(value is None for value in values.values()):
        raise invalid("Workspace update must have at least one key")
    return {"workspace": store.update_workspace(name, values)}


def delete_workspace(req: Request) -> Response:
    _require_enabled(req)
    name = req.path_params.get("workspace_name", "")
    if name == store.DEFAULT_WORKSPACE:
        raise invalid(f"The '{store.DEFAULT_WORKSPACE}' workspace is reserved and cannot be deleted")
    store.validate_name(name)
    mode = (req.query.get("mode") or [store.RESTRICT])[0]
    if mode not in store.DELETION_MODES:
        raise invalid(f"Invalid deletion mode '{mode}'. Must be one of: {', '.join(store.DELETION_MODES)}")
    store.delete_workspace(name, mode)
    return Response(status_code=204, content_type=None, body="")


OPERATIONS = {
    "list_workspaces": list_workspaces,
    "create_workspace": create_workspace,
    "get_workspace": get_workspace,
    "update_workspace": update_workspace,
    "delete_workspace": delete_workspace,
}
