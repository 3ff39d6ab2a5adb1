"""MLflow's limits on a GraphQL document (mlflow/server/graphql/graphql_no_batching.py), checked before it runs."""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from .parser import Document, Field, InlineFragment

MAX_DEPTH = 10
MAX_SELECTIONS = 1000
MAX_ROOT_FIELDS_ENV = "MLFLOW_SERVER_GRAPHQL_MAX_ROOT_FIELDS"
MAX_ALIASES_ENV = "MLFLOW_SERVER_GRAPHQL_MAX_ALIASES"
DEFAULT_MAX_ROOT_FIELDS = DEFAULT_MAX_ALIASES = 10


def _limit(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _level(selections: list[Any], fragments: dict[str, InlineFragment], visited: frozenset[str]) -> tuple[list[Field], int]:
    """The fields of one level with fragments merged in, and how many of them are aliased (MLflow counts
    aliases over the whole level, so spreading them over sibling fragments does not escape the limit)."""
    fields: list[Field] = []
    aliases = 0
    pending = deque(selections)
    seen = set(visited)
    while pending:
        selection = pending.popleft()
        if isinstance(selection, Field):
            fields.append(selection)
            aliases += selection.aliased
        elif isinstance(selection, InlineFragment):
            pending.extend(selection.selections)
        elif selection.name not in seen:
            seen.add(selection.name)
            fragment = fragments.get(selection.name)
            if fragment is not None:
                pending.extend(fragment.selections)
    return fields, aliases


def check_query_safety(document: Document) -> str | None:
    """MLflow's ``check_query_safety``: the error message when the document is too deep, too large, has too
    many root fields (over all its operations) or too many aliases on one level; None when it may run."""
    root_fields = max_aliases = total = 0
    for operation in document.operations:
        stack: list[tuple[list[Any], int, frozenset[str]]] = [(operation.selections, 1, frozenset())]
        while stack:
            selections, depth, visited = stack.pop()
            if depth > MAX_DEPTH:
                return f"Query exceeds maximum depth of {MAX_DEPTH}"
            fields, aliases = _level(selections, document.fragments, visited)
            for found in fields:
                if depth == 1:
                    root_fields += 1
                if found.selections:
                    stack.append((found.selections, depth + 1, visited))
                total += 1
                if total > MAX_SELECTIONS:
                    return f"Query exceeds maximum total selections of {MAX_SELECTIONS}"
            max_aliases = max(max_aliases, aliases)
    for what, value, env, default in (
        ("root fields", root_fields, MAX_ROOT_FIELDS_ENV, DEFAULT_MAX_ROOT_FIELDS),
        ("aliases", max_aliases, MAX_ALIASES_ENV, DEFAULT_MAX_ALIASES),
    ):
        limit = _limit(env, default)
        if value > limit:
            return (
                f"GraphQL queries should have at most {limit} {what}, got {value} {what}. "
                f"To increase the limit, set the {env} environment variable."
            )
    return None
