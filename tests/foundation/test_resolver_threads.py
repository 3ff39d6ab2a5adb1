"""Requests resolved at once in threads (the local runtime's several "Lambda environments") keep their own
event and route arguments, although Powertools keeps both on shared state."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from serverless_mlflow.http.resolver import ThreadLocalHttpResolver


def _event(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {"http": {"method": "POST", "path": path}, "stage": "$default"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def test_concurrent_requests_each_see_their_own_event_and_route() -> None:
    first, second = ThreadLocalHttpResolver(), ThreadLocalHttpResolver()
    both_inside = threading.Barrier(4, timeout=10)

    def echo(app: ThreadLocalHttpResolver) -> Any:
        def answer(name: str) -> dict[str, Any]:
            both_inside.wait()  # every request is now between "event stored" and "event read"
            return {"name": name, "body": app.current_event.json_body, "route": app.context["_route"].rule.pattern}

        return answer

    first.post("/one/<name>")(echo(first))
    second.post("/two/<name>")(echo(second))
    calls = [
        (first, "/one/a", {"n": 1}),
        (first, "/one/b", {"n": 2}),
        (second, "/two/c", {"n": 3}),
        (second, "/two/d", {"n": 4}),
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda call: call[0].resolve(_event(call[1], call[2]), None), calls))
    seen = [json.loads(answer["body"]) for answer in answers]
    assert [(s["name"], s["body"]) for s in seen] == [("a", {"n": 1}), ("b", {"n": 2}), ("c", {"n": 3}), ("d", {"n": 4})]
    assert [s["route"].startswith("^/one") for s in seen] == [True, True, False, False]
