"""The GraphQL executor on its own: parsing, variables, aliases, fragments, projection and errors."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.errors import MlflowError, not_found
from serverless_mlflow.graphql import execute


def _thing(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    given = arguments.get("input") or {}
    if given.get("id") == "missing":
        raise not_found("Thing missing not found")
    calls.append(given)
    return {
        "__typename": "Thing",
        "id": given.get("id"),
        "size": given.get("size"),
        "tags": [{"__typename": "Tag", "key": "a", "value": "1"}, {"__typename": "Tag", "key": "b", "value": "2"}],
        "owner": lambda: owners.append(1) or {"__typename": "Owner", "name": "ann"},
    }


calls: list[dict[str, Any]] = []
owners: list[int] = []
ROOTS = {"query": {"thing": _thing}, "mutation": {"thing": _thing}}


def test_variables_defaults_aliases_and_typename() -> None:
    query = """
      # a comment
      query Q($id: String!, $size: Int = 3, $unused: [String!]) @component(name: "X") {
        one: thing(input: {id: $id, size: $size}) { __typename id size tags { key } }
        two: thing(input: {id: "lit\\u00e9", size: -2}) { id size }
      }
    """
    answer = execute(ROOTS, query, {"id": "t1"}, "Q")
    assert answer == {
        "data": {
            "one": {"__typename": "Thing", "id": "t1", "size": 3, "tags": [{"key": "a"}, {"key": "b"}]},
            "two": {"id": "lité", "size": -2},
        },
        "errors": None,
    }


def test_fragments_and_lazy_fields() -> None:
    owners.clear()
    query = """
      { thing(input: {id: "x"}) { ...Parts ... on Thing { id } } }
      fragment Parts on Thing { tags { value } }
    """
    answer = execute(ROOTS, query)
    assert answer["data"] == {"thing": {"tags": [{"value": "1"}, {"value": "2"}], "id": "x"}}
    assert owners == []  # a lazy field that is not selected is never resolved
    execute(ROOTS, '{ thing(input: {id: "x"}) { owner { name } } }')
    assert owners == [1]


def test_operation_selection_and_mutations() -> None:
    document = 'query A { thing(input: {id: "a"}) { id } } mutation B { thing(input: {id: "b"}) { id } }'
    assert execute(ROOTS, document, None, "B")["data"] == {"thing": {"id": "b"}}
    assert execute(ROOTS, document)["errors"] == ["Must provide operation name if query contains multiple operations."]
    assert execute(ROOTS, document, None, "C")["errors"] == ["Unknown operation named 'C'."]


def test_resolver_errors_null_the_field_only() -> None:
    answer = execute(ROOTS, '{ a: thing(input: {id: "missing"}) { id } b: thing(input: {id: "ok"}) { id } }')
    assert answer == {"data": {"a": None, "b": {"id": "ok"}}, "errors": ["Thing missing not found"]}
    assert isinstance(not_found("x"), MlflowError)


def test_invalid_documents_answer_no_data() -> None:
    for query, message in [
        ("{ nope }", "Cannot query field 'nope' on type 'Query'."),
        ('{ thing(input: {id: "x"}) { nope } }', "Cannot query field 'nope' on type 'Thing'."),
        ('{ thing(input: {id: "x"}) }', "Field of type 'Thing' must have a selection of subfields."),
        ('{ thing(input: {id: "x"}) { id @include(if: true) } }', "Unknown directive '@include'."),
        ("{ thing( }", None),
        (None, "Must provide query string."),
    ]:
        answer = execute(ROOTS, query)
        assert answer["data"] is None and answer["errors"], query
        if message:
            assert answer["errors"] == [message]
