"""Request messages of the basic-auth routes. MLflow's auth app reads each field from the query (GET) or the
raw JSON body itself (``serverless_mlflow.auth.resources.param``); declared here for the request fuzz suite."""

from __future__ import annotations

from serverless_mlflow.request import Message

_USER = {"username": "string"}
_GRANT = {"username": "string", "resource_type": "string", "resource_id": "string"}

MESSAGES: dict[str, Message] = {
    "login": Message({}),
    "create_user": Message({"username": "string", "password": "string"}),
    "get_user": Message(_USER),
    "get_current_user": Message({}),
    "list_users": Message({}),
    "update_user_password": Message({"username": "string", "password": "string", "current_password": "string"}),
    "update_user_admin": Message({"username": "string", "is_admin": "bool"}),
    "delete_user": Message(_USER),
    "grant_user_permission": Message({**_GRANT, "permission": "string"}),
    "revoke_user_permission": Message(_GRANT),
    "get_user_permission": Message(_GRANT),
    "list_user_permissions": Message(_USER),
    "list_current_user_permissions": Message({}),
}
