"""A small GraphQL executor for the queries the MLflow web UI sends (no graphene in the Lambdas).

MLflow's ``/graphql`` runs a graphene schema generated from its protos. The UI's bundle sends a handful
of fixed operations (``MlflowGetExperimentQuery``, ``GetRun``, ``SearchRuns``,
``GetMetricHistoryBulkInterval``), so this module parses GraphQL documents (operations, variables with
defaults, aliases, arguments, fragments, inline fragments, ``__typename``) and
projects the selection onto plain values that resolvers build: dicts keyed by GraphQL field names, each
object with its ``__typename``; a callable value is resolved lazily, only when selected.

Answers have graphene's shape: ``{"data": ..., "errors": [messages] | None}``; a resolver's
``MlflowError`` nulls that root field and adds its message; a document that does not parse or selects an
unknown field answers ``data: null`` with the message (graphene's validation behaviour).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.errors import MlflowError


class GraphQLError(Exception):
    pass


# MLflow's schema declares only @component (on operations); it replaces GraphQL's default directives, so
# even @skip/@include are "Unknown directive" there, and here.
KNOWN_DIRECTIVES = frozenset({"component"})


# --- lexer -----------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<skip>[\s,\ufeff]+|\#[^\n\r]*)
      |(?P<spread>\.\.\.)
      |(?P<block>\"\"\"(?:\\\"\"\"|[^"]|"(?!""))*\"\"\")
      |(?P<string>"(?:\\.|[^"\\\n\r])*")
      |(?P<number>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)
      |(?P<name>[_A-Za-z][_0-9A-Za-z]*)
      |(?P<punct>[!$&()\:=@\[\]{}|])""",
    re.VERBOSE,
)


def _tokens(source: str) -> list[tuple[str, str]]:
    out, position = [], 0
    while position < len(source):
        found = _TOKEN.match(source, position)
        if not found:
            raise GraphQLError(f"Syntax Error: Unexpected character: {source[position]!r}.")
        position = found.end()
        kind = found.lastgroup or ""
        if kind != "skip":
            out.append((kind, found.group()))
    out.append(("eof", ""))
    return out


# --- parser ----------------------------------------------------------------------------------------


@dataclass
class Field:
    name: str
    alias: str
    arguments: dict[str, Any]
    directives: list[tuple[str, dict[str, Any]]]
    selections: list[Any] | None


@dataclass
class Spread:
    name: str
    directives: list[tuple[str, dict[str, Any]]]


@dataclass
class InlineFragment:
    type_condition: str | None
    directives: list[tuple[str, dict[str, Any]]]
    selections: list[Any]


@dataclass
class Operation:
    kind: str
    name: str | None
    variables: dict[str, Any]  # name -> default value (None when there is none)
    selections: list[Any]


@dataclass
class Variable:
    name: str


@dataclass
class Document:
    operations: list[Operation] = field(default_factory=list)
    fragments: dict[str, InlineFragment] = field(default_factory=dict)


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = _tokens(source)
        self.index = 0

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        token_kind, token_value = self.tokens[self.index]
        return (value is None or token_value == value) and (kind is None or token_kind == kind) and token_kind != "eof"

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        token_kind, token_value = self.tokens[self.index]
        if token_kind == "eof" or (value is not None and token_value != value) or (kind is not None and token_kind != kind):
            shown = "<EOF>" if token_kind == "eof" else f"'{token_value}'"
            raise GraphQLError(f"Syntax Error: Expected {value or kind}, found {shown}.")
        self.index += 1
        return token_value

    def document(self) -> Document:
        doc = Document()
        while not self.tokens[self.index][0] == "eof":
            if self.peek("{"):
                doc.operations.append(Operation("query", None, {}, self.selection_set()))
            elif self.peek("fragment"):
                self.take()
                name = self.take(kind="name")
                self.take("on")
                type_condition = self.take(kind="name")
                directives = self.directives()
                doc.fragments[name] = InlineFragment(type_condition, directives, self.selection_set())
            elif self.peek("query") or self.peek("mutation") or self.peek("subscription"):
                kind = self.take()
                name = self.take(kind="name") if self.peek(kind="name") else None
                variables = self.variable_definitions() if self.peek("(") else {}
                self.directives()
                doc.operations.append(Operation(kind, name, variables, self.selection_set()))
            else:
                self.take("{")
        return doc

    def variable_definitions(self) -> dict[str, Any]:
        self.take("(")
        out: dict[str, Any] = {}
        while not self.peek(")"):
            self.take("$")
            name = self.take(kind="name")
            self.take(":")
            self.type_ref()
            out[name] = self.value(const=True) if self.peek("=") and self.take("=") else None
            self.directives()
        self.take(")")
        return out

    def type_ref(self) -> None:
        if self.peek("["):
            self.take("[")
            self.type_ref()
            self.take("]")
        else:
            self.take(kind="name")
        if self.peek("!"):
            self.take("!")

    def directives(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        while self.peek("@"):
            self.take("@")
            name = self.take(kind="name")
            if name not in KNOWN_DIRECTIVES:
                raise GraphQLError(f"Unknown directive '@{name}'.")
            out.append((name, self.arguments()))
        return out

    def arguments(self) -> dict[str, Any]:
        if not self.peek("("):
            return {}
        self.take("(")
        out = {}
        while not self.peek(")"):
            name = self.take(kind="name")
            self.take(":")
            out[name] = self.value()
        self.take(")")
        return out

    def selection_set(self) -> list[Any]:
        self.take("{")
        out: list[Any] = []
        while not self.peek("}"):
            out.append(self.selection())
        self.take("}")
        if not out:
            raise GraphQLError("Syntax Error: Expected Name, found '}'.")
        return out

    def selection(self) -> Any:
        if self.peek("..."):
            self.take()
            if self.peek(kind="name") and not self.peek("on"):
                return Spread(self.take(), self.directives())
            type_condition = None
            if self.peek("on"):
                self.take()
                type_condition = self.take(kind="name")
            return InlineFragment(type_condition, self.directives(), self.selection_set())
        name = self.take(kind="name")
        alias = name
        if self.peek(":"):
            self.take()
            name = self.take(kind="name")
        arguments = self.arguments()
        directives = self.directives()
        selections = self.selection_set() if self.peek("{") else None
        return Field(name, alias, arguments, directives, selections)

    def value(self, const: bool = False) -> Any:
        kind, token = self.tokens[self.index]
        if token == "$" and not const:
            self.take()
            return Variable(self.take(kind="name"))
        if token == "[":
            self.take()
            items = []
            while not self.peek("]"):
                items.append(self.value(const))
            self.take("]")
            return items
        if token == "{":
            self.take()
            obj = {}
            while not self.peek("}"):
                key = self.take(kind="name")
                self.take(":")
                obj[key] = self.value(const)
            self.take("}")
            return obj
        self.index += 1
        if kind == "number":
            return float(token) if any(c in token for c in ".eE") else int(token)
        if kind == "string":
            return _unescape(token[1:-1])
        if kind == "block":
            return token[3:-3]
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(token, token)
        raise GraphQLError(f"Syntax Error: Unexpected '{token or '<EOF>'}'.")


def _unescape(text: str) -> str:
    import json

    return json.loads(f'"{text}"')


def parse(source: str) -> Document:
    return _Parser(source).document()


# --- execution ---------------------------------------------------------------------------------------

Resolver = Callable[[dict[str, Any], list[str]], Any]


@dataclass
class _Context:
    variables: dict[str, Any]
    fragments: dict[str, InlineFragment]
    errors: list[str]


def _substitute(value: Any, variables: dict[str, Any]) -> Any:
    if isinstance(value, Variable):
        return variables.get(value.name)
    if isinstance(value, list):
        return [_substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, variables) for key, item in value.items()}
    return value


def _fields(selections: list[Any], typename: str, ctx: _Context) -> list[Field]:
    """The selection flattened (fragments whose type condition fits ``typename`` merged in)."""
    out: list[Field] = []
    for selection in selections:
        if isinstance(selection, Field):
            out.append(selection)
            continue
        fragment = selection if isinstance(selection, InlineFragment) else ctx.fragments.get(selection.name)
        if fragment is None:
            raise GraphQLError(f"Unknown fragment '{selection.name}'.")
        if fragment.type_condition in (None, typename):
            out.extend(_fields(fragment.selections, typename, ctx))
    return out


def _project(value: Any, selections: list[Any] | None, ctx: _Context) -> Any:
    if callable(value):
        value = value()
    if value is None:
        return None
    if isinstance(value, list):
        return [_project(item, selections, ctx) for item in value]
    if not isinstance(value, dict):
        if selections:
            raise GraphQLError("Field of a scalar type cannot have a selection.")
        return value
    typename = value.get("__typename", "")
    if not selections:
        raise GraphQLError(f"Field of type '{typename}' must have a selection of subfields.")
    out: dict[str, Any] = {}
    for selected in _fields(selections, typename, ctx):
        if selected.name not in value:
            raise GraphQLError(f"Cannot query field '{selected.name}' on type '{typename}'.")
        out[selected.alias] = _project(value[selected.name], selected.selections, ctx)
    return out


def execute(
    roots: dict[str, dict[str, Resolver]],
    query: str | None,
    variables: dict[str, Any] | None = None,
    operation_name: str | None = None,
) -> dict[str, Any]:
    """Run ``query``: ``roots`` maps ``query``/``mutation`` to resolvers by root field name; a resolver
    gets the field's arguments (variables substituted) and the error list (for messages about values it
    answers anyway, as graphene reports a NaN Float), and returns the field's value (see the module doc)."""
    try:
        if not isinstance(query, str) or not query.strip():
            raise GraphQLError("Must provide query string.")
        document = parse(query)
        candidates = [op for op in document.operations if operation_name in (None, op.name)]
        if not candidates:
            raise GraphQLError(f"Unknown operation named '{operation_name}'.")
        if len(candidates) > 1:
            raise GraphQLError("Must provide operation name if query contains multiple operations.")
        operation = candidates[0]
        resolvers = roots.get(operation.kind)
        if resolvers is None:
            raise GraphQLError(f"Schema is not configured for {operation.kind}s.")
        given = variables if isinstance(variables, dict) else {}
        ctx = _Context({name: given.get(name, default) for name, default in operation.variables.items()}, document.fragments, [])
        root_type = "Query" if operation.kind == "query" else "Mutation"
        selected = _fields(operation.selections, root_type, ctx)
        for root in selected:
            if root.name != "__typename" and root.name not in resolvers:
                raise GraphQLError(f"Cannot query field '{root.name}' on type '{root_type}'.")
        data: dict[str, Any] = {}
        for root in selected:
            if root.name == "__typename":
                data[root.alias] = root_type
                continue
            try:
                value = resolvers[root.name](_substitute(root.arguments, ctx.variables), ctx.errors)
            except MlflowError as error:
                data[root.alias] = None
                ctx.errors.append(error.message)
                continue
            data[root.alias] = _project(value, root.selections, ctx)
    except GraphQLError as error:
        return {"data": None, "errors": [str(error)]}
    return {"data": data, "errors": ctx.errors or None}
