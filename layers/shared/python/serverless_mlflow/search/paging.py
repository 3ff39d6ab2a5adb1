"""Keyset page tokens and MLflow's max_results limits.

MLflow's tokens are base64 JSON offsets (`{"offset": n}`), which shift when entities are added or removed
between pages. Ours are base64 JSON keyset positions: `{"v": 1, "o": <order fingerprint>, "p": [[rank, value],
...]}` = the sort position of the last entity returned (see ordering.py). The next page starts strictly after
it, so concurrent inserts never duplicate or skip entities that existed before the first page. The order
always ends with a unique id, so positions are strict.

Malformed tokens raise INVALID_PARAMETER_VALUE with MLflow's texts ("Invalid page token, could not
base64-decode", "Invalid page token, decoded value=...", "Invalid page token, parsed value=...").
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from serverless_mlflow.core import validation
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation import SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT as SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT
from serverless_mlflow.core.validation import SEARCH_MAX_RESULTS_DEFAULT as SEARCH_MAX_RESULTS_DEFAULT
from serverless_mlflow.core.validation import SEARCH_MAX_RESULTS_THRESHOLD as SEARCH_MAX_RESULTS_THRESHOLD
from serverless_mlflow.core.validation import SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT as SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT
from serverless_mlflow.core.validation import SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD as SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD
from serverless_mlflow.core.validation import SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT as SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT
from serverless_mlflow.core.validation import SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD as SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD
from serverless_mlflow.request.pages import token_json
from serverless_mlflow.search.ordering import OrderBy, position, position_key, sort_key

TOKEN_VERSION = 1


Position = list[list[Any]]


def order_fingerprint(order_by: OrderBy) -> str:
    """Identifies the ORDER BY a token was made for (a token only resumes the same ordering)."""
    text = json.dumps([order_by.kind, *[[t.type, t.key, t.ascending, t.nulls_last] for t in order_by]], ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def encode_position(pos: Position, order_by: OrderBy) -> str:
    payload = {"v": TOKEN_VERSION, "o": order_fingerprint(order_by), "p": pos}
    return base64.b64encode(json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")).decode("ascii")


def encode_page_token(last_entity: dict[str, Any], order_by: OrderBy) -> str:
    """The token that resumes right after `last_entity` (the last one returned on this page)."""
    return encode_position(position(last_entity, order_by), order_by)


def _scalar_ok(v: Any) -> bool:
    return v is None or (isinstance(v, (str, int, float)) and not isinstance(v, bool))


def decode_page_token(page_token: str | None, order_by: OrderBy) -> Position | None:
    """The keyset position a token resumes after (None for no/empty token); MLflow's errors when malformed."""
    if not page_token:
        return None
    parsed_token = token_json(page_token)
    pos = parsed_token.get("p") if isinstance(parsed_token, dict) else None
    ok = (
        isinstance(parsed_token, dict)
        and parsed_token.get("v") == TOKEN_VERSION
        and parsed_token.get("o") == order_fingerprint(order_by)
        and isinstance(pos, list)
        and len(pos) == len(order_by)
        and all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], int) and not isinstance(p[0], bool) and _scalar_ok(p[1]) for p in pos
        )
    )
    if not ok:
        raise invalid(f"Invalid page token, parsed value={parsed_token}")
    return pos


def is_after(entity: dict[str, Any], pos: Position | None, order_by: OrderBy) -> bool:
    """True when `entity` sorts strictly after keyset position `pos` (always True for pos None)."""
    if pos is None:
        return True
    try:
        return sort_key(entity, order_by) > position_key(pos, order_by)
    except TypeError:
        raise invalid(f"Invalid page token, parsed value={pos}") from None


def page(
    sorted_entities: Sequence[dict[str, Any]],
    order_by: OrderBy,
    max_results: int | None,
    page_token: str | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `sorted_entities` (already filtered and sorted by `order_by`) after `page_token`.

    Returns (entities, next_page_token); next_page_token is None when nothing follows (like MLflow, which
    fetches max_results + 1 rows). max_results None = no limit (search_runs allows it).
    """
    pos = decode_page_token(page_token, order_by)
    start = 0
    if pos is not None:
        target = position_key(pos, order_by)
        try:
            start = bisect.bisect_right(sorted_entities, target, key=lambda e: sort_key(e, order_by))
        except TypeError:
            raise invalid(f"Invalid page token, parsed value={pos}") from None
    if max_results is None:
        return list(sorted_entities[start:]), None
    chunk = list(sorted_entities[start : start + max_results])
    next_token = encode_page_token(chunk[-1], order_by) if chunk and start + max_results < len(sorted_entities) else None
    return chunk, next_token


# Lambda caps a response at 6 MB (6,291,456 bytes of the JSON envelope, in which the body is an escaped
# string); the rest of the envelope (status, headers, the answer's other fields) fits in the margin.
RESPONSE_PAYLOAD_LIMIT = 6 * 1024 * 1024
RESPONSE_MARGIN = 64 * 1024


def payload_size(row: Any) -> int:
    """Bytes a JSON value adds to a Lambda response: its JSON text, escaped again as part of the body string."""
    return len(json.dumps(json.dumps(row, separators=(",", ":"), default=str))) - 2 + 1  # less the quotes, plus a comma


def fit_payload(
    rows: Sequence[Any],
    entities: Sequence[dict[str, Any]],
    order_by: OrderBy,
    next_token: str | None,
    limit: int = RESPONSE_PAYLOAD_LIMIT - RESPONSE_MARGIN,
) -> tuple[list[Any], str | None]:
    """Shorten a page whose rendered rows would not fit a Lambda response, continuing with a page token.

    ``rows[i]`` is the JSON of ``entities[i]`` (a page as ``page`` returned it, ``next_token`` its token).
    The longest prefix that fits is kept (at least one row: a single row over the limit cannot be split)
    and the token then resumes after the last row kept, so the client still gets every entity exactly
    once across pages; a page that fits is returned as it is.
    """
    total = 0
    for index, row in enumerate(rows):
        total += payload_size(row)
        if total > limit and index > 0:
            return list(rows[:index]), encode_page_token(entities[index - 1], order_by)
    return list(rows), next_token


# --------------------------------------------------------------------------------------------------------
# max_results, with MLflow's store messages
# --------------------------------------------------------------------------------------------------------


def check_max_results_runs(max_results: int | None) -> None:
    """SqlAlchemyStore._validate_max_results_param(max_results, allow_null=True) (search_runs)."""
    validation.validate_max_results_param(max_results, allow_null=True)


def check_max_results_experiments(max_results: int | None) -> None:
    """SqlAlchemyStore._validate_max_results_param(max_results) (search_experiments)."""
    validation.validate_max_results_param(max_results, allow_null=False)


check_max_results_registered_models = validation.validate_registered_model_max_results
check_max_results_model_versions = validation.validate_model_version_max_results
