"""The DynamoDB client (one per environment, Scan refused), the table's name, the request counters, retry
pacing, idempotency tokens, and how DynamoDB's errors map to ours (``ConditionFailed``, ``CollectionFull``).

Every retry (botocore's own, of a throttled or failed call, and ours, of a cancelled transaction or unprocessed
batch items) waits a full-jitter backoff and only while the request's deadline leaves time for another attempt
(``deadline``): a throttled request answers 429 before the function's time is up."""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from serverless_mlflow.core.errors import CollectionFull, Unavailable, note_capacity_refusal
from serverless_mlflow.storage.schema import PK, describe_partition
from serverless_mlflow.storage.stats import Stats
from serverless_mlflow.storage.table import deadline

MAX_UNPROCESSED_RETRIES = 12
# Attempts of one DynamoDB call, the first included (what the adaptive mode allowed before): the request's
# deadline usually ends a throttled call's retries sooner.
MAX_ATTEMPTS = 10

STATS = Stats()


_client_lock = threading.Lock()
_client: Any = None


def client() -> Any:
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                import boto3
                from botocore.config import Config

                # botocore's own handler never retries (one attempt): _retry_within_deadline decides, by
                # botocore's standard conditions. Not the adaptive mode: its client-side rate limiter sleeps
                # before a send, where no deadline can stop it.
                _client = boto3.client(
                    "dynamodb",
                    endpoint_url=os.environ.get("DYNAMODB_ENDPOINT_URL") or None,
                    config=Config(
                        retries={"mode": "standard", "total_max_attempts": 1},
                        max_pool_connections=32,
                        connect_timeout=read_timeout(),
                        read_timeout=read_timeout(),
                    ),
                )
                _client.meta.events.register("before-call.dynamodb.Scan", _forbid_scan)
                _client.meta.events.register_first("needs-retry.dynamodb", _retry_within_deadline())
                _client.meta.events.register("after-call.dynamodb", _count_capacity_refusal)
    return _client


def read_timeout() -> int:
    """Seconds one attempt may wait for DynamoDB. In Lambda short enough that a call that hangs is retried (or
    answered) before API Gateway's 29 s are up, where botocore's 60 s would outlive the function; elsewhere
    botocore's 60 s (embedded moto walks the whole table per Query: large local benchmarks need it)."""
    configured = os.environ.get("DYNAMODB_READ_TIMEOUT_SECONDS")
    if configured:
        return int(configured)
    return LAMBDA_READ_TIMEOUT_SECONDS if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else 60


# A real DynamoDB answers a 1 MB page in well under a second.
LAMBDA_READ_TIMEOUT_SECONDS = 8


def _retry_within_deadline() -> Callable[..., float | None]:
    """botocore's ``needs-retry`` hook (run after every answer): the seconds to sleep before another attempt, or
    None to let the error (or answer) stand. Retries what botocore's standard mode retries (throttling, 5xx,
    connection errors), while the request's deadline leaves time for it."""
    from botocore.retries import standard

    adapter, conditions = standard.RetryEventAdapter(), standard.StandardRetryConditions(max_attempts=MAX_ATTEMPTS)

    def needs_retry(**kwargs: Any) -> float | None:
        context = adapter.create_retry_context(**kwargs)
        if not conditions.is_retryable(context):
            return None
        delay = backoff_delay(context.attempt_number)
        # An attempt that timed out may time out again: the next one needs its whole wait before the deadline.
        attempt = read_timeout() if is_timeout(context.caught_exception) else deadline.ATTEMPT_SECONDS
        return delay if deadline.allows(delay, attempt) else None

    return needs_retry


def is_timeout(error: BaseException | None) -> bool:
    """DynamoDB did not answer in time (or could not be reached): the request's outcome is unknown."""
    # botocore is imported with the client, not with this module (routes that never read the table).
    from botocore.exceptions import ConnectionError as BotocoreConnectionError
    from botocore.exceptions import ReadTimeoutError

    return isinstance(error, (ReadTimeoutError, BotocoreConnectionError))


# DynamoDB's answers to "too much at once" (throttling, the account's request limit).
_CAPACITY_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def _count_capacity_refusal(parsed: dict[str, Any] | None = None, **_: Any) -> None:
    """botocore's ``after-call`` hook (once per call, after its retries): a call that ended throttled is counted."""
    if ((parsed or {}).get("Error") or {}).get("Code") in _CAPACITY_CODES:
        note_capacity_refusal()


def _forbid_scan(**_: Any) -> None:
    # Request paths are GetItem, Query, batches or transactions (docs/access-patterns.md), never Scan.
    raise RuntimeError("Scan is not allowed on a request path")


def reset_client() -> None:
    """Forget the cached client (tests switch endpoints)."""
    global _client
    _client = None


def table_name() -> str:
    return os.environ["TABLE_NAME"]


def backoff_delay(attempt: int) -> float:
    """A random (full-jitter) share of an exponentially growing wait, capped at 2 s."""
    return min(2.0, 0.02 * (2**attempt)) * random.random()


def backoff(attempt: int) -> None:
    """Sleep before retrying a cancelled transaction or unprocessed batch items; Unavailable (a 429) when the
    request's deadline leaves no time for the retry."""
    delay = backoff_delay(attempt)
    if not deadline.allows(delay):
        raise Unavailable(f"DynamoDB refused the request {attempt} times and the function's time is nearly up")
    time.sleep(delay)


class ConditionFailed(Exception):
    """A conditional write or a transaction condition did not hold."""

    def __init__(self, reasons: list[str] | None = None) -> None:
        super().__init__("condition failed")
        self.reasons = reasons or []


def error_code(error: Exception) -> str | None:
    return (getattr(error, "response", None) or {}).get("Error", {}).get("Code")


def is_condition_failure(error: Exception) -> bool:
    return error_code(error) == "ConditionalCheckFailedException"


_COLLECTION_FULL = "ItemCollectionSizeLimitExceededException"


def collection_full(error: Exception, keys: Iterable[dict[str, Any]]) -> CollectionFull | None:
    """The MLflow error for DynamoDB's 10 GB item-collection limit (``keys``: the wire keys the write named)."""
    if error_code(error) != _COLLECTION_FULL:
        return None
    return CollectionFull(described(keys))


def described(keys: Iterable[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(describe_partition(key[PK]["S"]) for key in keys if PK in key))


_TOKEN_NAMESPACE = uuid.UUID("5d3a6a0e-3f7c-4b8e-9a41-7c2b1f0e9d11")


def request_token(token: str) -> str:
    """A ClientRequestToken for ``token`` on this table (36 characters at most).

    DynamoDB scopes idempotency tokens to the account and region, not the table: the same logical token on
    another table of the account (a second stack, a test table) must not collide with this one.
    """
    return str(uuid.uuid5(_TOKEN_NAMESPACE, f"{table_name()}|{token}"))
