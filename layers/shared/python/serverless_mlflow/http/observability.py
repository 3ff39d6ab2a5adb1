"""Logs, traces and metrics around a Lambda handler (Powertools), paying at cold start only for what is on.

* **Traces.** Powertools' ``Tracer()`` imports and configures the X-Ray SDK even when tracing is disabled
  (its recorder builds a botocore session at import: the largest part of a handler's cold import). The
  tracer is made only when Powertools would trace: in Lambda, not in an emulator, and without
  ``POWERTOOLS_TRACE_DISABLED``. Off (the local runtime, tests, a stack with tracing off), the handler is
  not wrapped and the SDK is never imported.
* **Metrics.** CloudWatch EMF through Powertools' ``Metrics`` when deployed. With
  ``POWERTOOLS_METRICS_DISABLED`` (the local runtime's default) nothing is printed: Powertools skips the flush
  but keeps the values, and prints them anyway once a metric holds 100 values (a 2.7 KB line every 100
  invocations); they are dropped after each invocation here. ``POWERTOOLS_METRICS_DISABLED=false`` asks for
  the EMF lines locally.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.tracing.tracer import Tracer

Handler = Callable[[dict[str, Any], Any], Any]
NAMESPACE = "MlflowServerless"


def tracing_enabled() -> bool:
    """Powertools' own rule (env var, Lambda environment, emulators), decided without importing X-Ray."""
    return not Tracer._is_tracer_disabled()


class Observed:
    """One function's logger and metrics, and the decorator that wraps its handler."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.logger = Logger(service=service)
        self.metrics = Metrics(namespace=NAMESPACE, service=service)

    def handler(self, correlation_id_path: str | None = None, capture_response: bool = True) -> Callable[[Handler], Handler]:
        def wrap(handler: Handler) -> Handler:
            inner: Handler = self.metrics.log_metrics(handler)
            if tracing_enabled():
                inner = Tracer(service=self.service).capture_lambda_handler(inner, capture_response=capture_response)
            inner = self.logger.inject_lambda_context(inner, correlation_id_path=correlation_id_path, clear_state=True)

            @functools.wraps(handler)
            def observed(event: dict[str, Any], context: Any) -> Any:
                try:
                    return inner(event, context)
                finally:
                    if is_metrics_disabled():
                        self.metrics.clear_metrics()

            return observed

        return wrap
