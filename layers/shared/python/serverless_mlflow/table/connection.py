"""The DynamoDB client (one per environment, Scan refused), the table's name, the request counters, retry
pacing, idempotency tokens, and how DynamoDB's errors map to ours (``ConditionFailed``, ``CollectionFull``)."""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from serverless_mlflow.errors import CollectionFull
from serverless_mlflow.schema import PK, describe_partition
from serverless_mlflow.stats import Stats

MAX_UNPROCESSED_RETRIES = 12

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

                _client = boto3.client(
                    "dynamodb",
                    endpoint_url=os.environ.get("DYNAMODB_ENDPOINT_URL") or None,
                    config=Config(
                        retries={"mode": "adaptive", "max_attempts": 10},
                        max_pool_connections=32,
                        # Embedded moto walks the whole table per Query; large local benchmarks need longer.
                        read_timeout=int(os.environ.get("DYNAMODB_READ_TIMEOUT_SECONDS", "60")),
                    ),
                )
                _client.meta.events.register("before-call.dynamodb.Scan", _forbid_scan)
    return _client


def _forbid_scan(**_: Any) -> None:
    # Request paths are GetItem, Query, batches or transactions (docs/access-patterns.md), never Scan.
    raise RuntimeError("Scan is not allowed on a request path")


def reset_client() -> None:
    """Forget the cached client (tests switch endpoints)."""
    global _client
    _client = None


def table_name() -> str:
    return os.environ["TABLE_NAME"]


def backoff(attempt: int) -> None:
    """Sleep a random (full-jitter) share of an exponentially growing wait, capped at 2 s."""
    time.sleep(min(2.0, 0.02 * (2**attempt)) * random.random())


class ConditionFailed(Exception):
    """A conditional write or a transaction condition did not hold."""

    def __init__(self, reasons: list[str] | None = None) -> None:
        super().__init__("condition failed")
        self.reasons = reasons or []


def error_code(error: Exception) -> str | None:
    return getattr(error, "response", {}).get("Error", {}).get("Code")


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
