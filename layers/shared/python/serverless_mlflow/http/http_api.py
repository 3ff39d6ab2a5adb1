"""What API Gateway holds: the HTTP API's routes derived from the route table (root and public paths exactly, two
greedy routes per family of ``routes.GREEDY_FAMILIES``, one greedy route per ``/api/`` and ``/ajax-api/`` group),
and the route API Gateway would pick for a request (the local runtime routes as the deployed API does)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from serverless_mlflow.request.route_match import path_pattern
from serverless_mlflow.request.routes import AJAX_PREFIX, API_PREFIX, GREEDY_FAMILIES, ROUTES, Route, family_of


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


# /api/<version>/<service>/<group> (and its /ajax-api/ twin): the segments that name a route group.
_GROUP_SEGMENTS = 5


def group_of(path: str) -> str:
    return "/".join(path.split("/")[:_GROUP_SEGMENTS])


def _greedy_candidates(route: Route) -> list[str]:
    """The paths under which a table route is served through its group's greedy route: its ``/ajax-api/`` twin
    always (the UI's paths), its own ``/api/`` path unless it is public (no authorizer under basic auth: an exact
    route of its own) or in an explicit family (``GREEDY_FAMILIES``: routes of their own)."""
    if route.path.startswith(AJAX_PREFIX):
        return [] if family_of(route.path) is not None else [route.path]
    if not route.path.startswith(API_PREFIX):
        return []
    ajax = AJAX_PREFIX + route.path[len(API_PREFIX) :]
    return [ajax] if route.public or family_of(route.path) is not None else [route.path, ajax]


def _groups() -> dict[str, list[tuple[Route, str]]]:
    groups: dict[str, list[tuple[Route, str]]] = {}
    for route in ROUTES:
        for path in _greedy_candidates(route):
            groups.setdefault(group_of(path), []).append((route, path))
    return groups


@cache
def gateway_routes() -> tuple[GatewayRoute, ...]:
    """The HTTP API's routes: the table's paths outside any group (root paths, public ones) exactly, two greedy
    routes per explicit family, and per ``/api/`` and ``/ajax-api/`` group one greedy route (``ANY <group>`` and/or
    ``ANY <group>/{proxy+}``) to the group's main feature. A route of another feature in a group keeps an exact
    route, which API Gateway prefers. A new MLflow route under an existing group costs no route (HTTP API quota:
    300) and no CloudFormation resource; its feature's resolver tells it apart (and answers unknown paths
    ENDPOINT_NOT_FOUND, known paths with another method 405, as MLflow does)."""
    out = [
        GatewayRoute(r.method, r.path, r.feature, r.public)
        for r in ROUTES
        if family_of(r.path) is None and not (r.path.startswith(API_PREFIX) and not r.public) and not r.path.startswith(AJAX_PREFIX)
    ]
    for prefix, feature in GREEDY_FAMILIES.items():
        out += [GatewayRoute("ANY", prefix, feature), GatewayRoute("ANY", prefix + "/{proxy+}", feature)]
    for prefix, members in sorted(_groups().items()):
        counts: dict[str, int] = {}
        for route, _ in members:
            counts[route.feature] = counts.get(route.feature, 0) + 1
        main = min(counts, key=lambda feature: (-counts[feature], feature))
        if any(route.feature == main and path == prefix for route, path in members):
            out.append(GatewayRoute("ANY", prefix, main))
        if any(route.feature == main and path != prefix for route, path in members):
            out.append(GatewayRoute("ANY", prefix + "/{proxy+}", main))
        out.extend(GatewayRoute(route.method, path, route.feature) for route, path in members if route.feature != main)
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
