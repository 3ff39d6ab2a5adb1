"""MLflow's checks on the AI gateway's endpoint configuration that a plain ``need`` cannot say."""

from __future__ import annotations

from typing import TYPE_CHECKING

from serverless_mlflow.auth import resources
from serverless_mlflow.auth.checks import Identity, is_admin, need
from serverless_mlflow.auth.permissions import READ_ACTION

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

_read_endpoint = need(resources.gateway_endpoint, READ_ACTION)


def bindings_of_readable_endpoint(req: Request, identity: Identity) -> bool:
    """``validate_can_list_gateway_endpoint_bindings``: READ on the endpoint the request names; listing every
    endpoint's bindings (no ``endpoint_id``) is for admins."""
    if not resources.optional_param(req, "endpoint_id"):
        return is_admin(identity)
    return _read_endpoint(req, identity)
