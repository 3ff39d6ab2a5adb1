"""MLflow's error contract: `{"error_code", "message", "sqlstate", "error_class"}` with the HTTP status MLflow maps
the code to."""

from __future__ import annotations

import threading

# mlflow/exceptions.py: ERROR_CODE_TO_HTTP_STATUS (any other code answers 500).
HTTP_STATUS: dict[str, int] = {
    "INVALID_PARAMETER_VALUE": 400,
    "RESOURCE_ALREADY_EXISTS": 400,
    "BAD_REQUEST": 400,
    "INVALID_STATE": 500,
    "INTERNAL_ERROR": 500,
    "DATA_LOSS": 500,
    "RESOURCE_DOES_NOT_EXIST": 404,
    "ENDPOINT_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "UNAUTHENTICATED": 401,
    "CUSTOMER_UNAUTHORIZED": 401,
    "PERMISSION_DENIED": 403,
    "ALREADY_EXISTS": 409,
    "RESOURCE_CONFLICT": 409,
    "ABORTED": 409,
    "REQUEST_LIMIT_EXCEEDED": 429,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "NOT_IMPLEMENTED": 501,
    "TEMPORARILY_UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


# mlflow/error_classification.py (3.17+). MlflowException.__init__ derives its error_class and sqlstate from the code
# with these client-side tables, and the server raises MlflowException too, so its error bodies carry them: a code
# missing here (REQUEST_LIMIT_EXCEEDED, RESOURCE_CONFLICT...) has neither field.
ERROR_CLASS: dict[str, str] = {
    "BAD_REQUEST": "INVALID_PARAMETER_VALUE",
    "CUSTOMER_UNAUTHORIZED": "PERMISSION_DENIED",
    "ENDPOINT_NOT_FOUND": "RESOURCE_NOT_FOUND",
    "FEATURE_DISABLED": "FEATURE_DISABLED",
    "INTERNAL_ERROR": "CLIENT_INTERNAL_ERROR",
    "INVALID_PARAMETER_VALUE": "INVALID_PARAMETER_VALUE",
    "INVALID_STATE": "CLIENT_INTERNAL_ERROR",
    "NOT_FOUND": "RESOURCE_NOT_FOUND",
    "PERMISSION_DENIED": "PERMISSION_DENIED",
    "RESOURCE_ALREADY_EXISTS": "RESOURCE_ALREADY_EXISTS",
    "RESOURCE_DOES_NOT_EXIST": "RESOURCE_NOT_FOUND",
    "TEMPORARILY_UNAVAILABLE": "CLIENT_INTERNAL_ERROR",
}
SQLSTATE: dict[str, str] = {
    **dict.fromkeys(("BAD_REQUEST", "CUSTOMER_UNAUTHORIZED", "ENDPOINT_NOT_FOUND", "FEATURE_DISABLED", "INVALID_PARAMETER_VALUE"), "KAM00"),
    **dict.fromkeys(("NOT_FOUND", "PERMISSION_DENIED", "RESOURCE_ALREADY_EXISTS", "RESOURCE_DOES_NOT_EXIST"), "KAM00"),
    **dict.fromkeys(("INTERNAL_ERROR", "INVALID_STATE", "TEMPORARILY_UNAVAILABLE"), "XXM00"),
}
# A class a raise site names where the code is too coarse (_ERROR_CLASS_TO_SQLSTATE); only this one reaches a route.
ATTRIBUTE_NOT_FOUND = "ATTRIBUTE_NOT_FOUND"
CLASS_SQLSTATE: dict[str, str] = {ATTRIBUTE_NOT_FOUND: "KAM04"}


class MlflowError(Exception):
    """An error answered to the client in MLflow's JSON shape."""

    def __init__(self, message: str, error_code: str = "INTERNAL_ERROR", status: int | None = None, error_class: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self._status = status
        # MLflow's error_class argument: only where its raise site names one; otherwise derived from the code.
        self.error_class = error_class

    @property
    def http_status(self) -> int:
        """MLflow's status for the error code, unless the error names its own (a 405 has no MLflow code)."""
        return self._status or HTTP_STATUS.get(self.error_code, 500)

    def to_json(self) -> dict[str, str]:
        """MlflowException.serialize_as_json: the classification fields follow the message, each only when known."""
        body = {"error_code": self.error_code, "message": self.message}
        error_class = self.error_class or ERROR_CLASS.get(self.error_code)
        sqlstate = CLASS_SQLSTATE.get(error_class or "") or SQLSTATE.get(self.error_code)
        if sqlstate is not None:
            body["sqlstate"] = sqlstate
        if error_class is not None:
            body["error_class"] = error_class
        return body


class CollectionFull(MlflowError):
    """A write would grow an item collection (a partition key of a table with LSIs) past DynamoDB's 10 GB: refused,
    nothing of that write stored.

    RESOURCE_CONFLICT (HTTP 409, "conflicts with the current state of the resource"): the request is valid, the
    state it targets cannot take more data, and retrying will not help until data is deleted. MLflow's client
    retries 429 and 5xx for minutes (RESOURCE_EXHAUSTED / INVALID_STATE would make it hang), never 409."""

    def __init__(self, partitions: list[str]) -> None:
        where = "; ".join(partitions) or "one partition of the table"
        super().__init__(
            f"Storage limit reached: {where} holds DynamoDB's maximum of 10 GB for one item collection, so this "
            "request was refused and nothing was written. Delete runs, traces or metric history there, or log to a "
            "new experiment or run.",
            "RESOURCE_CONFLICT",
        )


class Unavailable(Exception):
    """DynamoDB kept refusing a request for capacity or contention, past every retry: nothing was written."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        note_capacity_refusal()


# DynamoDB calls refused for capacity past every retry, in this process (``Unavailable`` raised, or a throttling
# error answered): the indexer tells a batch that failed for capacity (retried in the invocation) from one that
# failed otherwise (reported to Lambda at once).
_refusals = [0]
_refusals_lock = threading.Lock()


def note_capacity_refusal() -> None:
    with _refusals_lock:
        _refusals[0] += 1


def capacity_refusals() -> int:
    with _refusals_lock:
        return _refusals[0]


def retry_later(message: str) -> MlflowError:
    """A request that lost to load or to concurrent writers after its own retries, having written nothing:
    429 REQUEST_LIMIT_EXCEEDED, which MLflow's client retries (on 503 it gives a POST up at once)."""
    return MlflowError(message, "REQUEST_LIMIT_EXCEEDED")


def invalid(message: str) -> MlflowError:
    return MlflowError(message, "INVALID_PARAMETER_VALUE")


def wrong_state(message: str) -> MlflowError:
    """MLflow's INVALID_STATE (the resource is not in a state that allows the request), answered 400 rather than
    MLflow's 500: the request is refused for what it asks, never a server fault, and a 500 makes clients retry."""
    return MlflowError(message, "INVALID_STATE", status=400)


def not_found(message: str) -> MlflowError:
    return MlflowError(message, "RESOURCE_DOES_NOT_EXIST")


def already_exists(message: str) -> MlflowError:
    return MlflowError(message, "RESOURCE_ALREADY_EXISTS")


def endpoint_not_found(method: str, path: str) -> MlflowError:
    return MlflowError(f"No endpoint matches {method} {path}", "ENDPOINT_NOT_FOUND")


def method_not_allowed(method: str, path: str, allowed: list[str]) -> MlflowError:
    """A known path asked with another method: HTTP 405 as MLflow's server answers it (werkzeug's text), in
    MLflow's JSON error shape."""
    return MlflowError(
        f"The method is not allowed for the requested URL: {method} {path} (allowed: {', '.join(allowed)}).", "ENDPOINT_NOT_FOUND", 405
    )
