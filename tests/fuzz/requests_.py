"""One fuzzed HTTP request, drawn from a route's plan, and what every answer must satisfy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests
from hypothesis import strategies as st

from infra.permissions import access_for
from serverless_mlflow.request import routes

from . import values, wire
from .conftest import Target
from .plans import RoutePlan, messages, path_params
from .scan import record_5xx

# Answers a stock MLflow server gives as text that ours copies (MLflow's basic-auth app's create_user, and its
# sign-up form's POST, which answers HTML as a browser form's target does).
TEXT_ANSWERS = {("POST", "/api/2.0/mlflow/users/create"), ("POST", "/api/2.0/mlflow/users/create-ui")}
GATEWAY_RUNTIME = "/gateway/"
# Methods whose accepted requests change nothing stored (the routes' GETs only read; see ensure_seeds).
READ_METHODS = ("GET", "HEAD", "OPTIONS")


@dataclass
class Fuzzed:
    method: str
    path: str
    query: str = ""
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Fuzzed({self.describe()!r})"

    def describe(self) -> str:
        body = (self.body or b"")[:600]
        return f"{self.method} {self.path[:300]}{'?' + self.query[:300] if self.query else ''} body={body!r}"


def path_of(plan: RoutePlan, params: dict[str, str]) -> str:
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
    fuzzed = Fuzzed(plan.route.method, path_of(plan, params), headers=dict(target.headers))
    message = draw(messages(plan, seeds))
    if plan.in_query:
        fuzzed.query = wire.query_string(_query_pairs(draw, message))
        return fuzzed
    fuzzed.headers["content-type"] = "application/json"
    if shape == 1:
        # A body that is not a JSON object: another JSON value, nesting 50,000 deep, broken JSON.
        whole = draw(st.one_of(values.bad_values(), values.deep(), st.sampled_from(("{", "[1,", '{"a":}', "\x00", "\ud800"))))
        fuzzed.body = whole.encode("utf-8", "surrogatepass") if isinstance(whole, str) else wire.body_bytes(whole)
    elif shape == 2 and draw(st.booleans()):
        # A form body on a JSON route (what an HTML form posts), with the form's content type or a JSON one.
        fuzzed.body = wire.query_string(_query_pairs(draw, message)).encode("ascii")
        fuzzed.headers["content-type"] = draw(st.sampled_from(("application/x-www-form-urlencoded", "application/json")))
    elif shape == 2:
        fuzzed.body = wire.body_bytes(message)
        fuzzed.headers["content-type"] = draw(
            st.sampled_from(("text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=latin-1"))
        )
    elif shape == 3:
        # The fields as query parameters of a body route (a client that sends them on the URL).
        fuzzed.query = wire.query_string(_query_pairs(draw, message))
        fuzzed.body = b"{}"
    else:
        fuzzed.body = wire.body_bytes(message)
    return fuzzed


def send(target: Target, fuzzed: Fuzzed) -> requests.Response:
    url = target.url + fuzzed.path + ("?" + fuzzed.query if fuzzed.query else "")
    response = requests.request(fuzzed.method, url, data=fuzzed.body, headers=fuzzed.headers, timeout=120, allow_redirects=False)
    if response.status_code < 400:
        target.unsettled = True
        if fuzzed.method not in READ_METHODS:
            target.seeds_intact = False
    return response


def writes_objects(feature: str) -> bool:
    """Whether a function may change the bucket (its IAM declaration): only then is its listing compared."""
    access = access_for(feature)
    return any(action in access.objects for action in ("s3:PutObject", "s3:DeleteObject"))


def checked_send(target: Target, plan: RoutePlan, fuzzed: Fuzzed) -> requests.Response:
    """Send ``fuzzed`` and check its answer: no 5xx; every 4xx in MLflow's JSON error shape and without any
    change to the table (its stream) or the bucket."""
    target.settle()
    objects = target.snapshot.objects() if writes_objects(plan.route.feature) else None
    response = send(target, fuzzed)
    if response.status_code >= 500 and record_5xx(f"{plan.id}\t{_where(target, fuzzed, response)}"):
        return response  # counted, not failed (FUZZ_5XX_LOG: a measuring run goes on past the first)
    if _check_answer(plan, fuzzed, response):
        _check_unchanged(target, _where(target, fuzzed, response), objects)
    return response


def checked_sends(target: Target, plan: RoutePlan, fuzzeds: list[Fuzzed]) -> list[requests.Response]:
    """``checked_send`` for requests none of which may change anything (a path's refused methods): each answer
    checked as one, the table and bucket checked once after all of them (the check reads the whole stream)."""
    target.settle()
    objects = target.snapshot.objects() if writes_objects(plan.route.feature) else None
    responses = []
    for fuzzed in fuzzeds:
        response = send(target, fuzzed)
        _check_answer(plan, fuzzed, response)
        responses.append(response)
    _check_unchanged(target, "; ".join(_where(target, f, r) for f, r in zip(fuzzeds, responses, strict=True)), objects)
    return responses


def _where(target: Target, fuzzed: Fuzzed, response: requests.Response) -> str:
    return f"{target.mode}: {fuzzed.describe()} -> {response.status_code} {response.text[:400]!r}"


def _check_answer(plan: RoutePlan, fuzzed: Fuzzed, response: requests.Response) -> bool:
    """No 5xx, and a 4xx in MLflow's JSON error shape (the gateway's and jobs' FastAPI shape on theirs). True for
    a refused request."""
    where = f"{fuzzed.describe()} -> {response.status_code} {response.text[:400]!r}"
    assert response.status_code < 500, where
    if response.status_code < 400:
        return False
    if (fuzzed.method, fuzzed.path) not in TEXT_ANSWERS and fuzzed.method != "HEAD":
        try:
            body = response.json()
        except ValueError:
            raise AssertionError(f"not JSON: {where}") from None
        if fuzzed.path.startswith(GATEWAY_RUNTIME) and isinstance(body, dict) and "detail" in body:
            # MLflow's gateway (FastAPI) answers {"detail": ...}: a text, or an MlflowException's code and message.
            assert body["detail"], where
        elif plan.route.path.startswith(routes.JOBS) and isinstance(body, dict) and "detail" in body:
            # MLflow serves its job routes with FastAPI: errors are {"detail": message or pydantic's list}.
            assert isinstance(body["detail"], str | list) and body["detail"], where
        else:
            assert isinstance(body, dict) and isinstance(body.get("error_code"), str) and isinstance(body.get("message"), str), where
            assert body["error_code"] and body["message"], where
    return True


def _check_unchanged(target: Target, where: str, objects: Any) -> None:
    changes = target.snapshot.changes()
    assert not changes, f"a refused request changed the table: {where}\n" + "\n".join(
        f"{r['eventName']} {str(r['dynamodb'].get('NewImage') or r['dynamodb'].get('OldImage'))[:400]}" for r in changes[:5]
    )
    if objects is not None:
        assert target.snapshot.objects() == objects, f"a refused request changed the bucket: {where}"
