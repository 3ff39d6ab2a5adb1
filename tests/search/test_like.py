"""LIKE / ILIKE against sqlite itself, configured as MLflow configures it (case_sensitive_like, lower())."""

from __future__ import annotations

import random
import sqlite3

from serverless_mlflow import search

ALPHABET = ["a", "A", "b", "é", "É", "ß", "%", "_", "\\", "\n", "日", " ", "."]


def _word(rng: random.Random, wildcards: bool) -> str:
    chars = ALPHABET if wildcards else [c for c in ALPHABET if c not in "%_"]
    return "".join(rng.choice(chars) for _ in range(rng.choice([0, 1, 2, 3, 4, 5])))


def test_like_and_ilike_match_sqlite() -> None:
    rng = random.Random(9)
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA case_sensitive_like = true")
    hits = 0
    for _ in range(4000):
        value = _word(rng, wildcards=rng.random() < 0.3)
        pattern = _word(rng, wildcards=True) if rng.random() < 0.8 else value
        like, ilike = db.execute("SELECT ? LIKE ?, lower(?) LIKE lower(?)", (value, pattern, value, pattern)).fetchone()
        assert search.like_match(value, pattern, True) == bool(like), (value, pattern)
        assert search.like_match(value, pattern, False) == bool(ilike), (value, pattern)
        hits += bool(like) + bool(ilike)
    assert hits > 500


def test_like_literals_are_contained_in_every_match() -> None:
    rng = random.Random(10)
    for _ in range(2000):
        value = _word(rng, wildcards=False)
        pattern = _word(rng, wildcards=True)
        if search.like_match(value, pattern, True):
            assert all(frag in value for frag in search.like_literals(pattern))
            assert value.startswith(search.like_prefix(pattern))
        if search.like_match(value, pattern, False):
            assert all(search.ascii_lower(frag) in search.ascii_lower(value) for frag in search.like_literals(pattern))
