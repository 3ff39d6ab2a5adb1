"""IAM, emulated: each feature's AWS calls are checked against its declaration in ``infra/permissions.py``.

Deployed, a function's role refuses every DynamoDB or S3 action (and every S3 key outside its prefixes)
it was not granted. Nothing refuses them locally, so a feature that starts using a new action would pass
every test here and fail only once deployed. The runtime marks which function is running (a context
variable, carried into the function's worker threads) and a botocore hook refuses an undeclared action
with the ``AccessDeniedException`` the role would raise. Calls made outside a function (the runtime's own
set-up, the stream follower, tests) are not checked.

``LOCAL_IAM=record`` (instead of the default ``enforce``) allows everything and appends each
``feature action`` pair seen to the file named by ``LOCAL_IAM_RECORD`` (how the declarations were derived).
"""

from __future__ import annotations

import contextvars
import os
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from infra.permissions import WRITE_ACTIONS, access_for, write_refused

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("local_iam_function", default=None)
_installed = False
_record_lock = threading.Lock()

# TransactWriteItems is authorized per operation (DynamoDB's own rule), TransactGetItems as GetItem.
_TRANSACT_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
# S3 operations and the IAM action that authorizes each (multipart parts are authorized as PutObject).
_S3_ACTIONS = {
    "GetObject": "s3:GetObject",
    "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "ListParts": "s3:ListMultipartUploadParts",
    "DeleteObject": "s3:DeleteObject",
    "DeleteObjects": "s3:DeleteObject",
    "ListObjectsV2": "s3:ListBucket",
    "ListObjects": "s3:ListBucket",
}


class AccessDenied(Exception):
    pass


@contextmanager
def acting_as(function: str) -> Iterator[None]:
    """Run the enclosed calls with the rights of ``function``'s role."""
    token = _current.set(function)
    try:
        yield
    finally:
        _current.reset(token)


def current_function() -> str | None:
    """The function whose role the calls now run with (None outside any)."""
    return _current.get()


def install() -> None:
    """Hook every boto3 client created from now on (the layer's cached clients must be reset after this)."""
    global _installed
    if _installed:
        return
    import boto3

    session = boto3._get_default_session()
    session.events.register("before-parameter-build.dynamodb", _check_dynamodb)
    session.events.register("before-parameter-build.s3", _check_s3)
    session.events.register("before-parameter-build.sqs", _check_sqs)
    session.events.register("before-parameter-build.events", _check_events)
    _carry_context_into_worker_threads()
    _installed = True


def _carry_context_into_worker_threads() -> None:
    # In Lambda one process runs one function, so its worker threads have its rights too. Here many
    # functions share a process: a worker thread must inherit the submitting thread's function.
    original_submit = ThreadPoolExecutor.submit
    if getattr(original_submit, "_carries_context", False):
        return

    def submit(self: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return original_submit(self, contextvars.copy_context().run, fn, *args, **kwargs)

    submit._carries_context = True  # type: ignore[attr-defined]
    ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]


def _check_dynamodb(params: dict[str, Any], model: Any, **_: Any) -> None:
    function = _current.get()
    if function is None:
        return
    if model.name == "TransactWriteItems":
        actions = {_TRANSACT_ACTIONS[kind] for item in params.get("TransactItems", []) for kind in item}
    elif model.name == "TransactGetItems":
        actions = {"GetItem"}
    else:
        actions = {model.name}
    access = access_for(function)
    declared = set(access.table_actions)
    keys_allowed = all(access.allows_item(pk) for pk in _partition_keys(model.name, params))
    # Writes: the role's write conditions and the Denies on data other functions own (permissions.PROTECTED).
    writes = _writes(model.name, params)
    refused = bool(writes) and write_refused(function, [pk for pk, _ in writes], set().union(*(names for _, names in writes)))
    for action in sorted(actions):
        _decide(
            function, f"dynamodb:{action}", f"dynamodb:{action}" in declared and keys_allowed and not (refused and action in WRITE_ACTIONS)
        )


def _writes(operation: str, params: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """(partition key, attribute names set) of each item a write names: ``dynamodb:LeadingKeys`` and
    ``dynamodb:Attributes`` as IAM judges them (an update's attributes: the names its expression sets)."""
    if operation == "TransactWriteItems":
        return [write for item in params.get("TransactItems", []) for kind, op in item.items() for write in _one_write(kind, op)]
    if operation == "BatchWriteItem":
        return [
            write
            for requests in params.get("RequestItems", {}).values()
            for request in requests
            for kind, op in request.items()
            for write in _one_write("Put" if kind == "PutRequest" else "Delete", op)
        ]
    kind = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}.get(operation)
    return _one_write(kind, params) if kind else []


def _one_write(kind: str, op: dict[str, Any]) -> list[tuple[str, set[str]]]:
    if kind == "Put":
        item = op.get("Item", {})
        return [(str(next(iter(item["pk"].values()))), set(item))] if "pk" in item else []
    if kind in ("Update", "Delete"):
        key = op.get("Key", {})
        names = op.get("ExpressionAttributeNames", {})
        expression = op.get("UpdateExpression", "") if kind == "Update" else ""
        attributes = {names.get(token, token) for token in re.findall(r"(?<![:\w#])#?[A-Za-z_]\w*", expression)}
        return [(str(next(iter(key["pk"].values()))), attributes)] if "pk" in key else []
    return []


def _partition_keys(operation: str, params: dict[str, Any]) -> list[str]:
    """The partition keys a GetItem or BatchGetItem names (what ``dynamodb:LeadingKeys`` conditions judge)."""
    if operation == "GetItem":
        keys = [params.get("Key", {})]
    elif operation == "BatchGetItem":
        keys = [key for request in params.get("RequestItems", {}).values() for key in request.get("Keys", [])]
    else:
        return []
    return [str(next(iter(key["pk"].values()))) for key in keys if "pk" in key]


def _check_s3(params: dict[str, Any], model: Any, **_: Any) -> None:
    function = _current.get()
    if function is None:
        return
    action = _S3_ACTIONS.get(model.name, f"s3:{model.name}")
    access = access_for(function)
    if action == "s3:ListBucket":
        allowed = access.allows_list(params.get("Prefix", ""))
    else:
        keys = [params["Key"]] if "Key" in params else [o["Key"] for o in params.get("Delete", {}).get("Objects", [])]
        allowed = bool(keys) and all(access.allows_object(action, key) for key in keys)
    _decide(function, action, allowed)


def _check_sqs(params: dict[str, Any], model: Any, **_: Any) -> None:
    function = _current.get()
    if function is None:
        return
    access = access_for(function)
    action = f"sqs:{model.name.removesuffix('Batch')}"
    queue = params.get("QueueUrl", "")
    if queue == os.environ.get("WEBHOOK_DEAD_LETTER_QUEUE_URL"):
        allowed = action in access.webhook_dead_letters
    elif queue and queue == os.environ.get("JOB_QUEUE_URL"):
        allowed = action in access.job_queue
    elif queue and queue == os.environ.get("TRACE_DEFERRAL_QUEUE_URL"):
        allowed = action in access.trace_deferrals
    else:
        allowed = queue == os.environ.get("WEBHOOK_QUEUE_URL") and action in access.webhook_queue
    _decide(function, action, allowed)


def _check_events(params: dict[str, Any], model: Any, **_: Any) -> None:
    function = _current.get()
    if function is None:
        return
    _decide(function, f"events:{model.name}", model.name == "PutEvents" and access_for(function).put_events)


def _decide(function: str, action: str, allowed: bool) -> None:
    mode = os.environ.get("LOCAL_IAM", "enforce")
    if mode == "record":
        path = os.environ.get("LOCAL_IAM_RECORD")
        if path:
            with _record_lock, open(path, "a", encoding="utf-8") as out:
                out.write(f"{function} {action}\n")
        return
    if mode == "enforce" and not allowed:
        raise AccessDenied(
            f"local IAM: the role of '{function}' is not allowed to perform {action} here; "
            "declare it in infra/permissions.py (the deployed role would refuse it too)"
        )
