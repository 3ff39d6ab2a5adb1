"""MLflow's search-filter and order_by grammar for runs, ported from `mlflow/utils/search_utils.py` (mlflow 3.17.2).

`RunGrammar` is the port of `SearchUtils`, the base every other grammar extends; the experiment and registry
grammars are in `entity_grammars`, the sqlparse helpers they all share in `sql_tokens`. The code mirrors MLflow
closely (same sqlparse token walk, same checks in the same order, same messages and
error codes, same set literals so messages that print a set render identically), because clients see these
messages verbatim. Lambda code may not import mlflow, hence the port. Parsed comparisons are plain dicts
`{"type", "key", "comparator", "value"}`, equal to what MLflow's parsers return.

Error codes: MLflow raises some of these with no error code (`MlflowException(msg)`), which answers
INTERNAL_ERROR/500; we keep that on purpose (`_unanswered_by_mlflow`).
"""

from __future__ import annotations

import ast
import shlex
from typing import Any, ClassVar

from sqlparse.sql import Comparison, Identifier, Parenthesis, Statement
from sqlparse.tokens import Token as TokenType

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.search.sql_tokens import join_in_comparison_tokens, parse_sql

# mlflow.entities.RunInfo.get_searchable_attributes() (sorted); all are also orderable.
_RUN_INFO_SEARCHABLE = ["artifact_uri", "end_time", "run_id", "run_name", "start_time", "status", "user_id"]
_RUN_INFO_ORDERABLE = list(_RUN_INFO_SEARCHABLE)


def _unanswered_by_mlflow(message: str) -> MlflowError:
    """MLflow raises these as ``MlflowException(message)`` without an error code, which its server answers as
    a 500 INTERNAL_ERROR; they are bad input, answered INVALID_PARAMETER_VALUE (400) with MLflow's text."""
    return invalid(message)


class RunGrammar:
    """Port of `SearchUtils` (runs); the base of the other grammars, as in MLflow."""

    LIKE_OPERATOR = "LIKE"
    ILIKE_OPERATOR = "ILIKE"
    ASC_OPERATOR = "asc"
    DESC_OPERATOR = "desc"
    VALID_ORDER_BY_TAGS: ClassVar[list[str]] = [ASC_OPERATOR, DESC_OPERATOR]
    VALID_METRIC_COMPARATORS: ClassVar[set[str]] = {">", ">=", "!=", "=", "<", "<="}
    VALID_PARAM_COMPARATORS: ClassVar[set[str]] = {"!=", "=", LIKE_OPERATOR, ILIKE_OPERATOR, "IS NULL", "IS NOT NULL"}
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", LIKE_OPERATOR, ILIKE_OPERATOR, "IS NULL", "IS NOT NULL"}
    VALID_STRING_ATTRIBUTE_COMPARATORS: ClassVar[set[str]] = {"!=", "=", LIKE_OPERATOR, ILIKE_OPERATOR, "IN", "NOT IN"}
    VALID_NUMERIC_ATTRIBUTE_COMPARATORS: ClassVar[set[str]] = VALID_METRIC_COMPARATORS
    VALID_DATASET_COMPARATORS: ClassVar[set[str]] = {"!=", "=", LIKE_OPERATOR, ILIKE_OPERATOR, "IN", "NOT IN"}
    _BUILTIN_NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"start_time", "end_time"}
    _ALTERNATE_NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"created", "Created"}
    _ALTERNATE_STRING_ATTRIBUTES: ClassVar[set[str]] = {"run name", "Run name", "Run Name"}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = set(list(_BUILTIN_NUMERIC_ATTRIBUTES) + list(_ALTERNATE_NUMERIC_ATTRIBUTES))
    DATASET_ATTRIBUTES: ClassVar[set[str]] = {"name", "digest", "context"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"run_id"})
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = set(
        _RUN_INFO_SEARCHABLE + list(_ALTERNATE_NUMERIC_ATTRIBUTES) + list(_ALTERNATE_STRING_ATTRIBUTES)
    )
    VALID_ORDER_BY_ATTRIBUTE_KEYS: ClassVar[set[str]] = set(_RUN_INFO_ORDERABLE + list(_ALTERNATE_NUMERIC_ATTRIBUTES))
    _METRIC_IDENTIFIER = "metric"
    _ALTERNATE_METRIC_IDENTIFIERS: ClassVar[set[str]] = {"metrics"}
    _PARAM_IDENTIFIER = "parameter"
    _ALTERNATE_PARAM_IDENTIFIERS: ClassVar[set[str]] = {"parameters", "param", "params"}
    _TAG_IDENTIFIER = "tag"
    _ALTERNATE_TAG_IDENTIFIERS: ClassVar[set[str]] = {"tags"}
    _ATTRIBUTE_IDENTIFIER = "attribute"
    _ALTERNATE_ATTRIBUTE_IDENTIFIERS: ClassVar[set[str]] = {"attr", "attributes", "run"}
    _DATASET_IDENTIFIER = "dataset"
    _ALTERNATE_DATASET_IDENTIFIERS: ClassVar[set[str]] = {"datasets"}
    _IDENTIFIERS: ClassVar[list[str]] = [
        _METRIC_IDENTIFIER,
        _PARAM_IDENTIFIER,
        _TAG_IDENTIFIER,
        _ATTRIBUTE_IDENTIFIER,
        _DATASET_IDENTIFIER,
    ]
    _VALID_IDENTIFIERS: ClassVar[set[str]] = set(
        _IDENTIFIERS
        + list(_ALTERNATE_METRIC_IDENTIFIERS)
        + list(_ALTERNATE_PARAM_IDENTIFIERS)
        + list(_ALTERNATE_TAG_IDENTIFIERS)
        + list(_ALTERNATE_ATTRIBUTE_IDENTIFIERS)
        + list(_ALTERNATE_DATASET_IDENTIFIERS)
    )
    STRING_VALUE_TYPES: ClassVar[set[Any]] = {TokenType.Literal.String.Single}
    NUMERIC_VALUE_TYPES: ClassVar[set[Any]] = {TokenType.Literal.Number.Integer, TokenType.Literal.Number.Float}
    ORDER_BY_KEY_TIMESTAMP = "timestamp"
    ORDER_BY_KEY_LAST_UPDATED_TIMESTAMP = "last_updated_timestamp"
    ORDER_BY_KEY_MODEL_NAME = "name"
    VALID_ORDER_BY_KEYS_REGISTERED_MODELS: ClassVar[set[str]] = {
        ORDER_BY_KEY_TIMESTAMP,
        ORDER_BY_KEY_LAST_UPDATED_TIMESTAMP,
        ORDER_BY_KEY_MODEL_NAME,
    }
    VALID_TIMESTAMP_ORDER_BY_KEYS: ClassVar[set[str]] = {ORDER_BY_KEY_TIMESTAMP, ORDER_BY_KEY_LAST_UPDATED_TIMESTAMP}
    RECOMMENDED_ORDER_BY_KEYS_REGISTERED_MODELS: ClassVar[set[str]] = {ORDER_BY_KEY_MODEL_NAME, ORDER_BY_KEY_TIMESTAMP}

    @staticmethod
    def translate_key_alias(key: str) -> str:
        if key in ["created", "Created"]:
            return "start_time"
        if key in ["run name", "Run name", "Run Name"]:
            return "run_name"
        return key

    @classmethod
    def _trim_ends(cls, string_value: str) -> str:
        return string_value[1:-1]

    @classmethod
    def _is_quoted(cls, value: str, pattern: str) -> bool:
        return len(value) >= 2 and value.startswith(pattern) and value.endswith(pattern)

    @classmethod
    def _trim_backticks(cls, entity_type: str) -> str:
        if cls._is_quoted(entity_type, "`"):
            return cls._trim_ends(entity_type)
        return entity_type

    @classmethod
    def _strip_quotes(cls, value: str, expect_quoted_value: bool = False) -> str:
        if cls._is_quoted(value, "'") or cls._is_quoted(value, '"'):
            return cls._trim_ends(value)
        elif expect_quoted_value:
            raise invalid(
                "Parameter value is either not quoted or unidentified quote "
                f"types used for string value {value}. Use either single or double "
                "quotes."
            )
        return value

    @classmethod
    def _valid_entity_type(cls, entity_type: str) -> str:
        entity_type = cls._trim_backticks(entity_type)
        if entity_type not in cls._VALID_IDENTIFIERS:
            raise invalid(f"Invalid entity type '{entity_type}'. Valid values are {cls._IDENTIFIERS}")
        if entity_type in cls._ALTERNATE_PARAM_IDENTIFIERS:
            return cls._PARAM_IDENTIFIER
        elif entity_type in cls._ALTERNATE_METRIC_IDENTIFIERS:
            return cls._METRIC_IDENTIFIER
        elif entity_type in cls._ALTERNATE_TAG_IDENTIFIERS:
            return cls._TAG_IDENTIFIER
        elif entity_type in cls._ALTERNATE_ATTRIBUTE_IDENTIFIERS:
            return cls._ATTRIBUTE_IDENTIFIER
        elif entity_type in cls._ALTERNATE_DATASET_IDENTIFIERS:
            return cls._DATASET_IDENTIFIER
        return entity_type

    @classmethod
    def _get_identifier(cls, identifier: str, valid_attributes: set[str]) -> dict[str, Any]:
        tokens = identifier.split(".", 1)
        if len(tokens) == 1:
            key = tokens[0]
            entity_type = cls._ATTRIBUTE_IDENTIFIER
        else:
            entity_type, key = tokens
        identifier = cls._valid_entity_type(entity_type)
        key = cls._trim_backticks(cls._strip_quotes(key))
        if identifier == cls._ATTRIBUTE_IDENTIFIER and key not in valid_attributes:
            raise invalid(f"Invalid attribute key '{key}' specified. Valid keys are '{valid_attributes}'")
        elif identifier == cls._DATASET_IDENTIFIER and key not in cls.DATASET_ATTRIBUTES:
            raise invalid(f"Invalid dataset key '{key}' specified. Valid keys are '{cls.DATASET_ATTRIBUTES}'")
        return {"type": identifier, "key": key}

    @classmethod
    def validate_list_supported(cls, key: str) -> None:
        if cls.LIST_SUPPORTED_KEYS is not None and key not in cls.LIST_SUPPORTED_KEYS:
            raise invalid(f"Only {sorted(cls.LIST_SUPPORTED_KEYS)} attributes support comparison with a list of quoted string values.")

    @classmethod
    def _get_value(cls, identifier_type: str, key: str, token: Any) -> Any:
        if identifier_type == cls._METRIC_IDENTIFIER:
            if token.ttype not in cls.NUMERIC_VALUE_TYPES:
                raise invalid(f"Expected numeric value type for metric. Found {token.value}")
            return token.value
        elif identifier_type in (cls._PARAM_IDENTIFIER, cls._TAG_IDENTIFIER):
            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            raise invalid(f"Expected a quoted string value for {identifier_type} (e.g. 'my-value'). Got value {token.value}")
        elif identifier_type == cls._ATTRIBUTE_IDENTIFIER:
            if key in cls.NUMERIC_ATTRIBUTES:
                if token.ttype not in cls.NUMERIC_VALUE_TYPES:
                    raise invalid(f"Expected numeric value type for numeric attribute: {key}. Found {token.value}")
                if token.ttype == TokenType.Literal.Number.Integer:
                    return int(token.value)
                return float(token.value)
            elif token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            elif isinstance(token, Parenthesis):
                cls.validate_list_supported(key)
                return cls._parse_list_from_sql_token(token)
            raise invalid(f"Expected a quoted string value for attributes. Got value {token.value}")
        elif identifier_type == cls._DATASET_IDENTIFIER:
            if key in cls.DATASET_ATTRIBUTES and (token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier)):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            elif isinstance(token, Parenthesis):
                if key not in ("name", "digest", "context"):
                    raise invalid(
                        "Only the dataset 'name', 'digest', and 'context' support comparison with a list of quoted string values."
                    )
                return cls._parse_list_from_sql_token(token)
            raise invalid(f"Expected a quoted string value for dataset attributes. Got value {token.value}")
        raise _unanswered_by_mlflow(f"Invalid identifier type. Expected one of {[cls._METRIC_IDENTIFIER, cls._PARAM_IDENTIFIER]}.")

    @classmethod
    def _validate_comparison(cls, tokens: list[Any]) -> None:
        base_error_string = "Invalid comparison clause"
        if len(tokens) == 2:
            comparator = tokens[1].value.upper()
            if comparator in ("IS NULL", "IS NOT NULL"):
                if not isinstance(tokens[0], Identifier):
                    raise invalid(f"{base_error_string}. Expected 'Identifier' found '{tokens[0]}'")
                return
        if len(tokens) != 3:
            raise invalid(f"{base_error_string}. Expected 3 tokens found {len(tokens)}")
        if not isinstance(tokens[0], Identifier):
            raise invalid(f"{base_error_string}. Expected 'Identifier' found '{tokens[0]}'")
        # MLflow's two remaining checks (`not isinstance(tokens[i], Token) and ...`) can never fire: every
        # sqlparse node is a Token. They are kept out on purpose.

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        stripped_comparison = [token for token in comparison.tokens if not token.is_whitespace]
        cls._validate_comparison(stripped_comparison)
        if len(stripped_comparison) == 2:
            comparator = stripped_comparison[1].value.upper()
            comp = cls._get_identifier(stripped_comparison[0].value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
            if comp["type"] not in (cls._TAG_IDENTIFIER, cls._PARAM_IDENTIFIER):
                raise invalid(f"IS NULL / IS NOT NULL is only supported for tags and params, not for '{comp['type']}' '{comp['key']}'")
            comp["comparator"] = comparator
            comp["value"] = None
            return comp
        comp = cls._get_identifier(stripped_comparison[0].value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
        comp["comparator"] = stripped_comparison[1].value
        comp["value"] = cls._get_value(comp.get("type"), comp.get("key"), stripped_comparison[2])
        return comp

    @classmethod
    def _invalid_statement_token(cls, token: Any) -> bool:
        return not (isinstance(token, Comparison) or token.is_whitespace or token.match(ttype=TokenType.Keyword, values=["AND"]))

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        tokens = join_in_comparison_tokens(statement.tokens)
        invalids = list(filter(cls._invalid_statement_token, tokens))
        if len(invalids) > 0:
            invalid_clauses = ", ".join(f"'{token}'" for token in invalids)
            raise invalid(f"Invalid clause(s) in filter string: {invalid_clauses}")
        return [cls._get_comparison(si) for si in tokens if isinstance(si, Comparison)]

    @classmethod
    def parse_search_filter(cls, filter_string: str | None) -> list[dict[str, Any]]:
        if not filter_string:
            return []
        try:
            parsed = parse_sql(filter_string)
        except Exception:
            raise invalid(f"Error on parsing filter '{filter_string}'") from None
        if len(parsed) == 0 or not isinstance(parsed[0], Statement):
            raise invalid(f"Invalid filter '{filter_string}'. Could not be parsed.")
        elif len(parsed) > 1:
            raise invalid(f"Search filter contained multiple expression {filter_string!r}. Provide AND-ed expression list.")
        return cls._process_statement(parsed[0])

    # --- comparator classification (raises on an invalid comparator, exactly like MLflow) ---

    @classmethod
    def is_metric(cls, key_type: str, comparator: str) -> bool:
        if key_type == cls._METRIC_IDENTIFIER:
            if comparator not in cls.VALID_METRIC_COMPARATORS:
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_METRIC_COMPARATORS}")
            return True
        return False

    @classmethod
    def is_param(cls, key_type: str, comparator: str) -> bool:
        if key_type == cls._PARAM_IDENTIFIER:
            if comparator not in cls.VALID_PARAM_COMPARATORS:
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_PARAM_COMPARATORS}'")
            return True
        return False

    @classmethod
    def is_tag(cls, key_type: str, comparator: str) -> bool:
        if key_type == cls._TAG_IDENTIFIER:
            if comparator not in cls.VALID_TAG_COMPARATORS:
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_TAG_COMPARATORS}")
            return True
        return False

    @classmethod
    def is_string_attribute(cls, key_type: str, key_name: str, comparator: str) -> bool:
        if key_type == cls._ATTRIBUTE_IDENTIFIER and key_name not in cls.NUMERIC_ATTRIBUTES:
            if comparator not in cls.VALID_STRING_ATTRIBUTE_COMPARATORS:
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_STRING_ATTRIBUTE_COMPARATORS}'")
            return True
        return False

    @classmethod
    def is_numeric_attribute(cls, key_type: str, key_name: str, comparator: str) -> bool:
        if key_type == cls._ATTRIBUTE_IDENTIFIER and key_name in cls.NUMERIC_ATTRIBUTES:
            if comparator not in cls.VALID_NUMERIC_ATTRIBUTE_COMPARATORS:
                # (sic) MLflow prints the string-comparator set here.
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_STRING_ATTRIBUTE_COMPARATORS}")
            return True
        return False

    @classmethod
    def is_dataset(cls, key_type: str, comparator: str) -> bool:
        if key_type == cls._DATASET_IDENTIFIER:
            if comparator not in cls.VALID_DATASET_COMPARATORS:
                raise invalid(f"Invalid comparator '{comparator}' not one of '{cls.VALID_DATASET_COMPARATORS}")
            return True
        return False

    # --- order_by ---

    @classmethod
    def _validate_order_by_and_generate_token(cls, order_by: str) -> str:
        try:
            parsed = parse_sql(order_by)
        except Exception:
            raise invalid(f"Error on parsing order_by clause '{order_by}'") from None
        if len(parsed) != 1 or not isinstance(parsed[0], Statement):
            raise invalid(f"Invalid order_by clause '{order_by}'. Could not be parsed.")
        statement = parsed[0]
        ttype_for_timestamp = TokenType.Name.Builtin  # sqlparse >= 0.4.3
        if len(statement.tokens) == 1 and isinstance(statement[0], Identifier):
            token_value = statement.tokens[0].value
        elif len(statement.tokens) == 1 and statement.tokens[0].match(ttype=ttype_for_timestamp, values=[cls.ORDER_BY_KEY_TIMESTAMP]):
            token_value = cls.ORDER_BY_KEY_TIMESTAMP
        elif (
            statement.tokens[0].match(ttype=ttype_for_timestamp, values=[cls.ORDER_BY_KEY_TIMESTAMP])
            and all(token.is_whitespace for token in statement.tokens[1:-1])
            and statement.tokens[-1].ttype == TokenType.Keyword.Order
        ):
            token_value = cls.ORDER_BY_KEY_TIMESTAMP + " " + statement.tokens[-1].value
        else:
            raise invalid(f"Invalid order_by clause '{order_by}'. Could not be parsed.")
        return token_value

    @classmethod
    def _parse_order_by_string(cls, order_by: str) -> tuple[str, bool]:
        token_value = cls._validate_order_by_and_generate_token(order_by)
        is_ascending = True
        try:
            tokens = shlex.split(token_value.replace("`", '"'))
        except ValueError as e:
            # MLflow lets shlex's ValueError escape (a 500); an unbalanced quote is the client's fault.
            raise invalid(f"Invalid order_by clause '{order_by}'. Could not be parsed.") from e
        if len(tokens) > 2:
            raise invalid(f"Invalid order_by clause '{order_by}'. Could not be parsed.")
        elif len(tokens) == 2:
            order_token = tokens[1].lower()
            if order_token not in cls.VALID_ORDER_BY_TAGS:
                raise invalid(f"Invalid ordering key in order_by clause '{order_by}'.")
            is_ascending = order_token == cls.ASC_OPERATOR
            token_value = tokens[0]
        return token_value, is_ascending

    @classmethod
    def parse_order_by_for_search_runs(cls, order_by: str) -> tuple[str, str, bool]:
        token_value, is_ascending = cls._parse_order_by_string(order_by)
        identifier = cls._get_identifier(token_value.strip(), cls.VALID_ORDER_BY_ATTRIBUTE_KEYS)
        return identifier["type"], identifier["key"], is_ascending

    @classmethod
    def parse_order_by_for_search_registered_models(cls, order_by: str) -> tuple[str, bool]:
        """The base `SearchUtils` version, which is the one the registry's SqlAlchemyStore calls."""
        token_value, is_ascending = cls._parse_order_by_string(order_by)
        token_value = token_value.strip()
        if token_value not in cls.VALID_ORDER_BY_KEYS_REGISTERED_MODELS:
            raise invalid(
                f"Invalid order by key '{token_value}' specified. Valid keys are '{cls.RECOMMENDED_ORDER_BY_KEYS_REGISTERED_MODELS}'"
            )
        return token_value, is_ascending

    @classmethod
    def _check_valid_identifier_list(cls, tup: tuple[Any, ...]) -> None:
        if len(tup) == 0:
            raise invalid("While parsing a list in the query, expected a non-empty list of string values, but got empty list")
        if not all(isinstance(x, str) for x in tup):
            raise invalid(
                "While parsing a list in the query, expected string value, punctuation, "
                f"or whitespace, but got different type in list: {tup}"
            )

    @classmethod
    def _parse_list_from_sql_token(cls, token: Any) -> tuple[Any, ...]:
        try:
            parsed = ast.literal_eval(token.value)
        except SyntaxError as e:
            raise invalid("While parsing a list in the query, expected a non-empty list of string values, but got ill-formed list.") from e
        except ValueError as e:
            # MLflow lets ast's ValueError escape (a 500), e.g. for `(a, b)`; answer 400 with the same text.
            raise invalid("While parsing a list in the query, expected a non-empty list of string values, but got ill-formed list.") from e
        parsed = parsed if isinstance(parsed, tuple) else (parsed,)
        cls._check_valid_identifier_list(parsed)
        return parsed
