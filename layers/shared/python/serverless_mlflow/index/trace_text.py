"""Span-content search (``trace.text`` / ``span.content`` LIKE/ILIKE): one bounded signature per trace.

MLflow runs ``LIKE`` over each span's stored JSON. Here the stream indexer keeps, for every trace, a Bloom
filter of the folded trigrams of its spans' content (``span_content.content``, folded as FTS folds names, so
LIKE and ILIKE both find every match): ``BITS`` bits, ``HASHES`` probes, one fixed-size item per trace
however large its spans are. A pattern's literal trigrams must all be in a trace's filter for the trace to be
a candidate; candidates are then checked exactly against their spans with MLflow's LIKE. No false negatives:
a trace whose signature is missing or older than its spans (indexer lag) is always a candidate.

The filter is stored zlib-compressed when that is shorter (``stored``/``loaded``): a trace of a few spans sets
few of its bits. Either way its item stays under 1 KB, so each write of it costs one write unit, not two.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable

from serverless_mlflow.index import fts

BITS = 6144  # 768 bytes per trace: with its keys, the item stays under 1 KB (one write unit)
# Filters written by earlier releases had 8,192 bits: positions are taken modulo the filter's own size.
RAW_SIZES = frozenset({BITS // 8, 8192 // 8})
HASHES = 3


def _positions(token: str, bits: int = BITS) -> list[int]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4 * HASHES).digest()
    return [int.from_bytes(digest[4 * i : 4 * i + 4], "big") % bits for i in range(HASHES)]


def trigrams(text: str) -> set[str]:
    folded = fts.fold(text)
    return {folded[i : i + fts.NGRAM] for i in range(len(folded) - fts.NGRAM + 1)}


def signature(texts: Iterable[str], size: int = BITS) -> bytes:
    bits = bytearray(size // 8)
    for text in texts:
        for token in trigrams(text):
            for position in _positions(token, size):
                bits[position // 8] |= 1 << (position % 8)
    return bytes(bits)


def stored(bits: bytes) -> bytes:
    """The filter as its item keeps it: compressed when shorter (so never of a raw filter's size then)."""
    packed = zlib.compress(bits, 9)
    return packed if len(packed) < min(RAW_SIZES) else bits


def loaded(value: bytes) -> bytes:
    """The filter from its stored form (raw, of either size, or compressed)."""
    return value if len(value) in RAW_SIZES else zlib.decompress(value)


def pattern_tokens(pattern: str) -> list[str] | None:
    """Trigrams every text a LIKE/ILIKE pattern matches contains (all of them); None when there are none."""
    tokens: list[str] = []
    literal = ""
    for ch in pattern + "%":
        if ch in "%_":
            folded = fts.fold(literal)
            tokens.extend(folded[i : i + fts.NGRAM] for i in range(len(folded) - fts.NGRAM + 1))
            literal = ""
        else:
            literal += ch
    return list(dict.fromkeys(tokens)) or None


def may_contain(bits: bytes, tokens: list[str]) -> bool:
    size = len(bits) * 8
    for token in tokens:
        for position in _positions(token, size):
            if not bits[position // 8] & (1 << (position % 8)):
                return False
    return True
