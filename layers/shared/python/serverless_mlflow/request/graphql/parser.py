"""GraphQL documents: the lexer, the parser and the nodes it builds (operations, fields, fragments, variables)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


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
    aliased: bool = False  # written ``alias: name`` (what MLflow's alias limit counts)


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
        alias, aliased = name, False
        if self.peek(":"):
            self.take()
            name, aliased = self.take(kind="name"), True
        arguments = self.arguments()
        directives = self.directives()
        selections = self.selection_set() if self.peek("{") else None
        return Field(name, alias, arguments, directives, selections, aliased)

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
