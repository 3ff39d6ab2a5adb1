"""The same raw request to our local runtime and to MLflow's own server (``tests.mlflow_reference``, over HTTP).

``HttpTwin`` is the runs tests' ``Twin`` (placeholders such as ``{exp}`` filled per side, answers compared
after normalizing side-specific ids) for any API prefix, against the reference *server* process rather than
an in-process Flask client. ``volatile`` names answer fields whose values differ by nature (times, server-made
ids): they are compared for presence only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.mlflow_reference import reference_server
from tests.runs.conftest import Answer, Twin

API3 = "/api/3.0/mlflow"


@dataclass
class HttpTwin(Twin):
    api: str = API3
    volatile: frozenset[str] = frozenset()
    headers: dict[str, str] = field(default_factory=dict)
    # Applied to every answer before comparing (e.g. JSON text whose key order protobuf leaves unspecified).
    rewrite: Callable[[Any], Any] | None = None
    # Lists under these keys are compared as sets: ordered by server-made ids, which differ per side.
    unordered: frozenset[str] = frozenset({"schema_ids"})

    @classmethod
    def start(cls, ours_url: str, api: str = API3, volatile: frozenset[str] = frozenset()) -> HttpTwin:
        return cls(ours_url, reference_server(), api=api, volatile=volatile)

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> tuple[Answer, Answer]:
        answers = []
        for base, values in ((self.ours_url, self.ours_values), (self.reference.url, self.reference_values)):
            response = self.session.request(
                method,
                f"{base}{self.api}/{self._fill(path, values)}",
                json=self._fill(body, values),
                params=self._fill(query, values),
                headers=self.headers,
                timeout=60,
            )
            try:
                parsed = response.json() if response.content else {}
            except ValueError:
                parsed = {"_text": response.text}
            answers.append(Answer(response.status_code, parsed))
        return answers[0], answers[1]

    def same(  # type: ignore[override]
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        ordered: bool = False,
        bind: tuple[str, str] | None = None,
    ) -> tuple[Answer, Answer]:
        """Call both and assert they agree; ``bind=(name, "a.b.c")`` first names the value at that path of
        both successful answers (a server-made id), so the comparison sees the same placeholder."""
        ours, reference = self.call(method, path, body, query)
        if bind and ours.status == reference.status == 200:
            name, dotted = bind
            self.bind(name, _at(ours.body, dotted), _at(reference.body, dotted))
        self.check(ours, reference, (method, path, body, query), ordered)
        return ours, reference

    def normalize(self, body: Any, side: str, ordered: bool = False) -> Any:
        body = self.rewrite(body) if self.rewrite else body
        return self._sorted_sets(super().normalize(self._blank(body), side, ordered))

    def _sorted_sets(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (sorted(v, key=str) if k in self.unordered and isinstance(v, list) else self._sorted_sets(v)) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._sorted_sets(v) for v in value]
        return value

    def _blank(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("<set>" if k in self.volatile and v not in (None, "") else self._blank(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._blank(v) for v in value]
        return value


def _at(body: dict[str, Any], dotted: str) -> str:
    value: Any = body
    for part in dotted.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return str(value)
