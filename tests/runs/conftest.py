"""A reference MLflow server for the runs tests: MLflow's own Flask handlers over SqlAlchemyStore (sqlite).

``twin`` sends the same raw request to our local runtime and to the reference and returns both answers,
so a test can assert that status codes, error codes, messages and bodies agree.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.sqlite_template import migrated_sqlite

API = "/api/2.0/mlflow"


@dataclass
class Answer:
    status: int
    body: dict[str, Any]


@dataclass
class Twin:
    """Our server and the reference, with per-side values for placeholders like ``{run1}``."""

    ours_url: str
    reference: Any  # flask test client
    ours_values: dict[str, str] = field(default_factory=dict)
    reference_values: dict[str, str] = field(default_factory=dict)
    session: requests.Session = field(default_factory=requests.Session)

    def _fill(self, value: Any, values: dict[str, str]) -> Any:
        if isinstance(value, str):
            for name, actual in values.items():
                value = value.replace("{" + name + "}", actual)
            return value
        if isinstance(value, list):
            return [self._fill(v, values) for v in value]
        if isinstance(value, dict):
            return {k: self._fill(v, values) for k, v in value.items()}
        return value

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> tuple[Answer, Answer]:
        ours_body, ref_body = self._fill(body, self.ours_values), self._fill(body, self.reference_values)
        ours_query, ref_query = self._fill(query, self.ours_values), self._fill(query, self.reference_values)
        response = self.session.request(method, f"{self.ours_url}{API}/{path}", json=ours_body, params=ours_query, timeout=60)
        ours = Answer(response.status_code, response.json() if response.content else {})
        ref_response = self.reference.open(f"{API}/{path}", method=method, json=ref_body, query_string=ref_query)
        reference = Answer(ref_response.status_code, ref_response.get_json(silent=True) or {})
        return ours, reference

    def bind(self, name: str, ours: str, reference: str) -> None:
        self.ours_values[name] = ours
        self.reference_values[name] = reference

    def normalize(self, body: Any, side: str, ordered: bool = False) -> Any:
        """Side-specific ids back to placeholders, artifact roots to ROOT, unordered lists sorted
        (``ordered``: keep list order, for answers whose order is defined such as get-history)."""
        values = self.ours_values if side == "ours" else self.reference_values

        short = {actual: name for name, actual in values.items() if len(actual) < 16}
        long = sorted(((actual, name) for name, actual in values.items() if len(actual) >= 16), key=lambda kv: -len(kv[0]))

        def text(value: str) -> str:
            # Run ids (32 hex) are unique anywhere in a text; short experiment ids are only rewritten where
            # they are ids (experiment_id fields, artifact URIs, an error message's "experiment '12'" or
            # "Experiment with id=12"), never inside values such as "1". Each side numbers experiments
            # from its own counter, so the raw ids agree only while no earlier test made experiments on one side.
            for actual, name in long:
                value = value.replace(actual, "{" + name + "}")
            value = _EXPERIMENT_IN_TEXT.sub(
                lambda m: m.group(1) + ("{" + short[m.group(2)] + "}" if m.group(2) in short else m.group(2)), value
            )
            return re.sub(r"^.*/([^/]+)/(\{run\w*\}/artifacts)$", lambda m: f"ROOT/{_placeholder(m.group(1))}/{m.group(2)}", value)

        def _placeholder(segment: str) -> str:
            # The artifact-proxy rewrite above may already have made the experiment segment a placeholder.
            return segment if segment.startswith("{") else "{" + short.get(segment, segment) + "}"

        def walk(value: Any, key: str | None = None) -> Any:
            if isinstance(value, str):
                return "{" + short[value] + "}" if key == "experiment_id" and value in short else text(value)
            if isinstance(value, list):
                return [walk(v) for v in value]
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items()}
            return value

        parsed = walk(body)
        return parsed if ordered else _sorted(parsed)

    def same(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        ordered: bool = False,
        bind_run: str | None = None,
    ) -> tuple[Answer, Answer]:
        """Call both and assert they agree (errors: status, error_code, message; 200: normalized body).

        ``bind_run``: name the run a successful create returns, before comparing the answers."""
        ours, reference = self.call(method, path, body, query)
        if bind_run and ours.status == reference.status == 200:
            self.bind(bind_run, ours.body["run"]["info"]["run_id"], reference.body["run"]["info"]["run_id"])
        self.check(ours, reference, (method, path, body, query), ordered)
        return ours, reference

    def refused(self, method: str, path: str, body: Any, field: str, reference_status: int = 400) -> None:
        """Input MLflow's server mishandles (its proto parser drops the message or wraps an out-of-range int):
        ours must be a clear INVALID_PARAMETER_VALUE naming ``field`` and change nothing; MLflow's answer is
        pinned too (``reference_status``), so a change on its side shows up here. See docs/compatibility.md."""
        ours, reference = self.call(method, path, body)
        assert (ours.status, ours.body.get("error_code")) == (400, "INVALID_PARAMETER_VALUE"), (path, body, ours)
        assert f"parameter '{field}'" in ours.body["message"], ours
        assert reference.status == reference_status, (path, body, reference)

    def check(self, ours: Answer, reference: Answer, context: Any, ordered: bool = False) -> None:
        assert ours.status == reference.status, (context, ours, reference)
        if reference.status != 200:
            assert ours.body.get("error_code") == reference.body.get("error_code"), (context, ours, reference)
            assert self.normalize(ours.body.get("message"), "ours") == self.normalize(reference.body.get("message"), "reference"), (
                context,
                ours,
                reference,
            )
        else:
            # Tokens differ by design (ours are keyset positions, MLflow's offsets): compare presence.
            ours_body, reference_body = dict(ours.body), dict(reference.body)
            for body in (ours_body, reference_body):
                if "next_page_token" in body:
                    body["next_page_token"] = "TOKEN"
            assert self.normalize(ours_body, "ours", ordered) == self.normalize(reference_body, "reference", ordered), context


# An experiment id inside a message: "experiment '12'", "experiment 12", "Experiment with id=12", "experiment_id=12".
# An experiment id where text names it as one: "experiment '12'", "Experiment with id=12", or the first segment of
# an artifact URI under the artifact proxy ("mlflow-artifacts:/12/traces/...", a trace's artifactLocation tag).
_EXPERIMENT_IN_TEXT = re.compile(r"(?i)(\bexperiment(?:_id)?(?: with id=| id=|=| '| )?|mlflow-artifacts:/)(\d+)\b")


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _sorted(v) for k, v in value.items()}
        for name in ("metrics", "params", "tags", "dataset_inputs", "model_inputs", "model_outputs"):
            if isinstance(out.get(name), list):
                out[name] = sorted(out[name], key=lambda e: json.dumps(e, sort_keys=True))
        return out
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


_REFERENCE: dict[str, Any] = {}


def reference_client() -> Any:
    """MLflow's Flask app over a private sqlite store, created once per test session."""
    if "client" not in _REFERENCE:
        root = tempfile.mkdtemp(prefix="mlflow-ref-")
        os.environ["_MLFLOW_SERVER_FILE_STORE"] = migrated_sqlite(f"{root}/db.sqlite")
        os.environ["_MLFLOW_SERVER_ARTIFACT_ROOT"] = f"{root}/artifacts"
        from mlflow.server import app, handlers

        handlers._tracking_store = None
        _REFERENCE["client"] = app.test_client()
    return _REFERENCE["client"]


@pytest.fixture
def twin(server: str) -> Iterator[Twin]:
    yield Twin(server, reference_client())
