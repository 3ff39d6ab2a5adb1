"""Each feature's request table (``<feature>/messages.py``) names only operations routed to that feature,
declares only field kinds the layer's parser knows, and every handler check is a callable."""

from __future__ import annotations

import importlib

import pytest

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.request import Message, parse_message, routes

FEATURES = tuple(routes.features())
SCALARS = {"string", "int32", "int64", "double", "bool", "enum", "message", "map"}


def _kind_known(kind: str) -> bool:
    return (kind[1:-1] if kind.startswith("[") and kind.endswith("]") else kind) in SCALARS


@pytest.mark.parametrize("feature", FEATURES)
def test_table_names_routed_operations_with_known_kinds(feature: str) -> None:
    table = importlib.import_module(f"{feature}.messages").MESSAGES
    operations = {route.operation for route in routes.routes_for(feature)}
    assert set(table) <= operations, sorted(set(table) - operations)
    for operation, spec in table.items():
        assert isinstance(spec, Message), operation
        assert all(_kind_known(kind) for kind in (spec.fields or {}).values()), (operation, spec.fields)
        assert all(callable(check) for checks in (spec.checks or {}).values() for check in checks), operation


def test_a_map_field_takes_only_string_values() -> None:
    spec = Message({"auth_config": "map"})
    assert parse_message({"auth_config": {"a": "b"}}, spec) == {"auth_config": {"a": "b"}}
    with pytest.raises(MlflowError) as raised:
        parse_message({"auth_config": {"a": 1}}, spec)
    assert raised.value.message == (
        "Invalid value 1 for parameter 'auth_config.a' supplied:  Hint: Value was of type 'int'."
        " See the API docs for more information about request parameters."
    )
