"""SQL LIKE / ILIKE exactly as MLflow's SqlAlchemyStore evaluates them on sqlite.

MLflow opens every sqlite session with `PRAGMA case_sensitive_like = true`, and SQLAlchemy compiles
`col.ilike(v)` to `lower(col) LIKE lower(v)`. sqlite's built-in `lower()` folds ASCII letters only, so:

- LIKE is case-sensitive for every character;
- ILIKE ignores case for ASCII letters only (`'É' ILIKE 'é'` is false, `'E' ILIKE 'e'` is true);
- `%` matches any run of characters (newlines included), `_` exactly one character (code point);
- there is NO escape character (MLflow passes no ESCAPE clause): `\\%` is a backslash then a wildcard.
"""

from __future__ import annotations

import re
from functools import lru_cache

_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(value: str) -> str:
    """sqlite's `lower()` without ICU: only A-Z are folded."""
    return value.translate(_ASCII_UPPER)


@lru_cache(maxsize=512)
def like_to_regex(pattern: str, case_sensitive: bool = True) -> re.Pattern[str]:
    """A compiled regex that `fullmatch`es (use `.fullmatch`) exactly the strings `x` for which sqlite's
    `x LIKE pattern` holds (case_sensitive=True) or `x ILIKE pattern` holds (case_sensitive=False).

    For ILIKE the regex is built from the ASCII-lowered pattern and must be applied to `ascii_lower(x)`;
    `like_match` does both. Passing `case_sensitive=False` here and matching raw strings would be wrong
    for non-ASCII letters, so prefer `like_match` unless you lower the subject yourself.
    """
    if not case_sensitive:
        pattern = ascii_lower(pattern)
    parts: list[str] = []
    for ch in pattern:
        if ch == "%":
            parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    return re.compile("".join(parts), re.DOTALL)


def like_match(value: str, pattern: str, case_sensitive: bool = True) -> bool:
    """`value LIKE pattern` (case_sensitive) or `value ILIKE pattern` as MLflow's sqlite store computes it."""
    if case_sensitive:
        return like_to_regex(pattern, True).fullmatch(value) is not None
    return like_to_regex(pattern, False).fullmatch(ascii_lower(value)) is not None


def like_literals(pattern: str) -> list[str]:
    """The literal fragments of a LIKE pattern (the text between `%`/`_` wildcards), in order, non-empty.

    Every string that matches `pattern` contains each fragment (for ILIKE: after `ascii_lower` of both), so an
    index (FTS tokens, prefix scans) may use any fragment to find candidates, then apply `like_match`.
    """
    return [frag for frag in re.split(r"[%_]", pattern) if frag]


def like_prefix(pattern: str) -> str:
    """The literal prefix before the first wildcard (the whole pattern when it has none)."""
    match = re.search(r"[%_]", pattern)
    return pattern if match is None else pattern[: match.start()]
