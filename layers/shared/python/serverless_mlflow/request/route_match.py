"""Matching a request against the route table: the operation a method and path are for (the most literal
characters win; ``/ajax-api/`` paths mapped to ``/api/`` unless the table names them), and the methods a
path allows."""

from __future__ import annotations

import re
from functools import cache

from serverless_mlflow.request.routes import AJAX_PREFIX, API_PREFIX, ROUTES, Route


@cache
def _compiled() -> list[tuple[re.Pattern[str], Route, int]]:
    return [(pattern, route, literal_chars) for route in ROUTES for pattern, literal_chars in [path_pattern(route.path)]]


def path_pattern(path: str) -> tuple[re.Pattern[str], int]:
    """A table path's regex (a named group per parameter) and its literal characters (the more, the more specific)."""
    pattern = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", re.escape(path))
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
    return re.compile(f"^{pattern}$"), len(re.sub(r"\{\w+\+?\}", "", path))


def _match_operation(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    best: tuple[Route, dict[str, str], int] | None = None
    for pattern, route, literal_chars in _compiled():
        if route.method != method:
            continue
        found = pattern.match(path)
        if found and (best is None or literal_chars > best[2]):
            best = (route, found.groupdict(), literal_chars)
    return (best[0], best[1]) if best else None


def operation_path(method: str, path: str) -> str:
    """The path a feature matches: ``/ajax-api/...`` is ``/api/...`` unless the table names the ajax path (for
    any method: an ajax-only route asked with another method keeps its path, and its 405)."""
    if path.startswith(AJAX_PREFIX) and not any(_match_operation(m, path) for m in _table_methods()):
        return API_PREFIX + path[len(AJAX_PREFIX) :]
    return path


@cache
def _table_methods() -> tuple[str, ...]:
    return tuple(sorted({route.method for route in ROUTES}))


def match(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The operation a request is for: exact method, most literal characters wins; ajax paths mapped."""
    return _match_operation(method, operation_path(method, path))


def allowed_methods(path: str) -> list[str]:
    """The methods the table routes for ``path`` (with OPTIONS, which MLflow's server answers for any of
    them); empty for a path the table does not know."""
    found = sorted({route.method for route in ROUTES if match(route.method, path) is not None})
    return [*found, "OPTIONS"] if found else []
