"""Request messages of the basic-auth routes. MLflow's auth app reads each field from the query (GET) or the
raw JSON body itself (``serverless_mlflow.auth.resources.param``); declared here for the request fuzz suite."""

from __future__ import annotations

from serverless_mlflow.request import Message

_USER = {"username": "string"}
_GRANT = {"username": "string", "resource_type": "string", "resource_id": "string"}

MESSAGES: dict[str, Message] = {
    "login": Message({}),
    # An HTML page and an HTML form's POST (not JSON): MLflow reads the form itself.
    "signup": Message({}),
    "create_user_ui": Message(None),
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
    "create_role": Message({"name": "string", "workspace": "string", "description": "string"}),
    "get_role": Message({"role_id": "int64"}),
    "list_roles": Message({"workspace": "string"}),
    "update_role": Message({"role_id": "int64", "name": "string", "description": "string"}),
    "delete_role": Message({"role_id": "int64"}),
    "add_role_permission": Message({"role_id": "int64", "resource_type": "string", "resource_pattern": "string", "permission": "string"}),
    "remove_role_permission": Message({"role_permission_id": "int64"}),
    "list_role_permissions": Message({"role_id": "int64"}),
    "update_role_permission": Message({"role_permission_id": "int64", "permission": "string"}),
    "assign_role": Message({"username": "string", "role_id": "int64"}),
    "unassign_role": Message({"username": "string", "role_id": "int64"}),
    "list_user_roles": Message(_USER),
    "list_role_users": Message({"role_id": "int64"}),
}
