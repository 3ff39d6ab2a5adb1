"""What API Gateway holds: the HTTP API's routes derived from the route table (the table's own paths, two
greedy routes per family of ``routes.GREEDY_FAMILIES``, one greedy route per ``/ajax-api/`` group), and the
route API Gateway would pick for a request (the local runtime routes as the deployed API does)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from serverless_mlflow.route_match import path_pattern
from serverless_mlflow.routes import AJAX_PREFIX, API_PREFIX, GREEDY_FAMILIES, ROUTES, Route, family_of


@dataclass(frozen=True)
class GatewayRoute:
    method: str  # an HTTP method or ANY
    path: str
    feature: str
    # No authorizer (basic auth): only the table's own routes of PUBLIC_OPERATIONS; an ajax group never is.
    public: bool = False

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


# /ajax-api/<version>/<service>/<group>: the segments that name a route group.
_GROUP_SEGMENTS = 5


def _ajax_groups() -> dict[str, list[tuple[Route, str]]]:
    groups: dict[str, list[tuple[Route, str]]] = {}
    for route in ROUTES:
        if family_of(route.path) is not None and route.path.startswith(AJAX_PREFIX):
            continue  # an ajax-only family: its own greedy routes
        if route.path.startswith(API_PREFIX):
            ajax = AJAX_PREFIX + route.path[len(API_PREFIX) :]
        elif route.path.startswith(AJAX_PREFIX):
            ajax = route.path
        else:
            continue
        prefix = "/".join(ajax.split("/")[:_GROUP_SEGMENTS])
        groups.setdefault(prefix, []).append((route, ajax))
    return groups


@cache
def gateway_routes() -> tuple[GatewayRoute, ...]:
    """The HTTP API's routes: the table's own paths, plus the ajax groups (greedy, to the group's main
    feature; a route of another feature in a group keeps an exact route, which API Gateway prefers)."""
    out = [
        GatewayRoute(r.method, r.path, r.feature, r.public)
        for r in ROUTES
        if not r.path.startswith(AJAX_PREFIX) and family_of(r.path) is None
    ]
    for prefix, feature in GREEDY_FAMILIES.items():
        out += [GatewayRoute("ANY", prefix, feature), GatewayRoute("ANY", prefix + "/{proxy+}", feature)]
    for prefix, members in sorted(_ajax_groups().items()):
        counts: dict[str, int] = {}
        for route, _ in members:
            counts[route.feature] = counts.get(route.feature, 0) + 1
        main = min(counts, key=lambda feature: (-counts[feature], feature))
        if any(route.feature == main and ajax == prefix for route, ajax in members):
            out.append(GatewayRoute("ANY", prefix, main))
        if any(route.feature == main and ajax != prefix for route, ajax in members):
            out.append(GatewayRoute("ANY", prefix + "/{proxy+}", main))
        out.extend(GatewayRoute(route.method, ajax, route.feature) for route, ajax in members if route.feature != main)
    return tuple(out)


@cache
def _compiled_gateway() -> list[tuple[re.Pattern[str], GatewayRoute, int]]:
    return [(*path_pattern(route.path), route) for route in gateway_routes()]  # type: ignore[misc]


def match_gateway(method: str, path: str) -> tuple[GatewayRoute, dict[str, str]] | None:
    """The gateway route API Gateway picks: the most specific path, then a method route over ANY. API Gateway
    routes ``/a/b/`` as ``/a/b`` (MLflow's job submission is ``POST /ajax-api/3.0/jobs/``)."""
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    best: tuple[GatewayRoute, dict[str, str], tuple[int, int]] | None = None
    for pattern, literal_chars, route in _compiled_gateway():
        if route.method not in (method, "ANY"):
            continue
        found = pattern.match(path)
        rank = (literal_chars, int(route.method == method))
        if found and (best is None or rank > best[2]):
            best = (route, found.groupdict(), rank)
    return (best[0], best[1]) if best else None
