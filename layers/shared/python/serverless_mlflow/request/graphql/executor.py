"""Running a parsed document against resolvers, projecting the selection, with an optional ``Guard``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from serverless_mlflow.core.errors import MlflowError

from .limits import check_query_safety
from .parser import Field, GraphQLError, InlineFragment, Variable, parse

Resolver = Callable[[dict[str, Any], list[str]], Any]


class Guard(Protocol):
    """Who may resolve what (basic auth; ``serverless_mlflow.auth.graphql_guard``)."""

    def root(self, field_name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments to resolve ``field_name`` with (possibly narrowed); None: the field answers null."""
        ...

    def child(self, type_name: str, field_name: str, value: Any) -> Any:
        """A nested field's value as the caller may see it (``value`` is already resolved)."""
        ...


def input_of(arguments: dict[str, Any]) -> dict[str, Any]:
    """A root field's ``input`` object with snake_case keys (the UI writes camelCase): what resolvers read,
    and so what a guard must judge."""
    given = arguments.get("input") or arguments.get("data") or {}
    if not isinstance(given, dict):
        return {}
    return {"".join(f"_{c.lower()}" if c.isupper() else c for c in key): value for key, value in given.items() if value is not None}


@dataclass
class _Context:
    variables: dict[str, Any]
    fragments: dict[str, InlineFragment]
    errors: list[str]
    guard: Guard | None = None


def _substitute(value: Any, variables: dict[str, Any]) -> Any:
    if isinstance(value, Variable):
        return variables.get(value.name)
    if isinstance(value, list):
        return [_substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, variables) for key, item in value.items()}
    return value


def _fields(selections: list[Any], typename: str, ctx: _Context, spreading: frozenset[str] = frozenset()) -> list[Field]:
    """The selection flattened (fragments whose type condition fits ``typename`` merged in)."""
    out: list[Field] = []
    for selection in selections:
        if isinstance(selection, Field):
            out.append(selection)
            continue
        inline = isinstance(selection, InlineFragment)
        fragment = selection if inline else ctx.fragments.get(selection.name)
        if fragment is None:
            raise GraphQLError(f"Unknown fragment '{selection.name}'.")
        if not inline and selection.name in spreading:
            raise GraphQLError(f"Cannot spread fragment '{selection.name}' within itself.")
        if fragment.type_condition in (None, typename):
            out.extend(_fields(fragment.selections, typename, ctx, spreading if inline else spreading | {selection.name}))
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
        child = value[selected.name]
        if ctx.guard is not None:
            child = ctx.guard.child(typename, selected.name, child() if callable(child) else child)
        out[selected.alias] = _project(child, selected.selections, ctx)
    return out


def execute(
    roots: dict[str, dict[str, Resolver]],
    query: str | None,
    variables: dict[str, Any] | None = None,
    operation_name: str | None = None,
    guard: Guard | None = None,
) -> dict[str, Any]:
    """Run ``query``: ``roots`` maps ``query``/``mutation`` to resolvers by root field name; a resolver
    gets the field's arguments (variables substituted) and the error list (for messages about values it
    answers anyway, as graphene reports a NaN Float), and returns the field's value (see the module doc).
    With a ``guard``, each root field resolves with the arguments the guard answers, or is null."""
    try:
        if not isinstance(query, str) or not query.strip():
            raise GraphQLError("Must provide query string.")
        document = parse(query)
        unsafe = check_query_safety(document)
        if unsafe is not None:
            raise GraphQLError(unsafe)
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
        ctx = _Context({name: given.get(name, default) for name, default in operation.variables.items()}, document.fragments, [], guard)
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
            arguments = _substitute(root.arguments, ctx.variables)
            if guard is not None:
                allowed = guard.root(root.name, arguments)
                if allowed is None:
                    data[root.alias] = None  # MLflow's GraphQL auth middleware: a denied field is null, no error
                    continue
                arguments = allowed
            try:
                value = resolvers[root.name](arguments, ctx.errors)
            except MlflowError as error:
                data[root.alias] = None
                ctx.errors.append(error.message)
                continue
            data[root.alias] = _project(value, root.selections, ctx)
    except GraphQLError as error:
        return {"data": None, "errors": [str(error)]}
    return {"data": data, "errors": ctx.errors or None}
