"""Label schema, review queue and issue routes: parse like MLflow's handlers, call one store function, answer."""

from __future__ import annotations

from typing import Any

from serverless_mlflow import auth
from serverless_mlflow.auth import store as auth_store
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.core.validation import review as rules
from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.store import issues, label_schemas, review_queues
from serverless_mlflow.store import traces as trace_store

from . import detection, schedule_state
from .messages import MESSAGES

# protobuf is imported by the first call that builds or parses a message, not at a handler's cold start.
protos = deferred("serverless_mlflow.request.protos")


def _msg(req: Request, operation: str) -> dict[str, Any]:
    return req.message(MESSAGES[operation])


def _username(req: Request) -> str | None:
    """The authenticated caller (basic auth), as MLflow's ``_get_request_username``; None without auth."""
    return req.identity.username if req.identity is not None else None


def _enum(value: Any, enum: str) -> str | None:
    """A proto enum sent by name or number, as protobuf's parser leaves it: a name or number it does not know
    (or any other JSON) leaves the field unset; unset and UNSPECIFIED are None."""
    names = protos.ENUMS[enum]
    if isinstance(value, str) and value in names:
        number = names.index(value)
    elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        number = value
    else:
        return None
    return names[number] if number else None


def _required_enum(value: Any, enum: str, message: str) -> str:
    """An enum the entity's ``from_proto`` requires: UNSPECIFIED is refused with its text (``{number}``)."""
    parsed = _enum(value, enum)
    if parsed is None:
        raise invalid(message.format(number=0))
    return parsed


def _page(field: str, rows: list[dict[str, Any]], token: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {field: rows} if rows else {}
    # These responses are proto2: an empty token is still a set field.
    out["next_page_token"] = token or ""
    return out


# --- label schemas ---------------------------------------------------------------------------------


def create_label_schema(req: Request) -> dict[str, Any]:
    msg = _msg(req, "create_label_schema")
    type_ = label_schemas.schema_type(msg.get("type", 0))
    new_input = label_schemas.parse_input(msg.get("input"))
    created = label_schemas.create_label_schema(
        msg["experiment_id"], msg["name"], type_, new_input, msg.get("instruction"), msg.get("enable_comment", False)
    )
    return {"label_schema": created}


def get_label_schema(req: Request) -> dict[str, Any]:
    return {"label_schema": label_schemas.get_label_schema(_msg(req, "get_label_schema")["schema_id"])}


def get_label_schema_by_name(req: Request) -> dict[str, Any]:
    msg = _msg(req, "get_label_schema_by_name")
    return {"label_schema": label_schemas.get_label_schema_by_name(msg["experiment_id"], msg["name"])}


def list_label_schemas(req: Request) -> dict[str, Any]:
    msg = _msg(req, "list_label_schemas")
    rows, token = label_schemas.list_label_schemas(
        msg["experiment_id"], msg.get("max_results", label_schemas.DEFAULT_MAX_RESULTS), msg.get("page_token")
    )
    return _page("label_schemas", rows, token)


def update_label_schema(req: Request) -> dict[str, Any]:
    msg = _msg(req, "update_label_schema")
    new_input = label_schemas.parse_input(msg["input"]) if "input" in msg else None
    updated = label_schemas.update_label_schema(
        msg["schema_id"], msg.get("name"), msg.get("instruction"), msg.get("enable_comment"), new_input
    )
    return {"label_schema": updated}


def delete_label_schema(req: Request) -> dict[str, Any]:
    label_schemas.delete_label_schema(_msg(req, "delete_label_schema")["schema_id"])
    return {}


# --- review queues ---------------------------------------------------------------------------------

_QUEUE_TYPE_TEXT = "`queue_type` must be one of USER or CUSTOM; got proto enum value {number}."
_STATUS_TEXT = "`status` must be one of PENDING, COMPLETE, or DECLINED; got proto enum value {number}."


def _not_a_username(name: Any, action: str) -> None:
    """A custom queue may not take a registered user's name (it would shadow that user's own queue); basic
    auth only, for every caller (MLflow's ``enforce_review_queue_name_not_username``)."""
    if not auth.basic_enabled() or not isinstance(name, str) or not name.strip():
        return
    target = name.strip().lower()
    if (matched := next((u for u in auth_store.list_usernames() if u.strip().lower() == target), None)) is not None:
        raise invalid(
            f"'{matched}' is a registered user. A custom review queue cannot {action} a username; assign that user to a queue instead."
        )


def create_review_queue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "create_review_queue")
    queue_type = _required_enum(msg.get("queue_type"), "ReviewQueueType", _QUEUE_TYPE_TEXT)
    if queue_type == "CUSTOM":
        _not_a_username(msg.get("name"), "use")
    created = review_queues.create_review_queue(
        msg["experiment_id"], msg["name"], queue_type, msg.get("users", []), msg.get("schema_ids", []), created_by=_username(req)
    )
    return {"review_queue": created}


def get_or_create_user_queue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "get_or_create_user_queue")
    return {"review_queue": review_queues.get_or_create_user_queue(msg["experiment_id"], msg["user"])}


def get_review_queue(req: Request) -> dict[str, Any]:
    return {"review_queue": review_queues.get_review_queue(_msg(req, "get_review_queue")["queue_id"])}


def get_review_queue_by_name(req: Request) -> dict[str, Any]:
    msg = _msg(req, "get_review_queue_by_name")
    return {"review_queue": review_queues.get_review_queue_by_name(msg["experiment_id"], msg["name"])}


def list_review_queues(req: Request) -> dict[str, Any]:
    msg = _msg(req, "list_review_queues")
    rows, token = review_queues.list_review_queues(
        msg["experiment_id"], msg.get("user"), msg.get("item_id"), msg.get("max_results"), msg.get("page_token")
    )
    return _page("review_queues", rows, token)


def update_review_queue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "update_review_queue")
    current = review_queues.queue_item(msg["queue_id"])
    if current is not None and current["queue_type"] == "CUSTOM" and "name" in msg:
        _not_a_username(msg["name"], "be renamed to")
    updated = review_queues.update_review_queue(
        msg["queue_id"],
        users=msg.get("users", []) if msg.get("update_users") else None,
        schema_ids=msg.get("schema_ids", []) if msg.get("update_schema_ids") else None,
        name=msg.get("name"),
        new_owner=msg.get("new_owner"),
    )
    return {"review_queue": updated}


def delete_review_queue(req: Request) -> dict[str, Any]:
    review_queues.delete_review_queue(_msg(req, "delete_review_queue")["queue_id"])
    return {}


def add_items_to_review_queue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "add_items_to_review_queue")
    item_ids = rules.item_ids_for_attach(msg.get("item_ids", []))
    queue_experiment = review_queues.experiment_of_queue(msg["queue_id"])
    # Items are trace references: every one must be a trace of the queue's experiment.
    by_trace = {item["trace_id"]: str(item["experiment_id"]) for item in trace_store.info_items(item_ids)}
    if bad := [i for i in item_ids if by_trace.get(i) != queue_experiment]:
        raise not_found(
            f"Cannot attach trace(s) {bad} to review queue '{msg['queue_id']}': they do not exist in experiment '{queue_experiment}'."
        )
    return _page_free("items", review_queues.add_items(msg["queue_id"], item_ids))


def _page_free(field: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {field: rows} if rows else {}


def remove_items_from_review_queue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "remove_items_from_review_queue")
    review_queues.remove_items(msg["queue_id"], rules.item_ids_for_attach(msg.get("item_ids", [])))
    return {}


def list_review_queue_items(req: Request) -> dict[str, Any]:
    msg = _msg(req, "list_review_queue_items")
    status = _enum(msg.get("status"), "ReviewStatus")
    rows, token = review_queues.list_items(msg["queue_id"], status, msg.get("max_results"), msg.get("page_token"))
    return _page("items", rows, token)


def set_review_queue_item_status(req: Request) -> dict[str, Any]:
    msg = _msg(req, "set_review_queue_item_status")
    status = _required_enum(msg.get("status"), "ReviewStatus", _STATUS_TEXT)
    username = _username(req)
    if username is not None:
        # Attribution is the authenticated caller, never a client value (reopening clears it).
        completed_by = None if status == "PENDING" else username
    else:
        completed_by = msg.get("completed_by")
    return {"item": review_queues.set_item_status(msg["queue_id"], msg["item_id"], status, completed_by)}


# --- issues ------------------------------------------------------------------------------------------


def create_issue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "create_issue")
    created = issues.create_issue(
        msg["experiment_id"],
        msg["name"],
        msg["description"],
        status=msg.get("status", "pending"),
        severity=msg.get("severity"),
        root_causes=msg.get("root_causes") or None,
        source_run_id=msg.get("source_run_id") or None,
        categories=msg.get("categories") or None,
        created_by=msg.get("created_by") or None,
    )
    return {"issue": created}


def get_issue(req: Request) -> dict[str, Any]:
    return {"issue": issues.get_issue(req.path_params.get("issue_id", ""))}


def update_issue(req: Request) -> dict[str, Any]:
    msg = _msg(req, "update_issue")
    updated = issues.update_issue(
        req.path_params.get("issue_id", ""),
        status=msg.get("status"),
        name=msg.get("name") or None,
        description=msg.get("description") or None,
        severity=msg.get("severity"),
    )
    return {"issue": updated}


def search_issues(req: Request) -> dict[str, Any]:
    msg = _msg(req, "search_issues")
    rows, token = issues.search_issues(
        experiment_id=msg.get("experiment_id") or None,
        filter_string=msg.get("filter_string") or None,
        max_results=msg.get("max_results"),
        page_token=msg.get("page_token") or None,
        include_trace_count=msg.get("include_trace_count", False),
    )
    return _page("issues", rows, token)


def invoke_issue_detection(req: Request) -> dict[str, Any]:
    return detection.invoke(_msg(req, "invoke_issue_detection"), _username(req))


def sync_issue_detection_schedule_state(req: Request) -> dict[str, Any]:
    return schedule_state.sync_schedule_state(_msg(req, "sync_issue_detection_schedule_state")["experiment_id"])


app = build_app(
    "review",
    {
        "create_label_schema": create_label_schema,
        "get_label_schema": get_label_schema,
        "get_label_schema_by_name": get_label_schema_by_name,
        "list_label_schemas": list_label_schemas,
        "update_label_schema": update_label_schema,
        "delete_label_schema": delete_label_schema,
        "create_review_queue": create_review_queue,
        "get_or_create_user_queue": get_or_create_user_queue,
        "get_review_queue": get_review_queue,
        "get_review_queue_by_name": get_review_queue_by_name,
        "list_review_queues": list_review_queues,
        "update_review_queue": update_review_queue,
        "delete_review_queue": delete_review_queue,
        "add_items_to_review_queue": add_items_to_review_queue,
        "remove_items_from_review_queue": remove_items_from_review_queue,
        "list_review_queue_items": list_review_queue_items,
        "set_review_queue_item_status": set_review_queue_item_status,
        "create_issue": create_issue,
        "get_issue": get_issue,
        "update_issue": update_issue,
        "search_issues": search_issues,
        "sync_issue_detection_schedule_state": sync_issue_detection_schedule_state,
        "invoke_issue_detection": invoke_issue_detection,
    },
)
lambda_handler = lambda_entry(app)
