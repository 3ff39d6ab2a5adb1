"""Order-preserving, prefix-free encodings for values that appear inside keys.

DynamoDB compares string keys by their UTF-8 bytes, which is also how sqlite's BINARY collation
orders MLflow's names, so a raw string sorts the way MLflow sorts it. Two things break when user
strings are spliced into a composite key such as ``R#<run>#M#<key>#<step>``:

* a ``#`` (or any separator) inside the string lets one key become a prefix of another, so a
  ``begins_with`` query returns the wrong entity;
* a separator that is larger than some content character reorders values ("a" vs "a!").

``text()`` solves both: it escapes the four lowest code points and ends every string with
``\\x01``, which is smaller than anything the escaped content can start with. A string that would
not fit a key is cut and tagged with a digest so it stays unique; only such over-long strings
lose exact ordering among themselves, and readers re-sort on the full value.

Numbers get fixed-width encodings so lexicographic order is numeric order.
"""

from __future__ import annotations

import hashlib
import math
import struct

from serverless_mlflow.core.errors import MlflowError

TERMINATOR = "\x01"
_TRUNCATED = "\x02"
_ESCAPE = "\x03"
_ESCAPES = {chr(c): _ESCAPE + chr(c + 1) for c in range(4)}
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}

# DynamoDB caps a sort key at 1024 bytes and a partition key at 2048; a user string gets at most
# this many bytes so that the fixed parts of any key template still fit.
DEFAULT_TEXT_BUDGET = 600

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def text(value: str, budget: int = DEFAULT_TEXT_BUDGET) -> str:
    """Encode a user string so it sorts like the raw string and is never a prefix of another."""
    escaped = "".join(_ESCAPES.get(ch, ch) for ch in value) if _needs_escape(value) else value
    # surrogatepass: a string with a lone surrogate still encodes (such a key is never stored: dynamo_limits).
    if len(escaped.encode("utf-8", "surrogatepass")) + 1 <= budget:
        return escaped + TERMINATOR
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    head = _cut_utf8(escaped, budget - len(digest) - 2)
    return head + _TRUNCATED + digest + TERMINATOR


# An id written raw into a key (``{run_id}``) is server-made and short; one longer than this (from a hostile
# request) is cut and tagged with a digest like ``text()`` does, so that a key holding two of them still
# fits DynamoDB's 1,024-byte sort key. Every real id and ``text()``'s own 300-byte value keys stay as they are.
RAW_ID_BUDGET = 400


def raw_id(value: str) -> str:
    """A raw key segment: the value itself, unless it is longer than ``RAW_ID_BUDGET`` bytes."""
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) <= RAW_ID_BUDGET:
        return value
    digest = hashlib.sha256(encoded).hexdigest()[:24]
    return encoded[: RAW_ID_BUDGET - len(digest) - 1].decode("utf-8", errors="ignore") + _TRUNCATED + digest


def decode_text(encoded: str) -> str:
    """Inverse of ``text()`` for strings that were not truncated (read the full value from the item)."""
    out, i = [], 0
    while i < len(encoded):
        ch = encoded[i]
        if ch == _ESCAPE:
            out.append(_UNESCAPES[encoded[i : i + 2]])
            i += 2
        elif ch == TERMINATOR:
            break
        elif ch == _TRUNCATED:
            raise ValueError("truncated key segment; read the value attribute instead")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _needs_escape(value: str) -> bool:
    return any(ch < "\x04" for ch in value)


def _cut_utf8(value: str, max_bytes: int) -> str:
    cut = value.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", errors="ignore")
    # Never split an escape pair.
    if cut.endswith(_ESCAPE):
        cut = cut[:-1]
    return cut


class OutOfRange(MlflowError, ValueError):
    """A number no key can hold: the request named it (stored numbers were encoded once), so INVALID_PARAMETER_VALUE
    (400) rather than a server fault, whichever route let it through its parser."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "INVALID_PARAMETER_VALUE")


def int64(value: int) -> str:
    """Fixed-width offset-binary hex: negative numbers and values past 2**53 sort correctly."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise OutOfRange(f"Invalid value {value} supplied: it is outside the int64 range [{INT64_MIN}, {INT64_MAX}].")
    return format(value - INT64_MIN, "016x")


def decode_int64(encoded: str) -> int:
    return int(encoded, 16) + INT64_MIN


def float64(value: float) -> str:
    """Fixed-width hex of the IEEE-754 bits, reordered so byte order is numeric order.

    -inf < negatives < 0 < positives < +inf < NaN. -0.0 is folded onto 0.0 and every NaN onto one
    canonical NaN, as MLflow's SQL store treats them as equal.
    """
    if math.isnan(value):
        value = math.nan
    elif value == 0.0:
        value = 0.0
    (bits,) = struct.unpack(">Q", struct.pack(">d", value))
    if bits & (1 << 63):
        bits = ~bits & 0xFFFFFFFFFFFFFFFF
    else:
        bits |= 1 << 63
    return format(bits, "016x")


def decode_float64(encoded: str) -> float:
    bits = int(encoded, 16)
    if bits & (1 << 63):
        bits &= ~(1 << 63)
    else:
        bits = ~bits & 0xFFFFFFFFFFFFFFFF
    (value,) = struct.unpack(">d", struct.pack(">Q", bits))
    return value


VERSION_WIDTH = 10


def version(value: int) -> str:
    """Zero-padded model version number: lexicographic order is numeric order."""
    if not 0 <= value < 10**VERSION_WIDTH:
        raise OutOfRange(f"Invalid version {value} supplied: a version is a number from 0 to {10**VERSION_WIDTH - 1}.")
    return format(value, f"0{VERSION_WIDTH}d")


def descending(encoded_hex: str) -> str:
    """Invert a fixed-width hex encoding so an ascending read yields descending values."""
    return encoded_hex.translate(_HEX_INVERT)


_HEX_INVERT = str.maketrans("0123456789abcdef", "fedcba9876543210")

ENCODERS = {
    "str": text,
    "i64": int64,
    "f64": float64,
    "ver": version,
}
