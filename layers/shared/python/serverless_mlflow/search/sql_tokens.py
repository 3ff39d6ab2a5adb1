"""The sqlparse walks every search grammar shares: a nesting-bounded parse and MLflow's joining of the tokens
sqlparse >= 0.4.4 splits (`x IN (...)`, `x IS [NOT] NULL`). Ported from `mlflow/utils/search_utils.py` (3.17.2).

Apart from the grammar classes so the logged-model, dataset and issue grammars, which walk tokens themselves,
take only these two functions.
"""

from __future__ import annotations

from typing import Any

import sqlparse
from sqlparse.sql import Comparison, Identifier, Parenthesis, Token, TokenList
from sqlparse.tokens import Token as TokenType

# sqlparse groups nested brackets in time that grows with the cube of the depth (500 levels: seconds; 1,000:
# fifteen seconds, then its recursion limit): a filter nested deeper than this is refused before it is parsed.
MAX_SQL_NESTING = 100
_OPENING, _CLOSING, _QUOTES = "([{", ")]}", "'\"`"


def parse_sql(text: str) -> Any:
    """``sqlparse.parse``, refusing (ValueError, as sqlparse refuses what it cannot parse) text whose brackets
    outside quotes nest deeper than ``MAX_SQL_NESTING``."""
    depth, deepest, quote = 0, 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in _QUOTES:
            quote = ch
        elif ch in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSING:
            depth -= 1
    if deepest > MAX_SQL_NESTING:
        raise ValueError(f"brackets nested more than {MAX_SQL_NESTING} levels deep")
    return sqlparse.parse(text)


def join_in_comparison_tokens(tokens: list[Any]) -> list[Any]:
    """sqlparse >= 0.4.4 splits `x IN (...)`, `x NOT IN (...)`, `x IS [NOT] NULL`: join them into Comparisons."""
    non_whitespace_tokens = [t for t in tokens if not t.is_whitespace]
    joined_tokens: list[Any] = []
    num_tokens = len(non_whitespace_tokens)
    iterator = enumerate(non_whitespace_tokens)
    while elem := next(iterator, None):
        index, first = elem
        if num_tokens - index < 3:
            joined_tokens.extend(non_whitespace_tokens[index:])
            break
        if not isinstance(first, Identifier):
            joined_tokens.append(first)
            continue
        (_, second) = next(iterator)
        (_, third) = next(iterator)
        if second.match(ttype=TokenType.Keyword, values=["IN"]) and isinstance(third, Parenthesis):
            joined_tokens.append(Comparison(TokenList([first, second, third])))
            continue
        if second.match(ttype=TokenType.Keyword, values=["IS"]) and third.match(ttype=TokenType.Keyword, values=["NULL"]):
            joined_tokens.append(Comparison(TokenList([first, Token(TokenType.Keyword, "IS NULL")])))
            continue
        if second.match(ttype=TokenType.Keyword, values=["IS"]) and third.ttype == TokenType.Keyword and third.value.upper() == "NOT NULL":
            joined_tokens.append(Comparison(TokenList([first, Token(TokenType.Keyword, "IS NOT NULL")])))
            continue
        (_, fourth) = next(iterator, (None, None))
        if fourth is None:
            joined_tokens.extend([first, second, third])
            break
        if (
            second.match(ttype=TokenType.Keyword, values=["NOT"])
            and third.match(ttype=TokenType.Keyword, values=["IN"])
            and isinstance(fourth, Parenthesis)
        ):
            joined_tokens.append(Comparison(TokenList([first, Token(TokenType.Keyword, "NOT IN"), fourth])))
            continue
        joined_tokens.extend([first, second, third, fourth])
    return joined_tokens
