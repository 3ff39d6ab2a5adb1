"""Key encodings: order preserved, no key a prefix of another, whatever the user typed."""

from __future__ import annotations

import math
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serverless_mlflow.storage import keys

ADVERSARIAL = [
    "",
    "a",
    "a#",
    "a#b",
    "a!",
    "a ",
    "a\x00",
    "a\x01",
    "a\x02",
    "a\x03",
    "a\x04",
    "#",
    "##",
    "a#\x01",
    "é",
    "日本",
    "😀",
    "a%",
    "a_",
]


@given(st.text(), st.text())
@settings(max_examples=400)
def test_text_preserves_order_and_is_prefix_free(a: str, b: str) -> None:
    ea, eb = keys.text(a), keys.text(b)
    assert (ea < eb) == (a.encode() < b.encode())
    if a != b:
        assert not eb.startswith(ea) and not ea.startswith(eb)


def test_text_adversarial_pairs() -> None:
    for a in ADVERSARIAL:
        assert keys.decode_text(keys.text(a)) == a
        for b in ADVERSARIAL:
            if a != b:
                assert not keys.text(b).startswith(keys.text(a)), (a, b)
                assert (keys.text(a) < keys.text(b)) == (a.encode() < b.encode()), (a, b)


def test_long_text_is_bounded_unique_and_prefix_free() -> None:
    long_a = "x" * 2000 + "a"
    long_b = "x" * 2000 + "b"
    ea, eb = keys.text(long_a), keys.text(long_b)
    assert len(ea.encode()) <= keys.DEFAULT_TEXT_BUDGET and len(eb.encode()) <= keys.DEFAULT_TEXT_BUDGET
    assert ea != eb
    short = "x" * 500
    assert keys.text(short) < ea  # a string sorts before longer strings it is a prefix of
    assert not ea.startswith(keys.text(short))
    with pytest.raises(ValueError):
        keys.decode_text(ea)
    four_byte = "😀" * 300
    assert len(keys.text(four_byte).encode()) <= keys.DEFAULT_TEXT_BUDGET


@given(st.integers(min_value=keys.INT64_MIN, max_value=keys.INT64_MAX), st.integers(min_value=keys.INT64_MIN, max_value=keys.INT64_MAX))
def test_int64_order(a: int, b: int) -> None:
    assert (keys.int64(a) < keys.int64(b)) == (a < b)
    assert keys.decode_int64(keys.int64(a)) == a
    assert len(keys.int64(a)) == 16


def test_int64_range() -> None:
    for value in (2**53 + 1, -(2**53) - 1, keys.INT64_MAX, keys.INT64_MIN):
        assert keys.decode_int64(keys.int64(value)) == value
    with pytest.raises(ValueError):
        keys.int64(2**63)


@given(st.floats(allow_nan=True), st.floats(allow_nan=True))
def test_float64_order(a: float, b: float) -> None:
    ea, eb = keys.float64(a), keys.float64(b)
    if math.isnan(a) or math.isnan(b):
        if math.isnan(a) and math.isnan(b):
            assert ea == eb
        elif math.isnan(a):
            assert ea > eb  # NaN sorts after +inf
        else:
            assert ea < eb
    else:
        assert (ea < eb) == (a < b)
        assert (ea == eb) == (a == b)


def test_float64_special_values() -> None:
    ordered = [-math.inf, -1e308, -1.0, -5e-324, 0.0, 5e-324, 1.0, 1e308, math.inf, math.nan]
    encoded = [keys.float64(v) for v in ordered]
    assert encoded == sorted(encoded)
    assert keys.float64(-0.0) == keys.float64(0.0)
    negative_nan = struct.unpack(">d", struct.pack(">Q", 0xFFF8000000000001))[0]
    assert keys.float64(negative_nan) == keys.float64(math.nan)
    for value in (-math.inf, -2.5, 0.0, 3.75, math.inf):
        assert keys.decode_float64(keys.float64(value)) == value


def test_version_is_zero_padded_numeric_order() -> None:
    versions = random.sample(range(1, 10**6), 200)
    assert sorted(versions, key=keys.version) == sorted(versions)
    assert keys.version(7) == "0000000007"


def test_descending_inverts_order() -> None:
    values = sorted(random.sample(range(-1000, 1000), 50))
    encoded = [keys.descending(keys.int64(v)) for v in values]
    assert encoded == sorted(encoded, reverse=True)
