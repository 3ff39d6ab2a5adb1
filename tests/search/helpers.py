"""Shared pieces of the search differential tests: outcome capture and value pools."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from mlflow.exceptions import MlflowException

from serverless_mlflow.core.errors import MlflowError

# Strings chosen to hit the SQL semantics: case (ASCII vs non-ASCII), wildcards as data, unicode ordering,
# whitespace/control characters, numeric-looking strings (compared as text), backslashes (no LIKE escape).
STRINGS = [
    "alpha",
    "Alpha",
    "ALPHA",
    "al%ha",
    "al_ha",
    "a_b%c",
    "élan",
    "Élan",
    "ÉLAN",
    "日本語",
    "straße",
    "STRASSE",
    "10",
    "9",
    "1e3",
    "back\\slash",
    "new\nline",
    " lead",
    "z",
    "Z",
]

LIKE_PATTERNS = [
    "%",
    "%a%",
    "%A%",
    "a%",
    "A%",
    "%a",
    "al_ha",
    "al%ha",
    "%\\%",
    "%\\_%",
    "_",
    "__",
    "%lph%",
    "%LPH%",
    "%é%",
    "%É%",
    "%ÉLAN",
    "%日本%",
    "%ß%",
    "1%",
    "%\n%",
    "back\\slash",
    "%%",
    "_lpha",
    "z",
]


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """("ok", fn(*args, **kwargs)) or ("err", error_code, message) for MLflow's and our exceptions alike."""
    try:
        return ("ok", fn(*args, **kwargs))
    except MlflowException as e:
        return ("err", e.error_code, e.message)
    except MlflowError as e:
        return ("err", e.error_code, e.message)
    except Exception as e:  # MLflow lets a few parse failures escape as plain exceptions (HTTP 500)
        return ("crash", type(e).__name__, str(e))


_SET_REPR = re.compile(r"\{('[^']*'(?:, '[^']*')*)\}")


def normalize_message(message: str) -> str:
    """Sort the items of every printed set of strings: a set's iteration order depends on the hash seed (and on
    the .pyc that built its constant), so MLflow's own messages vary in that order from process to process."""
    return _SET_REPR.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def normalized(result: tuple[Any, ...]) -> tuple[Any, ...]:
    return (result[0], result[1], normalize_message(result[2])) if result[0] == "err" else result


def assert_same(actual: tuple[Any, ...], expected: tuple[Any, ...], context: str) -> None:
    """Same result or same error; where MLflow crashes (a 500 on bad input) we must answer a clean 400."""
    if expected[0] == "crash":
        assert actual[0] == "err" and actual[1] == "INVALID_PARAMETER_VALUE", f"{context}: MLflow crashed {expected}, we gave {actual}"
        return
    if expected[0] == "err" and expected[1] == "INTERNAL_ERROR":
        # An MlflowException without an error code (MLflow's server answers 500): same text, as a 400 (issue 22).
        expected = ("err", "INVALID_PARAMETER_VALUE", expected[2])
    assert normalized(actual) == normalized(expected), context


def quoted(value: str, rng: random.Random) -> str:
    """A SQL string literal for value (single quotes mostly, double quotes sometimes, as MLflow allows)."""
    if "'" not in value and rng.random() < 0.85:
        return f"'{value}'"
    return f'"{value}"'


def drain_mlflow(call: Callable[[str | None], Any]) -> list[list[str]]:
    """All pages of an MLflow store search (call(token) -> PagedList), as lists of ids via .token."""
    pages: list[list[Any]] = []
    token = None
    while True:
        result = call(token)
        pages.append(list(result))
        token = result.token
        if not token:
            return pages
        if len(pages) > 500:
            raise AssertionError("MLflow pagination did not terminate")


def drain_ours(call: Callable[[str | None], tuple[list[Any], str | None]]) -> list[list[Any]]:
    pages: list[list[Any]] = []
    token = None
    while True:
        items, token = call(token)
        pages.append(items)
        if not token:
            return pages
        if len(pages) > 500:
            raise AssertionError("our pagination did not terminate")
