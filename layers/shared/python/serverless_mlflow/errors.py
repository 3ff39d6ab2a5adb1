"""MLflow's error contract: `{"error_code": ..., "message": ...}` with the HTTP status MLflow maps it to."""

from __future__ import annotations

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


class MlflowError(Exception):
    """An error answered to the client in MLflow's JSON shape."""

    def __init__(self, message: str, error_code: str = "INTERNAL_ERROR", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self._status = status

    @property
    def http_status(self) -> int:
        """MLflow's status for the error code, unless the error names its own (a 405 has no MLflow code)."""
        return self._status or HTTP_STATUS.get(self.error_code, 500)

    def to_json(self) -> dict[str, str]:
        return {"error_code": self.error_code, "message": self.message}


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
