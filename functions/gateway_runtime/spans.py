"""Spans as MLflow's tracing records them (``mlflow/entities/span.py``, ``mlflow/tracing/fluent.py``), without mlflow.

A span holds its attributes as Python values; inputs and outputs are the ``mlflow.spanInputs`` /
``mlflow.spanOutputs`` attributes; a streamed function records each chunk as an ``mlflow.chunk.item.<n>``
event; an exception is an ``exception`` event and an ERROR status. On end a span gets MLflow's default log
level (INFO for model spans, DEBUG otherwise, ERROR once an exception was recorded) and the attributes MLflow's
store derives when it stores a span (``translate_span_when_storing``: the model named by the inputs or
outputs, and the cost of its token usage).
"""

from __future__ import annotations

import json
import secrets
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import pricing

UNSET: Any = object()
INPUTS, OUTPUTS = "mlflow.spanInputs", "mlflow.spanOutputs"
MODEL, PROVIDER, USAGE, COST = "mlflow.llm.model", "mlflow.llm.provider", "mlflow.chat.tokenUsage", "mlflow.llm.cost"
LOG_LEVEL, SPAN_TYPE, FUNCTION_NAME = "mlflow.spanLogLevel", "mlflow.spanType", "mlflow.spanFunctionName"
DEBUG, INFO, ERROR = 10, 20, 40
_INFO_TYPES = frozenset({"LLM", "CHAT_MODEL", "TOOL", "RETRIEVER", "AGENT", "EMBEDDING"})


def dumps(value: Any) -> str:
    """``json.dumps`` with MLflow's ``TraceJSONEncoder`` fallback: what it cannot encode becomes ``str()``
    (bytes chunks read ``"b'...'"``, as MLflow's spans show them)."""
    return json.dumps(value, default=str)


def plain(value: Any) -> Any:
    """A value as its JSON round trip (what a span holds once stored)."""
    return json.loads(dumps(value))


@dataclass
class Span:
    name: str
    span_type: str
    parent: Span | None = None
    start_ns: int = field(default_factory=time.time_ns)
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    end_ns: int = 0
    status: str = "UNSET"
    status_message: str = ""
    span_id: str = field(default_factory=lambda: secrets.token_hex(8))

    def __post_init__(self) -> None:
        self.attributes[SPAN_TYPE] = self.span_type

    def set_inputs(self, value: Any) -> None:
        self.attributes[INPUTS] = plain(value)

    def set_outputs(self, value: Any) -> None:
        self.attributes[OUTPUTS] = plain(value)

    def chunk(self, value: Any) -> None:
        index = sum(1 for event in self.events if event["name"].startswith("mlflow.chunk.item."))
        self.events.append(
            {"name": f"mlflow.chunk.item.{index}", "time_ns": time.time_ns(), "attributes": {"mlflow.chunk.value": dumps(value)}}
        )

    def record_error(self, error: BaseException) -> None:
        """``SpanEvent.from_exception`` + ERROR status, as MLflow's span context and ``@mlflow.trace`` do."""
        self.events.append(
            {
                "name": "exception",
                "time_ns": time.time_ns(),
                "attributes": {
                    "exception.message": str(error),
                    "exception.type": exception_type(error),
                    "exception.stacktrace": "".join(traceback.format_exception(error)).strip(),
                },
            }
        )
        self.attributes[LOG_LEVEL] = ERROR
        self.status = "ERROR"

    def end(self, outputs: Any = UNSET) -> None:
        if outputs is not UNSET:
            self.set_outputs(outputs)
        if self.status == "UNSET":
            self.status = "OK"
        self.attributes.setdefault(LOG_LEVEL, INFO if self.span_type in _INFO_TYPES else DEBUG)
        self.end_ns = time.time_ns()
        self._translate()

    def _translate(self) -> None:
        """What MLflow's store adds when it stores the span: the model from the inputs or outputs, the cost."""
        if MODEL not in self.attributes:
            for key in (INPUTS, OUTPUTS):
                value = self.attributes.get(key)
                if isinstance(value, dict) and value.get("model"):
                    if isinstance(value["model"], str):
                        self.attributes[MODEL] = value["model"]
                    break
        if COST not in self.attributes and self.attributes.get(USAGE) and self.attributes.get(MODEL):
            if cost := pricing.cost(self.attributes[MODEL], self.attributes[USAGE], self.attributes.get(PROVIDER)):
                self.attributes[COST] = cost


def exception_type(error: BaseException) -> str:
    """The class name MLflow's gateway would record: upstream answers are FastAPI's ``HTTPException``."""
    return getattr(error, "mlflow_type", None) or type(error).__name__


@contextmanager
def recording(span: Span) -> Iterator[Span]:
    """``with mlflow.start_span(...)``: the span ends when the block does, with the exception (recorded, ERROR)
    that escapes it. Outputs are set inside the block."""
    try:
        yield span
    except BaseException as error:
        span.record_error(error)
        span.end()
        raise
    span.end()
