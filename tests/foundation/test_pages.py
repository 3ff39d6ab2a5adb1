"""The one page response (MLflow's server leaves out an empty page's rows and a last page's token) and the
one base64 JSON token reader with MLflow's messages."""

from __future__ import annotations

import base64

import pytest

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.request.pages import page_response, token_json


def test_rows_and_token_when_both_are_there() -> None:
    assert page_response("runs", [{"a": 1}], "tok") == {"runs": [{"a": 1}], "next_page_token": "tok"}


def test_the_last_page_has_no_token() -> None:
    assert page_response("runs", [{"a": 1}], None) == {"runs": [{"a": 1}]}
    assert page_response("runs", [{"a": 1}], "") == {"runs": [{"a": 1}]}


def test_an_empty_page_is_an_empty_object() -> None:
    assert page_response("experiments", [], None) == {}
    assert page_response("experiments", [], "tok") == {"next_page_token": "tok"}


def test_a_token_is_base64_json() -> None:
    assert token_json(base64.b64encode(b'{"after": "x"}').decode()) == {"after": "x"}


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("not base64!", "Invalid page token, could not base64-decode"),
        (base64.b64encode(b"{oops").decode(), "Invalid page token, decoded value=b'{oops'"),
    ],
)
def test_mlflow_messages_for_a_token_that_does_not_decode(token: str, message: str) -> None:
    with pytest.raises(MlflowError) as raised:
        token_json(token)
    assert (raised.value.error_code, raised.value.message) == ("INVALID_PARAMETER_VALUE", message)


@pytest.mark.parametrize("depth", [150, 900, 50_000])
def test_a_token_nested_past_the_cap_is_refused_not_a_crash(depth: int) -> None:
    token = base64.b64encode(("[" * depth + "]" * depth).encode()).decode()
    with pytest.raises(MlflowError) as raised:
        token_json(token)
    assert raised.value.error_code == "INVALID_PARAMETER_VALUE"
