"""A gateway usage trace as what it says, for comparing ours with ``mlflow server``'s: everything the client
reads back except ids, times, sizes and the serving process's own environment."""

from __future__ import annotations

import json
import re
from typing import Any

# Metadata that describes the process that wrote the trace (MLflow's server records its own source file,
# git state and OS user) or byte sizes that depend on ids and timestamps.
ENVIRONMENT_METADATA = frozenset({"mlflow.user", "mlflow.trace.sizeBytes", "mlflow.trace.sizeStats"})
ENVIRONMENT_PREFIXES = ("mlflow.source.",)
# Span attributes that name ids or the serving host.
ID_ATTRIBUTES = frozenset({"mlflow.traceRequestId", "mlflow.experimentId", "endpoint_id", "server_url"})
# Metadata naming ids: compared by presence.
ID_METADATA = frozenset({"mlflow.gateway.endpointId"})
_CREATED = re.compile(r'(\\?"created(?:_at)?\\?":\s*)\d+')


def normalized(text: str) -> str:
    """Answers without what differs by nature: translated answers carry the current time."""
    return _CREATED.sub(r"\g<1>0", text)


def _plain(value: Any) -> Any:
    """A value with timestamps zeroed (through its JSON text, so nested and string-encoded ones too)."""
    return json.loads(normalized(json.dumps(value)))


def _event(event: Any) -> dict[str, Any]:
    attributes = {k: v for k, v in event.attributes.items() if k != "exception.stacktrace"}
    if "mlflow.chunk.value" in attributes:
        attributes["mlflow.chunk.value"] = normalized(attributes["mlflow.chunk.value"])
    return {"name": event.name, "attributes": attributes}


def _depth(span: Any, by_id: dict[str, Any]) -> int:
    depth = 0
    while span.parent_id is not None and span.parent_id in by_id:
        span, depth = by_id[span.parent_id], depth + 1
    return depth


def trace_shape(trace: Any) -> dict[str, Any]:
    metadata = {
        key: value
        for key, value in trace.info.trace_metadata.items()
        if key not in ENVIRONMENT_METADATA and not key.startswith(ENVIRONMENT_PREFIXES)
    }
    size_stats = json.loads(trace.info.trace_metadata.get("mlflow.trace.sizeStats") or "{}")
    by_id = {span.span_id: span for span in trace.data.spans}
    spans = sorted(trace.data.spans, key=lambda span: (_depth(span, by_id), span.start_time_ns))
    return {
        "state": str(trace.info.state),
        "tags": {k: v for k, v in trace.info.tags.items() if k == "mlflow.traceName"},
        "request_preview": normalized(trace.info.request_preview or ""),
        "response_preview": normalized(trace.info.response_preview or ""),
        "metadata": _plain({k: "<id>" if k in ID_METADATA else normalized(v) for k, v in metadata.items()}),
        "size_stats_keys": sorted(size_stats),
        "num_spans": size_stats.get("num_spans"),
        "spans": [
            {
                "name": span.name,
                "depth": _depth(span, by_id),
                "type": span.span_type,
                "status": str(span.status.status_code),
                "inputs": _plain(span.inputs),
                "outputs": _plain(span.outputs),
                "attributes": _plain({k: v for k, v in span.attributes.items() if k not in ID_ATTRIBUTES}),
                "events": [_event(event) for event in span.events],
            }
            for span in spans
        ],
    }


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Readable differences between two shapes (empty when equal)."""
    out = []
    for key in sorted(set(ours) | set(theirs)):
        if key == "spans":
            continue
        if ours.get(key) != theirs.get(key):
            out.append(f"{key}: ours {ours.get(key)!r:.400} theirs {theirs.get(key)!r:.400}")
    names = ([s["name"] for s in ours["spans"]], [s["name"] for s in theirs["spans"]])
    if names[0] != names[1]:
        out.append(f"spans: ours {names[0]} theirs {names[1]}")
    for a, b in zip(ours["spans"], theirs["spans"], strict=False):
        for key in sorted(set(a) | set(b)):
            if key == "attributes":
                for attribute in sorted(set(a[key]) | set(b[key])):
                    if a[key].get(attribute) != b[key].get(attribute):
                        out.append(
                            f"{a['name']} attribute {attribute}: ours {a[key].get(attribute)!r:.300} theirs {b[key].get(attribute)!r:.300}"
                        )
            elif a.get(key) != b.get(key):
                out.append(f"{a['name']} {key}: ours {a.get(key)!r:.400} theirs {b.get(key)!r:.400}")
    return out
