"""The one page response: MLflow's server leaves out an empty page's rows and a last page's token."""

from __future__ import annotations

from serverless_mlflow.pages import page_response


def test_rows_and_token_when_both_are_there() -> None:
    assert page_response("runs", [{"a": 1}], "tok") == {"runs": [{"a": 1}], "next_page_token": "tok"}


def test_the_last_page_has_no_token() -> None:
    assert page_response("runs", [{"a": 1}], None) == {"runs": [{"a": 1}]}
    assert page_response("runs", [{"a": 1}], "") == {"runs": [{"a": 1}]}


def test_an_empty_page_is_an_empty_object() -> None:
    assert page_response("experiments", [], None) == {}
    assert page_response("experiments", [], "tok") == {"next_page_token": "tok"}
