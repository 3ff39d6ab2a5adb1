"""Span clauses of a trace search (``trace.text`` / ``span.content``, ``span.name/type/status``), checked exactly
on a trace's spans, after its content signature (``serverless_mlflow.index.trace_text``) rules it out or in.

A trace matches when one of its spans meets every span clause (the SQL store's span subquery). The signature
is read first (one small item next to the info): a trace whose signature lacks a trigram of a content pattern
cannot match and its spans are never read. A trace without a signature (the indexer has not seen it yet, or
the trace is still in progress: the indexer writes it once the trace ends) is always checked on its spans.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.index import trace_text
from serverless_mlflow.search import trace_grammar, trace_matching
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import span_content, trace_archive, trace_partitions

from . import span_decoding

SIGNATURE = ENTITY["trace_text_signature"]


def _tokens(clauses: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for clause in clauses:
        if clause["key"] == trace_grammar.SPAN_CONTENT and isinstance(clause["value"], str):
            out.extend(trace_text.pattern_tokens(clause["value"]) or [])
    return list(dict.fromkeys(out))


def _ruled_out(info: dict[str, Any], tokens: list[str]) -> bool:
    if not tokens:
        return False
    fields = trace_partitions.fields_of(info)  # the signature is next to its info
    signature = table.get(SIGNATURE.key(**fields, request_time=int(info.get("request_time") or 0), trace_id=info["trace_id"]))
    return signature is not None and not trace_text.may_contain(trace_text.loaded(bytes(signature["bits"])), tokens)


def matches(info: dict[str, Any], clauses: list[dict[str, Any]]) -> bool:
    span_clauses = trace_matching.span_clauses(clauses)
    if not span_clauses:
        return True
    if _ruled_out(info, _tokens(span_clauses)):
        return False
    trace_id = info["trace_id"]
    # An archived trace's spans keep their name, type and status rows in MLflow but their content is emptied:
    # content and full-text clauses no longer match it.
    archived = trace_archive.is_archived(info)
    for span in span_decoding.stored_spans(info):
        row = {
            trace_grammar.SPAN_CONTENT: "" if archived else span_content.content(span, trace_id),
            "name": span.name,
            "type": _span_type(span),
            "status": {0: "UNSET", 1: "OK", 2: "ERROR"}.get(span.status.code, "UNSET"),
        }
        if trace_matching.span_matches(row, span_clauses):
            return True
    return False


def _span_type(span: Any) -> str | None:
    from serverless_mlflow.index.trace_metrics import rows

    return rows.span_row(span).type
