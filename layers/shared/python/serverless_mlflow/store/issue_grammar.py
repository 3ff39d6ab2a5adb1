"""search_issues' filter grammar (MLflow's ``SearchIssuesUtils``), apart from the issues store so the review
function's cold start does not load sqlparse."""

from __future__ import annotations

from typing import Any, ClassVar

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.grammar import RunGrammar


class IssueGrammar(RunGrammar):
    """``SearchIssuesUtils``: ``status`` / ``source_run_id`` with ``=`` or ``!=``, ANDed."""

    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"status", "source_run_id"}
    VALID_STRING_ATTRIBUTE_COMPARATORS: ClassVar[set[str]] = {"=", "!="}

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        from sqlparse.sql import Comparison

        from serverless_mlflow.search.sql_tokens import join_in_comparison_tokens

        tokens = join_in_comparison_tokens(statement.tokens)
        if invalids := [t for t in tokens if cls._invalid_statement_token(t)]:
            # SearchIssuesUtils lists the bad clauses unquoted.
            raise invalid(f"Invalid clause(s) in filter string: {', '.join(map(str, invalids))}")
        return [cls._get_comparison(t) for t in tokens if isinstance(t, Comparison)]

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        from sqlparse.sql import Identifier

        stripped = [token for token in comparison.tokens if not token.is_whitespace]
        if len(stripped) != 3:
            raise invalid(f"Invalid comparison: expected 3 tokens, got {len(stripped)}")
        left, comparator_token, right = stripped
        if not isinstance(left, Identifier):
            raise invalid(f"Invalid comparison: left side must be an identifier, got {type(left)}")
        key = cls._strip_quotes(left.value).strip()
        if key not in cls.VALID_SEARCH_ATTRIBUTE_KEYS:
            raise invalid(f"Invalid filter field '{key}'. Supported fields: {cls.VALID_SEARCH_ATTRIBUTE_KEYS}")
        comparator = comparator_token.value.upper()
        if comparator not in cls.VALID_STRING_ATTRIBUTE_COMPARATORS:
            raise invalid(f"Invalid comparator '{comparator}'. Supported comparators: {cls.VALID_STRING_ATTRIBUTE_COMPARATORS}")
        return {"type": "attribute", "key": key, "comparator": comparator, "value": cls._strip_quotes(right.value).strip()}
