"""Name search through trigram postings maintained by the stream indexer.

A name is folded character by character (so every case-insensitive comparison MLflow may make,
SQL ``LIKE``/``ILIKE`` or Python's ``re.IGNORECASE``, maps equal characters to one folded
character) and cut into overlapping trigrams. A ``LIKE`` pattern's literal runs (split on ``%`` and
``_``) give trigrams that every matching name must contain, so intersecting their posting lists
gives a superset of the matches; MLflow's exact match is applied afterwards by the caller. Patterns
without a literal run of three characters return ``None``: the caller falls back to a full listing.

Names longer than ``MAX_INDEXED_CHARS`` are not cut into trigrams (write amplification would be
unbounded); they get one "always a candidate" posting instead.

Trace names are not posted per trace any more (``store.trace_names`` lists each trace partition's distinct
names); postings of kind ``trace`` are read for layout 1 traces and for what an earlier release left, until the
``trace_names`` migration step removes them.

The index may lag (asynchronous indexer). Writers mark a source item as "not yet indexed" by
giving it an ``lsi5sk``; the indexer removes it once the item's name is indexed. ``candidate_ids``
adds those flagged entities read strongly consistent through LSI5, so a search right after a
write is still exact.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE

FORWARD = ENTITY["fts_forward"]
REVERSE = ENTITY["fts_reverse"]

NGRAM = 3
LEVEL_GRAM = "3"  # trigram posting
LEVEL_LONG = "a"  # name too long to cut into trigrams: always a candidate
MAX_INDEXED_CHARS = 256
# Posting lists are read round-robin until the shortest one is complete, so a search costs about
# (tokens x shortest list): more tokens make it likelier a rare one is among them, but each adds a
# Query and a page. A spread of up to 8 keeps both bounded; a superset of the matches is all we need.
MAX_QUERY_TOKENS = 8

# Entity kinds and the source entity whose name they index.
RUN = "run"
EXPERIMENT = "experiment"
REGISTERED_MODEL = "registered_model"
TRACE = "trace"
TRACE_NAME_TAG = "mlflow.traceName"
SOURCE_ENTITY_OF_KIND = {
    RUN: "run",
    EXPERIMENT: "experiment_entry",
    REGISTERED_MODEL: "registered_model_entry",
    TRACE: "trace",
}

try:  # Python's own simple case mapping and the extra equivalences re.IGNORECASE applies.
    from _sre import unicode_tolower as _sre_tolower
    from re._casefix import _EXTRA_CASES
except ImportError:  # pragma: no cover - other interpreters
    _sre_tolower = None
    _EXTRA_CASES = {}


def _fold_char(ch: str) -> str:
    if _sre_tolower is not None:
        lowered = _sre_tolower(ord(ch))
        return chr(min((lowered, *_EXTRA_CASES.get(lowered, ()))))
    low = ch.lower()
    return low if len(low) == 1 else ch


def fold(text: str) -> str:
    """One folded character per input character (keeps positions, so trigrams stay aligned)."""
    return "".join(_fold_char(ch) for ch in text)


def name_tokens(name: str | None) -> set[tuple[str, str]]:
    """(level, token) postings implied by a name."""
    if not name:
        return set()
    if len(name) > MAX_INDEXED_CHARS:
        return {(LEVEL_LONG, "")}
    folded = fold(name)
    return {(LEVEL_GRAM, folded[i : i + NGRAM]) for i in range(len(folded) - NGRAM + 1)}


def pattern_tokens(pattern: str) -> list[str] | None:
    """Trigrams every name matching the LIKE/ILIKE pattern contains, or None if there are none.

    ``%`` and ``_`` are wildcards (MLflow's LIKE has no escape character). Combining marks are
    refused: a full lowercase mapping can turn one name character into two (``İ`` -> ``i̇``), which
    per-character folding cannot mirror.
    """
    if any(unicodedata.combining(ch) for ch in pattern):
        return None
    tokens: list[str] = []
    literal = ""
    for ch in pattern + "%":
        if ch in "%_":
            folded = fold(literal)
            tokens.extend(folded[i : i + NGRAM] for i in range(len(folded) - NGRAM + 1))
            literal = ""
        else:
            literal += ch
    unique = list(dict.fromkeys(tokens))
    if not unique:
        return None
    if len(unique) > MAX_QUERY_TOKENS:
        step = (len(unique) - 1) / (MAX_QUERY_TOKENS - 1)
        unique = [unique[round(i * step)] for i in range(MAX_QUERY_TOKENS)]
    return unique


# --- scopes ------------------------------------------------------------------------------------


def experiments_scope(workspace: str) -> str:
    return ENTITY["experiment_entry"].pk.render({"workspace": workspace})


def registered_models_scope(workspace: str) -> str:
    """Postings of model names: their own partition (the RMLIST#<ws> collection is read whole by the registry)."""
    return COLLECTIONS["model_postings"].pk.render({"workspace": workspace})


def registered_models_collection(workspace: str) -> str:
    """Where registered_model_entry items (and their "not yet indexed" flags) live."""
    return ENTITY["registered_model_entry"].pk.render({"workspace": workspace})


def runs_scope(experiment_id: str) -> str:
    return ENTITY["run"].pk.render({"experiment_id": experiment_id})


# --- items -------------------------------------------------------------------------------------


def posting_items(scope: str, kind: str, entity_id: str, level: str, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The forward and reverse items of one posting."""
    values = {"scope": scope, "entity_kind": kind, "entity_id": entity_id, "level": level, "token": token}
    attributes = {"entity_kind": kind, "entity_id": entity_id, "level": level, "token": token}
    return FORWARD.item(attributes, **values), REVERSE.item(attributes, **values)


def reverse_prefix(kind: str, entity_id: str) -> str:
    return REVERSE.sk_prefix(entity_kind=kind, entity_id=entity_id)


def indexed_postings(scope: str, kind: str, entity_id: str) -> list[dict[str, Any]]:
    """The reverse items currently stored for an entity (what must go when its name changes)."""
    return table.query(scope, reverse_prefix(kind, entity_id))


# --- search ------------------------------------------------------------------------------------


def _posting_ids(scope: str, kind: str, level: str, token: str) -> set[str]:
    prefix = FORWARD.sk_prefix(level=level, token=token, entity_kind=kind)
    return {item["entity_id"] for item in table.iter_query(scope, prefix)}


_PAGE_SIZES = (16, 32, 64, 128, 256, 512, 1000)


class _Postings:
    """One token's posting list, read page by page (growing pages) only as far as needed."""

    def __init__(self, scope: str, kind: str, token: str) -> None:
        self.scope = scope
        self.prefix = FORWARD.sk_prefix(level=LEVEL_GRAM, token=token, entity_kind=kind)
        self.ids: set[str] = set()
        self.done = False
        self._start: dict[str, Any] | None = None
        self._round = 0

    def advance(self) -> None:
        size = _PAGE_SIZES[min(self._round, len(_PAGE_SIZES) - 1)]
        self._round += 1
        last: dict[str, Any] | None = None
        for items, page_last in table.query_pages(self.scope, self.prefix, limit=size, start_key=self._start):
            last = page_last
            self.ids.update(item["entity_id"] for item in items)
        self._start = last
        self.done = not last


def _intersect_postings(scope: str, kind: str, tokens: list[str]) -> set[str]:
    """Entities holding every token, reading about (tokens x shortest list) items.

    All lists are read round-robin; as soon as one is complete, its ids (intersected with any other
    complete list) are a superset of the answer and the longer lists are left unread.
    """
    lists = [_Postings(scope, kind, token) for token in tokens]
    while True:
        for postings in lists:
            postings.advance()
        complete = [p for p in lists if p.done]
        if complete:
            found = set(complete[0].ids)
            for postings in complete[1:]:
                found &= postings.ids
            return found


def pending_ids(scope: str, kind: str) -> set[str]:
    """Entities of ``kind`` whose latest name may not be indexed yet (LSI5 flag, read consistently)."""
    source = SOURCE_ENTITY_OF_KIND[kind]
    out: set[str] = set()
    for item in table.iter_query(**COLLECTIONS["unindexed"].query(scope=scope)):
        if item.get(ENTITY_TYPE) == source:
            entity_id = entity_id_of(item)
            if entity_id is not None:
                out.add(entity_id)
    return out


def entity_id_of(item: dict[str, Any]) -> str | None:
    entity_type = item.get(ENTITY_TYPE)
    if entity_type == "run":
        return item.get("run_id")
    if entity_type == "experiment_entry":
        return item.get("experiment_id")
    if entity_type == "registered_model_entry":
        return item.get("name")
    if entity_type == "trace":
        return item.get("trace_id")
    return None


def candidate_ids(scope: str, kind: str, pattern: str, pending_scope: str | None = None) -> set[str] | None:
    """Ids of ``kind`` entities in ``scope`` whose name may match the LIKE/ILIKE ``pattern``.

    A superset of the true matches (never a miss), or None when the pattern has no trigram and the
    caller must list every entity. Includes names not yet indexed and names too long to index.
    """
    tokens = pattern_tokens(pattern)
    if tokens is None:
        return None
    out = _intersect_postings(scope, kind, tokens)
    out |= _posting_ids(scope, kind, LEVEL_LONG, "")
    out |= pending_ids(pending_scope or scope, kind)
    return out


def experiment_candidates(workspace: str, pattern: str) -> set[str] | None:
    return candidate_ids(experiments_scope(workspace), EXPERIMENT, pattern)


def registered_model_candidates(workspace: str, pattern: str) -> set[str] | None:
    return candidate_ids(registered_models_scope(workspace), REGISTERED_MODEL, pattern, registered_models_collection(workspace))


def candidates_in(scopes: Iterable[str], kind: str, pattern: str, pending_scope: str | None = None) -> set[str] | None:
    """``candidate_ids`` over several scopes (one per experiment): their union, or None if any is None."""
    out: set[str] = set()
    for scope in scopes:
        ids = candidate_ids(scope, kind, pattern, pending_scope)
        if ids is None:
            return None
        out |= ids
    return out


def run_candidates(experiment_ids: Iterable[str], pattern: str) -> set[str] | None:
    return candidates_in((runs_scope(e) for e in experiment_ids), RUN, pattern)


def filter_candidates(comparisons: Any, scopes: Iterable[str], kind: str, pending_scope: str | None = None) -> set[str] | None:
    """Candidate ids for a parsed search ``Filter`` (``serverless_mlflow.search``), or None.

    Uses every ``LIKE``/``ILIKE``/``=`` comparison on the entity's name (they are ANDed, so their
    candidate sets intersect). None when no comparison yields trigrams: list everything instead.
    The caller still applies the filter exactly (``query.matches``/``query.run``) to the candidates.
    """
    from serverless_mlflow.search.filters import name_patterns

    scopes = list(scopes)
    best: set[str] | None = None
    for comparator, value in name_patterns(comparisons):
        if comparator not in ("LIKE", "ILIKE", "=") or not isinstance(value, str):
            continue
        ids = candidates_in(scopes, kind, value, pending_scope)
        if ids is not None:
            best = ids if best is None else best & ids
    return best
