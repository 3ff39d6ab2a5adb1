"""The bad input issue 22 lists, each sent to our runtime and to MLflow's own server (its Flask app on sqlite):
ids past DynamoDB's key limits, lone surrogates, numbers past int64/float64, non-string tags, odd page tokens,
JSON nested 50,000 deep, repeated query keys, a 5,000-character static file path, methods a path does not take.

Each answered 500 here before. Now: where MLflow answers with JSON, the same status and error code; where it
answers an HTML page (404, 405), the same status in MLflow's JSON error shape; where it fails with a 500, a 400
INVALID_PARAMETER_VALUE."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
LONG = "x" * 3000  # past DynamoDB's 2,048-byte partition key and 1,024-byte sort key


def _metric(setup: Setup, fields: str) -> str:
    """A log-metric body with JSON text Python cannot write (``1e309``, ``-Infinity``)."""
    return '{"run_id":"' + setup.run_id + '",' + fields + "}"


def _token(payload: Any) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode()


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    query: str | dict[str, Any] | None = None
    body: str | dict[str, Any] | None = None  # text is sent as is (JSON Python cannot write)
    # MLflow's parse leaves a value protobuf cannot read unset and answers 200; every route here refuses it (a type
    # error, 400), as test_values_protobuf_cannot_read_are_type_errors below says.
    refused: bool = False


@dataclass
class Setup:
    experiment_id: str
    run_id: str
    suffix: str
    dataset_id: str = "d-0"


CaseMaker = Callable[[Setup], Case]


def _cases() -> list[CaseMaker]:
    cases: list[CaseMaker] = []

    def case(f: CaseMaker) -> None:
        cases.append(f)

    # --- ids past DynamoDB's key limits, wherever an id becomes a key
    for op, path, field in (
        ("GET", "gateway/secrets/get", "secret_id"),
        ("POST", "gateway/secrets/update", "secret_id"),
        ("DELETE", "gateway/secrets/delete", "secret_id"),
        ("GET", "gateway/endpoints/get", "endpoint_id"),
        ("POST", "gateway/endpoints/update", "endpoint_id"),
        ("DELETE", "gateway/endpoints/delete", "endpoint_id"),
        ("POST", "gateway/endpoints/set-tag", "endpoint_id"),
        ("GET", "gateway/endpoints/bindings/list", "endpoint_id"),
        ("GET", "gateway/model-definitions/get", "model_definition_id"),
        ("POST", "gateway/model-definitions/update", "model_definition_id"),
        ("DELETE", "gateway/model-definitions/delete", "model_definition_id"),
    ):
        extra = (
            {"key": "k", "value": "v"}
            if path.endswith("set-tag")
            else ({"secret_value": {"api_key": "k"}} if "secrets/update" in path else {})
        )
        fields = {field: LONG, **extra}
        case(
            lambda s, op=op, path=path, fields=fields: Case(
                f"long {path}", op, f"{M3}/{path}", fields if op == "GET" else None, None if op == "GET" else fields
            )
        )
    case(lambda s: Case("long secret in a definition", "POST", f"{M3}/gateway/model-definitions/create", body={"name": f"d{s.suffix}", "secret_id": LONG, "provider": "openai", "model_name": "gpt-4o"}))  # fmt: skip
    case(lambda s: Case("long endpoint to attach to", "POST", f"{M3}/gateway/endpoints/models/attach", body={"endpoint_id": LONG, "model_config": {"model_definition_id": LONG, "linkage_type": "PRIMARY"}}))  # fmt: skip
    case(lambda s: Case("long binding endpoint", "POST", f"{M3}/gateway/endpoints/bindings/create", body={"endpoint_id": LONG, "resource_type": "scorer", "resource_id": "r"}))  # fmt: skip
    case(lambda s: Case("long traces batchGet", "GET", f"{M3}/traces/batchGet", {"trace_ids": LONG}))
    case(lambda s: Case("long traces batchGetInfos", "POST", f"{M3}/traces/batchGetInfos", body={"trace_ids": [LONG]}))
    case(lambda s: Case("long trace info", "GET", f"{M3}/traces/{LONG}"))
    case(lambda s: Case("long trace linked to a run", "POST", f"{M2}/traces/link-to-run", body={"trace_ids": [LONG], "run_id": s.run_id}))
    case(
        lambda s: Case(
            "long model output of a run", "POST", f"{M2}/runs/outputs", body={"run_id": s.run_id, "models": [{"model_id": LONG, "step": 0}]}
        )
    )
    case(
        lambda s: Case(
            "long model input of a run", "POST", f"{M2}/runs/log-inputs", body={"run_id": s.run_id, "models": [{"model_id": LONG}]}
        )
    )
    case(lambda s: Case("long logged model", "GET", f"{M2}/logged-models/{LONG}"))
    case(lambda s: Case("long run", "GET", f"{M2}/runs/get", {"run_id": LONG}))
    case(lambda s: Case("long registered model", "GET", f"{M2}/registered-models/get", {"name": LONG}))
    case(lambda s: Case("long dataset", "GET", f"{M3}/datasets/{LONG}"))
    # --- lone surrogates in a name, key or description
    case(lambda s: Case("surrogate in an experiment name", "POST", f"{M2}/experiments/create", body={"name": f"a\ud800b{s.suffix}"}))
    case(lambda s: Case("surrogate in an experiment tag key", "POST", f"{M2}/experiments/create", body={"name": f"t{s.suffix}", "tags": [{"key": "\ud800", "value": "v"}]}))  # fmt: skip
    case(
        lambda s: Case(
            "surrogate in a run tag key", "POST", f"{M2}/runs/set-tag", body={"run_id": s.run_id, "key": "k\udc00", "value": "v"}
        )
    )
    case(lambda s: Case("surrogate as a model name", "POST", f"{M2}/registered-models/create", body={"name": "\ud800"}))
    case(lambda s: Case("surrogate in a model description", "POST", f"{M2}/registered-models/create", body={"name": f"m{s.suffix}", "description": "\udfff"}))  # fmt: skip
    case(lambda s: Case("surrogate in a lookup", "GET", f"{M2}/experiments/get-by-name", "experiment_name=%ED%A0%80"))
    # --- numbers past int64 / float64
    case(lambda s: Case("1e309 metric", "POST", f"{M2}/runs/log-metric", body=_metric(s, '"key":"a","value":1e309,"timestamp":1')))
    case(lambda s: Case("-Infinity metric", "POST", f"{M2}/runs/log-metric", body=_metric(s, '"key":"b","value":-Infinity,"timestamp":1')))
    case(lambda s: Case("1e309 step", "POST", f"{M2}/runs/log-metric", body=_metric(s, '"key":"c","value":1,"timestamp":1,"step":1e309')))
    case(lambda s: Case("1e309 max_results", "POST", f"{M2}/experiments/search", body='{"max_results":1e309}'))
    case(lambda s: Case("int64 max as max_results", "POST", f"{M2}/experiments/search", body={"max_results": 9223372036854775807}))
    case(lambda s: Case("int64 max for runs", "POST", f"{M2}/runs/search", body={"experiment_ids": [s.experiment_id], "max_results": 9223372036854775807}))  # fmt: skip
    case(lambda s: Case("1.5e3 query max_results", "GET", f"{M2}/registered-models/search", {"max_results": "1.5e3"}))
    case(lambda s: Case("1.5e3 query max_results (experiments)", "GET", f"{M2}/experiments/search", {"max_results": "1.5e3"}))
    case(lambda s: Case("1.5e3 query max_results (versions)", "GET", f"{M2}/model-versions/search", {"max_results": "1.5e3"}))
    case(lambda s: Case("huge query max_results", "GET", f"{M2}/registered-models/search", {"max_results": "9" * 30}))
    # --- non-string tag keys and values, numbers past DynamoDB's range
    case(lambda s: Case("int tag key on an experiment", "POST", f"{M2}/experiments/create", body={"name": f"k{s.suffix}", "tags": [{"key": 5, "value": "v"}]}))  # fmt: skip
    case(lambda s: Case("dict tag value", "POST", f"{M2}/experiments/set-experiment-tag", body={"experiment_id": s.experiment_id, "key": "k", "value": {"a": 1}}))  # fmt: skip
    # --- page tokens that decode to odd types or huge numbers
    for token in (
        _token([1]),
        _token("x"),
        _token({"offset": "a"}),
        _token({"offset": 1e300}),
        _token({"offset": 10**30}),
        "!!!",
        _token(None),
    ):
        case(lambda s, token=token: Case(f"token {token} for runs", "POST", f"{M2}/runs/search", body={"experiment_ids": [s.experiment_id], "page_token": token}))  # fmt: skip
        case(lambda s, token=token: Case(f"token {token} for models", "GET", f"{M2}/registered-models/search", {"page_token": token}))
        case(lambda s, token=token: Case(f"token {token} for experiments", "POST", f"{M2}/experiments/search", body={"page_token": token, "max_results": 5}))  # fmt: skip
        case(lambda s, token=token: Case(f"token {token} for versions", "GET", f"{M2}/model-versions/search", {"page_token": token}))
    case(lambda s: Case("non-ASCII token for metric history", "GET", f"{M2}/metrics/get-history", f"run_id={s.run_id}&metric_key=m&page_token=%C2%95%C3%AE"))  # fmt: skip
    locations = lambda s: [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": s.experiment_id}}]  # noqa: E731
    for token in (_token({"ts": 10**30, "id": "x"}), _token({"ts": "x", "id": 1}), _token({"offset": "a"})):
        case(lambda s, token=token: Case(f"token {token} for traces", "POST", f"{M3}/traces/search", body={"locations": locations(s), "page_token": token}))  # fmt: skip
    for bound in ("> 99999999999999999999", "< -99999999999999999999", "> 1e400"):
        case(lambda s, bound=bound: Case(f"trace time {bound}", "POST", f"{M3}/traces/search", body={"locations": locations(s), "filter": f"trace.timestamp_ms {bound}"}))  # fmt: skip
    case(lambda s: Case("int64 overflow as records max_results", "GET", f"{M3}/datasets/{s.dataset_id}/records", {"max_results": "9223372036854775808"}, refused=True))  # fmt: skip
    # --- nesting, repeated keys, odd paths, methods
    case(lambda s: Case("a body nested 50,000 deep", "POST", f"{M2}/experiments/create", body="[" * 50000 + "]" * 50000))
    case(
        lambda s: Case("a field nested 50,000 deep", "POST", f"{M2}/experiments/create", body='{"name":' + "[" * 50000 + "]" * 50000 + "}")
    )
    # JSON carried inside a field or a token, nested past Python's recursion limit (the long fuzz run found the
    # metric-history token)
    deep = "[" * 5000 + "]" * 5000
    case(lambda s: Case("a history token nested 5,000 deep", "GET", f"{M2}/metrics/get-history", {"run_id": s.run_id, "metric_key": "m", "page_token": base64.b64encode(deep.encode()).decode()}))  # fmt: skip
    case(lambda s: Case("a runs token nested 5,000 deep", "POST", f"{M2}/runs/search", body={"experiment_ids": [s.experiment_id], "page_token": base64.b64encode(deep.encode()).decode()}))  # fmt: skip
    case(lambda s: Case("a traces token nested 5,000 deep", "POST", f"{M3}/traces/search", body={"locations": locations(s), "page_token": base64.b64encode(deep.encode()).decode()}))  # fmt: skip
    case(lambda s: Case("a scorer nested 5,000 deep", "POST", f"{M3}/scorers/register", body={"experiment_id": s.experiment_id, "name": "deep", "serialized_scorer": deep}))  # fmt: skip
    case(lambda s: Case("records nested 5,000 deep", "POST", f"{M3}/datasets/{s.dataset_id}/records", body={"records": deep}))
    case(lambda s: Case("a model_json nested 5,000 deep", "POST", f"{M2}/runs/log-model", body={"run_id": s.run_id, "model_json": deep}))
    case(lambda s: Case("repeated order_by", "GET", f"{M2}/registered-models/search", "order_by=name+ASC&order_by=name+ASC"))
    case(lambda s: Case("repeated order_by (versions)", "GET", f"{M2}/model-versions/search", "order_by=name+ASC&order_by=name+ASC"))
    case(lambda s: Case("repeated max_results", "GET", f"{M2}/experiments/search", "max_results=1&max_results=x"))
    case(lambda s: Case("a 5,000-character static file", "GET", "/static-files/" + "a" * 5000))
    case(lambda s: Case("GET on a POST route", "GET", f"{M2}/experiments/create"))
    case(lambda s: Case("PUT on a POST route", "PUT", f"{M2}/experiments/create"))
    case(lambda s: Case("unknown method", "BREW", f"{M2}/runs/get"))
    return cases


CASES = _cases()


def _setup(url: str) -> Setup:
    suffix = f"{time.time_ns()}"
    experiment_id = requests.post(f"{url}{M2}/experiments/create", json={"name": f"hostile-{suffix}"}, timeout=120).json()["experiment_id"]
    run = requests.post(f"{url}{M2}/runs/create", json={"experiment_id": experiment_id}, timeout=120).json()["run"]["info"]
    body = {"name": f"hostile-{suffix}", "experiment_ids": [experiment_id]}
    dataset = requests.post(f"{url}{M3}/datasets/create", json=body, timeout=120).json()["dataset"]["dataset_id"]
    return Setup(experiment_id, run["run_id"], suffix, dataset)


def _send(url: str, case: Case) -> tuple[int, str | None]:
    """(status, error code); None for an answer that is not MLflow's JSON error (an HTML page, a success)."""
    kwargs: dict[str, Any] = {"timeout": 120}
    target = url + case.path
    if isinstance(case.query, str):
        target += "?" + case.query
    elif case.query:
        kwargs["params"] = case.query
    if case.body is not None:
        text = case.body if isinstance(case.body, str) else json.dumps(case.body)
        kwargs["data"] = text.encode("utf-8", "surrogatepass")
        kwargs["headers"] = {"content-type": "application/json"}
    response = requests.request(case.method, target, **kwargs)
    try:
        body = response.json()
    except ValueError:
        return response.status_code, None
    return response.status_code, body.get("error_code") if isinstance(body, dict) else None


@pytest.fixture(scope="module")
def setups(server: str) -> tuple[Setup, Setup]:
    return _setup(server), _setup(reference_server().url)


@pytest.mark.parametrize("make", CASES, ids=[make(Setup("0", "r", "")).name for make in CASES])
def test_bad_input_gets_mlflow_s_answer_never_a_500(server: str, setups: tuple[Setup, Setup], make: CaseMaker) -> None:
    ours_case, theirs_case = make(setups[0]), make(setups[1])
    ours, theirs = _send(server, ours_case), _send(reference_server().url, theirs_case)
    assert ours[0] < 500, (ours, theirs)
    if ours_case.refused:
        assert theirs[0] == 200 and ours == (400, "INVALID_PARAMETER_VALUE"), (ours, theirs)
    elif theirs[0] >= 500:
        assert ours == (400, "INVALID_PARAMETER_VALUE"), f"MLflow fails ({theirs}); we answer {ours}"
    elif theirs[1] is None and theirs[0] >= 400:
        assert ours[0] == theirs[0] and ours[1] is not None, f"MLflow answers an HTML {theirs[0]}; we answer {ours}"
    else:
        assert ours == theirs


@pytest.mark.parametrize(
    ("path", "body", "field", "value"),
    [
        ("logged-models", {"tags": [{"key": 1, "value": 2}]}, "tags[0].key", "1"),
        ("experiments/create", {"name": "n", "tags": [{"key": "k", "value": 1e300}]}, "tags[0].value", "1e+300"),
        ("runs/log-metric", {"key": "k", "value": 1, "timestamp": 10**40}, "timestamp", str(10**40)),
        ("runs/create", {"start_time": 10**40}, "start_time", str(10**40)),
    ],
)
def test_values_protobuf_cannot_read_are_type_errors(
    server: str, setups: tuple[Setup, Setup], path: str, body: dict[str, Any], field: str, value: str
) -> None:
    """Where protobuf refuses a value, MLflow's parse stops there and its handler goes on with what was read
    (a tag with an empty key or value, a metric at timestamp 0, answered 200): here it is the type error
    MLflow answers for such a value when its handler checks the field."""
    setup = setups[0]
    ids = {"experiment_id": setup.experiment_id} if path != "runs/log-metric" else {"run_id": setup.run_id}
    if path == "experiments/create":
        ids = {}
        body = {**body, "name": f"typed-{setup.suffix}"}
    response = requests.post(f"{server}{M2}/{path}", json={**ids, **body}, timeout=30)
    kind = type(json.loads(value)).__name__
    assert response.status_code == 400 and response.json() == {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": f"Invalid value {value} for parameter '{field}' supplied:  Hint: Value was of type '{kind}'. See the API docs for more information about request parameters.",
        "sqlstate": "KAM00",
        "error_class": "INVALID_PARAMETER_VALUE",
    }
