"""What MLflow's after-request handlers do: grant MANAGE to creators, move or drop grants with their
resource, and filter search results down to what the caller may read (refilling the page as MLflow does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import store
from serverless_mlflow.auth.checks import Identity, is_admin, permissions_on
from serverless_mlflow.auth.permissions import EXPERIMENT, GATEWAY_ENDPOINT, PROMPT, READ_ACTION, REGISTERED_MODEL
from serverless_mlflow.auth.resources import IS_PROMPT_TAG_KEY, param
from serverless_mlflow.auth.resources import model_kind as _model_kind
from serverless_mlflow.request.pages import page_response

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

# (request, identity, result, rerun) -> result; rerun(request) calls the feature operation again.
Rerun = Callable[["Request"], Any]
After = Callable[["Request", Identity, Any, Rerun], Any]


def grant_experiment_creator(req: Request, identity: Identity, result: Any, _rerun: Rerun) -> Any:
    store.set_grant(identity.username, EXPERIMENT, str(result["experiment_id"]), "MANAGE")
    return result


def _is_prompt(model: dict[str, Any]) -> bool:
    tags = model.get("tags") or []
    return any(t.get("key") == IS_PROMPT_TAG_KEY and str(t.get("value")).lower() == "true" for t in tags)


def grant_model_creator(req: Request, identity: Identity, result: Any, _rerun: Rerun) -> Any:
    model = result["registered_model"]
    store.set_grant(identity.username, PROMPT if _is_prompt(model) else REGISTERED_MODEL, model["name"], "MANAGE")
    return result


def drop_model_grants(req: Request, identity: Identity, result: Any, _rerun: Rerun) -> Any:
    name = str(param(req, "name"))
    store.delete_grants_of_resource(REGISTERED_MODEL, name)
    store.delete_grants_of_resource(PROMPT, name)
    return result


def move_model_grants(req: Request, identity: Identity, result: Any, _rerun: Rerun) -> Any:
    old, new = str(param(req, "name")), str(param(req, "new_name"))
    store.rename_grants_of_resource(REGISTERED_MODEL, old, new)
    store.rename_grants_of_resource(PROMPT, old, new)
    return result


def redact_secrets_config(req: Request, identity: Identity, result: Any, _rerun: Rerun) -> Any:
    """MLflow's ``redact_secrets_config_for_non_admins``: whether secrets use a default passphrase is
    server security posture, answered to admins only."""
    if not isinstance(result, dict) or is_admin(identity):
        return result
    return {key: value for key, value in result.items() if key != "using_default_passphrase"}


# --- search filters ------------------------------------------------------------------------------


def filtered(field: str, resource_of: Callable[[dict[str, Any]], tuple[str, str]], default_max: int, refill: bool = True) -> After:
    """Keep the rows the caller can read; refetch following pages until the page is full (MLflow's loop)."""

    def after(req: Request, identity: Identity, result: Any, rerun: Rerun) -> Any:
        if not isinstance(result, dict) or is_admin(identity):
            return result
        wanted = _max_results(req, default_max)
        rows = _readable(identity, result.get(field) or [], resource_of)
        token = result.get("next_page_token") or ""
        while refill and len(rows) < wanted and token:
            page = rerun(_with_params(req, page_token=token, max_results=wanted - len(rows)))
            token = page.get("next_page_token") or ""
            rows += _readable(identity, page.get(field) or [], resource_of)
        rest = {k: v for k, v in result.items() if k not in (field, "next_page_token")}
        return {**rest, **page_response(field, rows, token)}

    return after


def _readable(
    identity: Identity, rows: list[dict[str, Any]], resource_of: Callable[[dict[str, Any]], tuple[str, str]]
) -> list[dict[str, Any]]:
    if not rows:
        return []
    allowed = permissions_on(identity, [resource_of(row) for row in rows], listing=True)
    return [row for row, permission in zip(rows, allowed, strict=True) if permission.allows(READ_ACTION)]


def _max_results(req: Request, default: int) -> int:
    raw = req.query.get("max_results", [None])[0] if req.method == "GET" else req.json.get("max_results")
    try:
        return int(raw) if raw is not None else default
    except (TypeError, ValueError):
        return default


def _with_params(req: Request, **changes: Any) -> Request:
    if req.method == "GET":
        query = {**req.query, **{k: [str(v)] for k, v in changes.items()}}
        return replace(req, query=query)
    return replace(req, raw_body=json.dumps({**req.json, **changes}).encode())


def experiment_row(row: dict[str, Any]) -> tuple[str, str]:
    return EXPERIMENT, str(row["experiment_id"])


def model_row(row: dict[str, Any]) -> tuple[str, str]:
    return (PROMPT if _is_prompt(row) else REGISTERED_MODEL), row["name"]


def version_row(row: dict[str, Any]) -> tuple[str, str]:
    """A version is read through its parent model or prompt (the family comes from the persisted parent)."""
    return _model_kind(row["name"]) or REGISTERED_MODEL, row["name"]


def gateway_endpoint_row(row: dict[str, Any]) -> tuple[str, str]:
    return GATEWAY_ENDPOINT, str(row["endpoint_id"])


def logged_model_row(row: dict[str, Any]) -> tuple[str, str]:
    return EXPERIMENT, str(row["info"]["experiment_id"])
