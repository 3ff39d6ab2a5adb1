"""One fuzzed HTTP request, drawn from a route's plan, and what every answer must satisfy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests
from hypothesis import strategies as st

from . import values, wire
from .conftest import Target
from .plans import RoutePlan, messages, path_params
from .state import State

# Answers a stock MLflow server gives as text that ours copies (MLflow's basic-auth app's create_user).
TEXT_ANSWERS = {("POST", "/api/2.0/mlflow/users/create")}


@dataclass
class Fuzzed:
    method: str
    path: str
    query: str = ""
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        body = (self.body or b"")[:600]
        return f"{self.method} {self.path[:300]}{'?' + self.query[:300] if self.query else ''} body={body!r}"


def _path(plan: RoutePlan, params: dict[str, str]) -> str:
    path = plan.route.path
    for name, value in params.items():
        segment = value if name == "path" and "/" in value and value.isascii() else wire.path_segment(value)
        path = path.replace("{" + name + "+}", segment).replace("{" + name + "}", segment)
    return path


def _query_pairs(draw: Any, message: dict[str, Any]) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    for name, value in message.items():
        if isinstance(value, list) and draw(st.integers(0, 3)) > 0:
            pairs += [(name, item) for item in value] or [(name, "")]
        else:
            pairs.append((name, value))
            if draw(st.integers(0, 5)) == 0:
                pairs.append((name, draw(st.one_of(st.just(value), values.bad_values()))))  # a repeated key
    return pairs


@st.composite
def fuzzed_requests(draw: Any, plan: RoutePlan, target: Target) -> Fuzzed:
    seeds = target.seeds
    shape = draw(st.integers(0, 19))
    params = draw(path_params(plan, seeds, hostile=bool(plan.path_params) and shape == 0))
    fuzzed = Fuzzed(plan.route.method, _path(plan, params), headers=dict(target.headers))
    message = draw(messages(plan, seeds))
    if plan.in_query:
        fuzzed.query = wire.query_string(_query_pairs(draw, message))
        return fuzzed
    fuzzed.headers["content-type"] = "application/json"
    if shape == 1:
        # A body that is not a JSON object: another JSON value, nesting 50,000 deep, broken JSON.
        whole = draw(st.one_of(values.bad_values(), values.deep(), st.sampled_from(("{", "[1,", '{"a":}', "\x00", "\ud800"))))
        fuzzed.body = whole.encode("utf-8", "surrogatepass") if isinstance(whole, str) else wire.body_bytes(whole)
    elif shape == 2:
        fuzzed.body = wire.body_bytes(message)
        fuzzed.headers["content-type"] = draw(st.sampled_from(("text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=latin-1")))
    elif shape == 3:
        # The fields as query parameters of a body route (a client that sends them on the URL).
        fuzzed.query = wire.query_string(_query_pairs(draw, message))
        fuzzed.body = b"{}"
    else:
        fuzzed.body = wire.body_bytes(message)
    return fuzzed


def send(target: Target, fuzzed: Fuzzed) -> requests.Response:
    url = target.url + fuzzed.path + ("?" + fuzzed.query if fuzzed.query else "")
    return requests.request(fuzzed.method, url, data=fuzzed.body, headers=fuzzed.headers, timeout=120, allow_redirects=False)


def check_answer(target: Target, fuzzed: Fuzzed, response: requests.Response, before: State) -> None:
    """No 5xx; every 4xx in MLflow's JSON error shape and without any change to the table or the bucket
    (``before``: the state the request was sent in)."""
    where = f"{target.mode}: {fuzzed.describe()} -> {response.status_code} {response.text[:400]!r}"
    assert response.status_code < 500, where
    if response.status_code < 400:
        target.known = None  # it may have changed something; the next failure compares with a new snapshot
        return
    if (fuzzed.method, fuzzed.path) not in TEXT_ANSWERS:
        try:
            body = response.json()
        except ValueError:
            raise AssertionError(f"not JSON: {where}") from None
        assert isinstance(body, dict) and isinstance(body.get("error_code"), str) and isinstance(body.get("message"), str), where
        assert body["error_code"], where
    target.known = None
    after = target.state()
    assert after == before, f"a failed request changed the store: {where}\n{before.difference(after)}"
