"""The GraphQL executor on its own: parsing, variables, aliases, fragments, projection and errors."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import MlflowError, not_found
from serverless_mlflow.request.graphql import execute


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


class _Recorder:
    """A guard that refuses ``id: "theirs"`` and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    def root(self, field_name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        self.asked.append((field_name, (arguments.get("input") or {}).get("id")))
        return None if (arguments.get("input") or {}).get("id") == "theirs" else arguments

    def child(self, type_name: str, field_name: str, value: Any) -> Any:
        return [tag for tag in value if tag["key"] != "b"] if (type_name, field_name) == ("Thing", "tags") else value


def test_a_guard_judges_every_root_field_with_its_actual_arguments() -> None:
    guard = _Recorder()
    query = """
      query Q($mine: String, $i: ThingInput) {
        mine: thing(input: {id: $mine}) { id tags { key } }
        ...More
      }
      fragment More on Query { theirs: thing(input: $i) { id } ... on Query { again: thing(input: {id: "theirs"}) { id } } }
      query Other { thing(input: {id: "theirs"}) { id } }
    """
    answer = execute(ROOTS, query, {"mine": "m", "i": {"id": "theirs"}}, "Q", guard)
    # Refused fields are null without an error (MLflow's GraphQL middleware); nested values are filtered.
    assert answer == {"data": {"mine": {"id": "m", "tags": [{"key": "a"}]}, "theirs": None, "again": None}, "errors": None}
    assert guard.asked == [("thing", "m"), ("thing", "theirs"), ("thing", "theirs")]


def test_mlflows_limits_on_a_document() -> None:
    def root_fields(n: int) -> str:
        return "{ " + " ".join(f'f{i}: thing(input: {{id: "x"}}) {{ id }}' for i in range(n)) + " }"

    assert execute(ROOTS, root_fields(10))["errors"] is None
    assert execute(ROOTS, root_fields(11))["errors"] == [
        "GraphQL queries should have at most 10 root fields, got 11 root fields. "
        "To increase the limit, set the MLFLOW_SERVER_GRAPHQL_MAX_ROOT_FIELDS environment variable."
    ]
    # Root fields count over every operation of the document, run or not.
    two = "query A " + root_fields(6) + " query B " + root_fields(5)
    assert "got 11 root fields" in execute(ROOTS, two, None, "A")["errors"][0]
    # Aliases count per level, fragments on that level included.
    spread = '{ thing(input: {id: "x"}) { ...F ...G } } fragment F on Thing { ' + " ".join(f"a{i}: id" for i in range(6)) + " }"
    spread += " fragment G on Thing { " + " ".join(f"b{i}: id" for i in range(5)) + " }"
    assert execute(ROOTS, spread)["errors"] == [
        "GraphQL queries should have at most 10 aliases, got 11 aliases. "
        "To increase the limit, set the MLFLOW_SERVER_GRAPHQL_MAX_ALIASES environment variable."
    ]
    deep = "{ " + "".join(f"f{i} {{ " for i in range(10)) + "leaf" + " }" * 10 + " }"
    assert execute(ROOTS, deep)["errors"] == ["Query exceeds maximum depth of 10"]
    wide = '{ thing(input: {id: "x"}) { ' + " ".join("id" for _ in range(1000)) + " } }"
    assert execute(ROOTS, wide)["errors"] == ["Query exceeds maximum total selections of 1000"]
    # A fragment spreading itself is refused (graphql-core's validation), not followed forever.
    answer = execute(ROOTS, '{ thing(input: {id: "x"}) { ...F } } fragment F on Thing { id ...F }')
    assert answer == {"data": None, "errors": ["Cannot spread fragment 'F' within itself."]}
