"""Registry webhook routes (``/api/2.0/mlflow/webhooks``): parse as MLflow's handlers do, call one function of
``logic``, answer MLflow's JSON. Events reach webhooks from the table's stream, never from these routes."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.request.pages import page_response
from serverless_mlflow.store import webhooks as store

from . import logic
from .messages import MESSAGES


def create_webhook(req: Request) -> dict[str, Any]:
    return {"webhook": logic.create(req.message(MESSAGES["create_webhook"]))}


def list_webhooks(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["list_webhooks"])
    items, token = store.list_page(msg.get("max_results"), msg.get("page_token") or None)
    return page_response("webhooks", [store.webhook_json(item) for item in items], token)


def get_webhook(req: Request) -> dict[str, Any]:
    return {"webhook": store.webhook_json(store.get(req.path_params["webhook_id"]))}


def update_webhook(req: Request) -> dict[str, Any]:
    return {"webhook": logic.update(req.path_params["webhook_id"], req.message(MESSAGES["update_webhook"]))}


def delete_webhook(req: Request) -> dict[str, Any]:
    store.delete(req.path_params["webhook_id"])
    return {}


def test_webhook(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["test_webhook"])
    return {"result": logic.test(req.path_params["webhook_id"], msg.get("event"))}


app = build_app(
    "webhooks",
    {
        "create_webhook": create_webhook,
        "list_webhooks": list_webhooks,
        "get_webhook": get_webhook,
        "update_webhook": update_webhook,
        "delete_webhook": delete_webhook,
        "test_webhook": test_webhook,
    },
)
lambda_handler = lambda_entry(app)
