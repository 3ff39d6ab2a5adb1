"""Powertools' HTTP API resolver with the request being resolved kept per thread.

Powertools keeps the event being resolved on a class attribute shared by every resolver
(``BaseRouter.current_event``) and the matched route's arguments in the resolver's ``context`` dict. A Lambda
environment runs one invocation at a time, so that is safe there. The local runtime serves concurrent requests in
threads, as several Lambda environments would: without this, two requests resolved at once could each be
answered with the other's path or body. Holding a lock instead would serialise requests that AWS runs side by
side, and a request that waits for a sibling (``start_trace`` waiting for its spans' OTLP request) would wait in
vain. In Lambda this costs one ``threading.local`` lookup per read.
"""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent


class ThreadLocalHttpResolver(APIGatewayHttpResolver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before Powertools' __init__, which assigns ``self.context``.
        self._per_thread = threading.local()
        super().__init__(*args, **kwargs)

    def _to_proxy_event(self, event: dict) -> BaseProxyEvent:
        # ``resolve`` stores this on the shared class attribute; the thread keeps its own copy.
        proxy_event = super()._to_proxy_event(event)
        self._per_thread.current_event = proxy_event
        return proxy_event

    @property  # type: ignore[override]
    def current_event(self) -> BaseProxyEvent:
        return self._per_thread.current_event

    @current_event.setter
    def current_event(self, value: BaseProxyEvent) -> None:
        self._per_thread.current_event = value

    @property  # type: ignore[override]
    def context(self) -> dict:
        state = self._per_thread
        if not hasattr(state, "context"):
            state.context = {}
        return state.context

    @context.setter
    def context(self, value: dict) -> None:
        self._per_thread.context = value
