"""Hypothesis strategies for hostile values: every JSON type, numbers past float64/int64, odd strings
(lone surrogates, NUL, ids past DynamoDB's key limits), malformed page tokens and filters, deep nesting."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import strategies as st

from .wire import Literal, nested

# Past DynamoDB's 1,024-byte sort key and 2,048-byte partition key, in one- and multi-byte characters; and one
# past every URL limit (S3 answers 414 to a request naming it: issue 41's upload id).
LONG_IDS = ("x" * 1100, "x" * 2100, "é" * 1100, "\u4e00" * 800, "1" * 3000, "tr-" + "a" * 2100, "m-" + "0" * 2100, "u" * 500_000)
ODD_STRINGS = (
    "",
    " ",
    "\ud800",
    "a\udfffb",
    "\x00",
    "a\x00b",
    "\x01\x02\x03",
    "#",
    "R#",
    "%",
    "_",
    "*",
    "'",
    '"',
    "\\",
    "../..",
    "/",
    "a/b",
    "\n",
    "\uffff",
    "\U0001f600",
    "NaN",
    "Infinity",
    "-1",
    "0",
    "1e309",
    "9223372036854775808",
    "true",
    "null",
    "[]",
    "{}",
    "x" * 6001,
    "x" * 70000,
)
NUMBER_LITERALS = (
    "1e309",
    "-1e309",
    "1e-400",
    "-0",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "2147483648",
    "-2147483649",
    "1" + "0" * 400,
    # Issue 41: past int64 and int32 both ways, past protobuf's Timestamp (2^62 ms), float overflow written as 1E400.
    "-9223372036854775808",
    "1" + "0" * 60,
    "1" + "0" * 29,
    "4611686018427387904",
    "1E400",
    "-1E400",
    "1.5e3",
    "1.5",
    "0.1",
    "1e38",
    "1e126",
    "1e-130",
    "-1",
)
FILTERS = (
    "",
    "name = 'x'",
    "name LIKE '%\ud800%'",
    "attributes.status = 'FINISHED'",
    "metrics.m > 1e309",
    "metrics.m < -Infinity",
    "metrics.`a b` >= 0",
    "params.p = 'v' AND tags.t != 'w'",
    "params.p LIKE '" + "x" * 2100 + "'",
    "tags.`mlflow.runName` ILIKE '%a%'",
    "attributes.start_time > 99999999999999999999",
    "attributes.run_id IN ('a', 'b')",
    "attributes.run_id IN ()",
    "datasets.digest = 'x'",
    "trace.timestamp_ms > 1",
    "name = ",
    "= =",
    "(((",
    "metrics.m > 'x'",
    "creation_timestamp > -9223372036854775809",
    "last_updated_timestamp > 1e30",
    "tags.k = '\x00'",
    "name = '" + "é" * 1100 + "'",
    "status = 'READY' OR status = 'FAILED'",
)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


_TOKEN_PAYLOADS = (
    [1],
    "x",
    1,
    1e300,
    None,
    True,
    {},
    {"offset": "a"},
    {"offset": -1},
    {"offset": 1e300},
    {"offset": 10**30},
    {"offset": None},
    {"offset": [1]},
    {"start": "x" * 3000},
    {"last": {"pk": "x" * 3000, "sk": "y"}},
    {"timestamp": 10**30},
    {"timestamp": "x", "id": 1},
    {"k": {"a": [1, {"b": None}]}},
    {"experiment_ids": ["0"], "offset": 5},
)


@st.composite
def page_tokens(draw: Any) -> Any:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return _b64(json.dumps(draw(st.sampled_from(_TOKEN_PAYLOADS))).encode())
    if kind == 1:
        return draw(st.sampled_from(("!!!", "a", "====", "%%%", "\ud800", "eyJ", _b64(b"\xff\xfe"), _b64(b"not json"))))
    if kind == 2:
        return _b64(draw(st.binary(max_size=64)))
    if kind == 3:
        return _b64(json.dumps(draw(json_values(depth=2))).encode())
    if kind == 4:
        # A token's JSON with a number past float64/int64 written as text.
        return _b64(b'{"offset": ' + draw(st.sampled_from(NUMBER_LITERALS)).encode() + b"}")
    if kind == 5:
        return _b64(("[" * 5000 + "]" * 5000).encode())
    # Nested objects as deep (a token whose fields are read one level at a time), or a deep token of a deep token.
    return _b64(('{"offset":' * 3000 + "1" + "}" * 3000).encode())


def json_values(depth: int = 2) -> st.SearchStrategy[Any]:
    """Any JSON value (a few levels deep)."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(ODD_STRINGS[:28]),
    )
    if depth <= 0:
        return scalars
    inner = json_values(depth - 1)
    return st.one_of(scalars, st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3))


def odd_strings() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(ODD_STRINGS), st.sampled_from(LONG_IDS), st.text(max_size=20))


def number_literals() -> st.SearchStrategy[Literal]:
    return st.sampled_from(NUMBER_LITERALS).map(Literal)


# Lists (and objects) where a scalar or a message belongs: ``mlflow_experiment: [[1]]``, ``tags: [[{}]]``.
NESTED_SCALARS = ("[[1]]", '[[["x"]]]', '[{"a": [1]}]', "[[]]", '{"a": {"b": [[NaN]]}}', "[[-Infinity]]", '{"value": [1E400]}')


def nested_scalars() -> st.SearchStrategy[Literal]:
    return st.sampled_from(NESTED_SCALARS).map(Literal)


def deep() -> st.SearchStrategy[Literal]:
    return st.sampled_from((nested(100), nested(1000), nested(50000)))


def bad_values() -> st.SearchStrategy[Any]:
    """A value of any type for any field: wrong JSON types, huge and non-finite numbers, odd strings."""
    return st.one_of(
        json_values(depth=2),
        odd_strings(),
        number_literals(),
        nested_scalars(),
        deep(),
        st.lists(odd_strings(), min_size=1, max_size=3),
        st.lists(number_literals(), min_size=1, max_size=2),
        st.lists(st.one_of(number_literals(), nested_scalars()), min_size=1, max_size=2).map(lambda items: {"value": items}),
        st.dictionaries(odd_strings(), st.one_of(odd_strings(), number_literals()), min_size=1, max_size=2),
        page_tokens(),
        st.sampled_from(FILTERS),
    )
