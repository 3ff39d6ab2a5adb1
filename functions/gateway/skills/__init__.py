"""The skill registry (MLflow 3.18's ``/api/3.0/mlflow/skills``) on the gateway function.

Its modules load with the first skill request, not at the gateway's cold start: ``OPERATIONS`` names each route's
operation (from the route table) with a stand-in that imports ``operations`` when called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.request.routes import ROUTES, SKILLS

_operations = deferred("gateway.skills.operations")

NAMES: tuple[str, ...] = tuple(route.operation for route in ROUTES if route.path == SKILLS or route.path.startswith(f"{SKILLS}/"))


def _stand_in(name: str) -> Callable[[Any], dict[str, Any]]:
    def operation(req: Any) -> dict[str, Any]:
        return _operations.OPERATIONS[name](req)

    operation.__name__ = name
    return operation


OPERATIONS: dict[str, Callable[[Any], dict[str, Any]]] = {name: _stand_in(name) for name in NAMES}
