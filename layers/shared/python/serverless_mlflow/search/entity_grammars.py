"""The experiment and registry grammars: ports of `SearchExperimentsUtils`, `SearchModelUtils` and
`SearchModelVersionUtils` (mlflow 3.17.2), subclasses of the runs grammar as in MLflow.

Apart from `grammar` (the runs grammar, the base) so each module holds one port: the subclasses override only
what MLflow's subclasses override (identifiers, values, comparisons, and the clause-list error text).
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlparse.sql import Comparison, Identifier, Parenthesis
from sqlparse.tokens import Token as TokenType

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.grammar import RunGrammar
from serverless_mlflow.search.sql_tokens import join_in_comparison_tokens


class _UnquotedClauseErrors(RunGrammar):
    """Experiments and the registry list invalid clauses without the quotes runs put around each."""

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        tokens = join_in_comparison_tokens(statement.tokens)
        invalids = list(filter(cls._invalid_statement_token, tokens))
        if len(invalids) > 0:
            invalid_clauses = ", ".join(map(str, invalids))
            raise invalid(f"Invalid clause(s) in filter string: {invalid_clauses}")
        return [cls._get_comparison(t) for t in tokens if isinstance(t, Comparison)]


class ExperimentGrammar(_UnquotedClauseErrors):
    """Port of `SearchExperimentsUtils`."""

    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name", "experiment_id", "creation_time", "last_update_time"}
    VALID_ORDER_BY_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name", "experiment_id", "creation_time", "last_update_time"}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"creation_time", "last_update_time"}
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE", "IS NULL", "IS NOT NULL"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"experiment_id"})

    @classmethod
    def _get_identifier(cls, identifier: str, valid_attributes: set[str]) -> dict[str, Any]:
        tokens = identifier.split(".", maxsplit=1)
        if len(tokens) == 1:
            key = tokens[0]
            identifier = cls._ATTRIBUTE_IDENTIFIER
        else:
            entity_type, key = tokens
            valid_entity_types = ("attribute", "tag", "tags")
            if entity_type not in valid_entity_types:
                raise invalid(f"Invalid entity type '{entity_type}'. Valid entity types are {valid_entity_types}")
            identifier = cls._valid_entity_type(entity_type)
        key = cls._trim_backticks(cls._strip_quotes(key))
        if identifier == cls._ATTRIBUTE_IDENTIFIER and key not in valid_attributes:
            raise invalid(f"Invalid attribute key '{key}' specified. Valid keys are '{valid_attributes}'")
        return {"type": identifier, "key": key}

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        stripped_comparison = [token for token in comparison.tokens if not token.is_whitespace]
        cls._validate_comparison(stripped_comparison)
        if len(stripped_comparison) == 2:
            comparator = stripped_comparison[1].value.upper()
            comp = cls._get_identifier(stripped_comparison[0].value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
            if comp["type"] != cls._TAG_IDENTIFIER:
                raise invalid(f"IS NULL / IS NOT NULL is only supported for tags, not for attribute '{comp['key']}'")
            comp["comparator"] = comparator
            comp["value"] = None
            return comp
        left, comparator, right = stripped_comparison
        comp = cls._get_identifier(left.value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
        comp["comparator"] = comparator.value
        comp["value"] = cls._get_value(comp.get("type"), comp.get("key"), right)
        return comp

    @classmethod
    def parse_order_by_for_search_experiments(cls, order_by: str) -> tuple[str, str, bool]:
        token_value, is_ascending = cls._parse_order_by_string(order_by)
        identifier = cls._get_identifier(token_value.strip(), cls.VALID_ORDER_BY_ATTRIBUTE_KEYS)
        return identifier["type"], identifier["key"], is_ascending


class _RegistryGrammar(_UnquotedClauseErrors):
    """What `SearchModelUtils` and `SearchModelVersionUtils` share (attribute and tag filters only)."""

    @classmethod
    def _get_registry_identifier(cls, identifier: str, valid_attributes: set[str]) -> dict[str, Any]:
        tokens = identifier.split(".", maxsplit=1)
        if len(tokens) == 1:
            key = tokens[0]
            identifier = cls._ATTRIBUTE_IDENTIFIER
        else:
            entity_type, key = tokens
            valid_entity_types = ("attribute", "tag", "tags")
            if entity_type not in valid_entity_types:
                raise invalid(f"Invalid entity type '{entity_type}'. Valid entity types are {valid_entity_types}")
            identifier = cls._TAG_IDENTIFIER if entity_type in ("tag", "tags") else cls._ATTRIBUTE_IDENTIFIER
        # (sic) the key is checked BEFORE quotes/backticks are stripped, unlike runs and experiments.
        if identifier == cls._ATTRIBUTE_IDENTIFIER and key not in valid_attributes:
            raise invalid(f"Invalid attribute key '{key}' specified. Valid keys are '{valid_attributes}'")
        key = cls._trim_backticks(cls._strip_quotes(key))
        return {"type": identifier, "key": key}

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        stripped_comparison = [token for token in comparison.tokens if not token.is_whitespace]
        cls._validate_comparison(stripped_comparison)
        if len(stripped_comparison) != 3:
            # `x IS [NOT] NULL`: MLflow's tuple unpacking crashes here (a 500); answer the runs parser's 400.
            raise invalid(f"Invalid comparison clause. Expected 3 tokens found {len(stripped_comparison)}")
        left, comparator, right = stripped_comparison
        comp = cls._get_registry_identifier(left.value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
        comp["comparator"] = comparator.value.upper()
        comp["value"] = cls._get_value(comp.get("type"), comp.get("key"), right)
        return comp


class RegisteredModelGrammar(_RegistryGrammar):
    """Port of `SearchModelUtils` (filters); order_by uses the base `parse_order_by_for_search_registered_models`."""

    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"creation_timestamp", "last_updated_timestamp"}
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name"}
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"name"})

    @classmethod
    def _get_value(cls, identifier_type: str, key: str, token: Any) -> Any:
        if identifier_type == cls._TAG_IDENTIFIER:
            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            raise invalid(f"Expected a quoted string value for {identifier_type} (e.g. 'my-value'). Got value {token.value}")
        elif identifier_type == cls._ATTRIBUTE_IDENTIFIER:
            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            elif isinstance(token, Parenthesis):
                cls.validate_list_supported(key)
                return cls._parse_list_from_sql_token(token)
            raise invalid(f"Expected a quoted string value or a list of quoted string values for attributes. Got value {token.value}")
        raise invalid(f"Invalid identifier type. Expected one of {[cls._ATTRIBUTE_IDENTIFIER, cls._TAG_IDENTIFIER]}.")


class ModelVersionGrammar(_RegistryGrammar):
    """Port of `SearchModelVersionUtils`."""

    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"version_number", "creation_timestamp", "last_updated_timestamp"}
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "name",
        "version_number",
        "run_id",
        "source_path",
    }
    VALID_ORDER_BY_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "name",
        "version_number",
        "creation_timestamp",
        "last_updated_timestamp",
    }
    VALID_STRING_ATTRIBUTE_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE", "IN", "NOT IN"}
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"name", "run_id"})

    @classmethod
    def _get_value(cls, identifier_type: str, key: str, token: Any) -> Any:
        if identifier_type == cls._TAG_IDENTIFIER:
            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            raise invalid(f"Expected a quoted string value for {identifier_type} (e.g. 'my-value'). Got value {token.value}")
        elif identifier_type == cls._ATTRIBUTE_IDENTIFIER:
            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            elif isinstance(token, Parenthesis):
                cls.validate_list_supported(key)
                return cls._parse_list_from_sql_token(token)
            elif token.ttype in cls.NUMERIC_VALUE_TYPES:
                if key not in cls.NUMERIC_ATTRIBUTES:
                    raise invalid(f"Only the '{cls.NUMERIC_ATTRIBUTES}' attributes support comparison with numeric values.")
                if token.ttype == TokenType.Literal.Number.Integer:
                    return int(token.value)
                return float(token.value)
            raise invalid(f"Expected a quoted string value or a list of quoted string values for attributes. Got value {token.value}")
        raise invalid(f"Invalid identifier type. Expected one of {[cls._ATTRIBUTE_IDENTIFIER, cls._TAG_IDENTIFIER]}.")

    @classmethod
    def parse_order_by_for_search_model_versions(cls, order_by: str) -> tuple[str, str, bool]:
        token_value, is_ascending = cls._parse_order_by_string(order_by)
        identifier = ExperimentGrammar._get_identifier(token_value.strip(), cls.VALID_ORDER_BY_ATTRIBUTE_KEYS)
        return identifier["type"], identifier["key"], is_ascending
