"""Span-content search (``trace.text`` / ``span.content`` LIKE/ILIKE): one bounded signature per trace.

MLflow runs ``LIKE`` over each span's stored JSON. Here the stream indexer keeps, for every trace, a Bloom
filter of the folded trigrams of its spans' content (``span_content.content``, folded as FTS folds names, so
LIKE and ILIKE both find every match): ``BITS`` bits, ``HASHES`` probes, one fixed-size item per trace
however large its spans are. A pattern's literal trigrams must all be in a trace's filter for the trace to be
a candidate; candidates are then checked exactly against their spans with MLflow's LIKE. No false negatives:
a trace whose signature is missing or older than its spans (indexer lag) is always a candidate.

The filter is stored zlib-compressed when that is shorter (``stored``/``loaded``): a trace of a few spans sets
a few hundred of its bits, so its item stays under 1 KB and each write of it costs one write unit, not two.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable

from serverless_mlflow.index import fts

BITS = 8192  # 1 KiB per trace
HASHES = 3


def _positions(token: str) -> list[int]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4 * HASHES).digest()
    return [int.from_bytes(digest[4 * i : 4 * i + 4], "big") % BITS for i in range(HASHES)]


def trigrams(text: str) -> set[str]:
    folded = fts.fold(text)
    return {folded[i : i + fts.NGRAM] for i in range(len(folded) - fts.NGRAM + 1)}


def signature(texts: Iterable[str]) -> bytes:
    bits = bytearray(BITS // 8)
    for text in texts:
        for token in trigrams(text):
            for position in _positions(token):
                bits[position // 8] |= 1 << (position % 8)
    return bytes(bits)


def stored(bits: bytes) -> bytes:
    """The filter as its item keeps it: compressed when shorter (never ``BITS // 8`` bytes long then)."""
    packed = zlib.compress(bits, 9)
    return packed if len(packed) < len(bits) else bits


def loaded(value: bytes) -> bytes:
    """The filter from its stored form (raw ``BITS // 8`` bytes, or compressed)."""
    return value if len(value) == BITS // 8 else zlib.decompress(value)


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
    for token in tokens:
        for position in _positions(token):
            if not bits[position // 8] & (1 << (position % 8)):
                return False
    return True
