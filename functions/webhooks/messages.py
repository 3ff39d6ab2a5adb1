"""Request messages of the webhook routes (mlflow/protos/webhooks.proto) and the handlers' schema checks."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, intlike, required, string

_WEBHOOK_FIELDS = {
    "name": "string",
    "description": "string",
    "url": "string",
    "events": "[message]",
    "secret": "string",
    "status": "enum",
}

MESSAGES: dict[str, Message] = {
    "create_webhook": Message(
        _WEBHOOK_FIELDS,
        {
            "name": [string, required],
            "url": [string, required],
            "events": [array, required],
            "description": [string],
            "secret": [string],
            "status": [string],
        },
    ),
    "list_webhooks": Message({"max_results": "int32", "page_token": "string"}, {"max_results": [intlike], "page_token": [string]}),
    "get_webhook": Message({"webhook_id": "string"}),
    "delete_webhook": Message({"webhook_id": "string"}),
    "update_webhook": Message(
        {"webhook_id": "string", **_WEBHOOK_FIELDS},
        {"name": [string], "description": [string], "url": [string], "events": [array], "secret": [string], "status": [string]},
    ),
    "test_webhook": Message({"webhook_id": "string", "event": "message"}),
}
