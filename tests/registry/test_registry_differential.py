"""Differential test: search_registered_models / search_model_versions against MLflow's SqlAlchemyStore.

The same registry is built in both stores (an empty runtime from ``fresh_server`` and a sqlite
SqlAlchemyStore); every search (filters, orderings, page sizes) must return the same entities in
the same order, page by page. Only fields the SQL store cannot know are ignored (our servers' own
timestamps are compared through the order they induce, not their values).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

MODELS = ["alpha", "Alpha2", "beta_model", "beta%x", "gamma", "delta-prod", "prompt-like"]

RM_FILTERS = [
    None,
    "name = 'alpha'",
    "name != 'alpha'",
    "name LIKE 'beta%'",
    "name ILIKE 'alpha%'",
    "name LIKE '%a%'",
    "name IN ('gamma', 'alpha')",
    "tags.team = 'red'",
    "tags.team != 'red'",
    "tags.team LIKE 'r%' and name LIKE '%a%'",
    "tag.`env` ILIKE '%PROD%'",
    "tags.`mlflow.prompt.is_prompt` = 'true'",
    "tags.`mlflow.prompt.is_prompt` != 'true'",
]
RM_ORDERS: list[list[str] | None] = [None, ["name DESC"], ["last_updated_timestamp DESC"], ["timestamp ASC", "name DESC"]]

MV_FILTERS = [
    None,
    "name = 'alpha'",
    "name IN ('alpha', 'gamma')",
    "name LIKE 'beta%'",
    "run_id = 'run-a'",
    "run_id IN ('run-a', 'run-b')",
    "source_path = 's3://bucket/alpha/2'",
    "source_path LIKE 's3://bucket/beta%'",
    "version_number >= 2",
    "version_number = 1 and name ILIKE 'ALPHA%'",
    "tags.quality = 'good'",
    "tags.quality != 'good'",
    "tags.`mlflow.prompt.is_prompt` = 'true'",
]
MV_ORDERS: list[list[str] | None] = [
    None,
    ["name ASC", "version_number ASC"],
    ["version_number DESC"],
    ["creation_timestamp DESC"],
    ["last_updated_timestamp ASC", "name DESC"],
]


def _build(ops: Any) -> None:
    """The same sequence of registry writes, against either store (ops: an object with the store API)."""
    for i, name in enumerate(MODELS):
        tags = {"team": "red" if i % 2 == 0 else "blue", "env": "prod" if "prod" in name else "dev"}
        if name == "prompt-like":
            tags["mlflow.prompt.is_prompt"] = "true"
        ops.create_model(name, tags)
        for v in range(1, (i % 3) + 2):
            run_id = "run-a" if v == 1 else ("run-b" if i % 2 else "run-c")
            version_tags = {"quality": "good" if (i + v) % 2 else "bad"}
            if name == "prompt-like":
                version_tags["mlflow.prompt.is_prompt"] = "true"
            # Prompt versions must use MLflow's placeholder source (the handler enforces it).
            source = "dummy-source" if name == "prompt-like" else f"s3://bucket/{name}/{v}"
            ops.create_version(name, source, run_id, version_tags)
    ops.transition("alpha", 1, "Production")
    ops.update_model("gamma", "touched")


class _SqlOps:
    def __init__(self, store: Any) -> None:
        from mlflow.entities.model_registry import ModelVersionTag, RegisteredModelTag

        self.store, self.mvt, self.rmt = store, ModelVersionTag, RegisteredModelTag

    def create_model(self, name: str, tags: dict[str, str]) -> None:
        time.sleep(0.003)
        self.store.create_registered_model(name, [self.rmt(k, v) for k, v in tags.items()], "")

    def create_version(self, name: str, source: str, run_id: str, tags: dict[str, str]) -> None:
        time.sleep(0.003)
        self.store.create_model_version(name, source, run_id, [self.mvt(k, v) for k, v in tags.items()], "", "")

    def transition(self, name: str, version: int, stage: str) -> None:
        time.sleep(0.003)
        self.store.transition_model_version_stage(name, version, stage, False)

    def update_model(self, name: str, description: str) -> None:
        time.sleep(0.003)
        self.store.update_registered_model(name, description)


class _HttpOps:
    def __init__(self, url: str) -> None:
        import requests

        self.url, self.session = url + "/api/2.0/mlflow", requests.Session()

    def _post(self, path: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
        time.sleep(0.003)
        response = self.session.request(method, self.url + path, json=body, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def create_model(self, name: str, tags: dict[str, str]) -> None:
        self._post("/registered-models/create", {"name": name, "tags": [{"key": k, "value": v} for k, v in tags.items()]})

    def create_version(self, name: str, source: str, run_id: str, tags: dict[str, str]) -> None:
        body = {"name": name, "source": source, "run_id": run_id, "tags": [{"key": k, "value": v} for k, v in tags.items()]}
        self._post("/model-versions/create", body)

    def transition(self, name: str, version: int, stage: str) -> None:
        self._post(
            "/model-versions/transition-stage", {"name": name, "version": str(version), "stage": stage, "archive_existing_versions": False}
        )

    def update_model(self, name: str, description: str) -> None:
        self._post("/registered-models/update", {"name": name, "description": description}, "PATCH")


def _rm_view(rm: Any) -> dict[str, Any]:
    return {
        "name": rm.name,
        "description": rm.description or "",
        "tags": dict(rm.tags),
        "aliases": {k: str(v) for k, v in rm.aliases.items()},
        "latest": sorted((str(mv.version), mv.current_stage) for mv in rm.latest_versions),
    }


def _mv_view(mv: Any) -> dict[str, Any]:
    return {
        "name": mv.name,
        "version": str(mv.version),
        "stage": mv.current_stage,
        "source": mv.source,
        "run_id": mv.run_id,
        "tags": dict(mv.tags),
        "description": mv.description or "",
        "aliases": list(mv.aliases),
    }


def _assert_same(actual: list[list[Any]], expected: list[list[Any]], view: Any, context: str) -> None:
    """Same entities, same order, same page boundaries (entity by entity for a readable diff)."""
    flat_actual = [view(m) for page in actual for m in page]
    flat_expected = [view(m) for page in expected for m in page]
    for ours, theirs in zip(flat_actual, flat_expected, strict=False):
        assert ours == theirs, context
    assert len(flat_actual) == len(flat_expected), context
    assert [len(p) for p in actual] == [len(p) for p in expected], context


def _all_pages(search: Any, page_size: int) -> list[list[Any]]:
    pages, token = [], None
    while True:
        result = search(page_size, token)
        pages.append(list(result))
        token = result.token
        if not token:
            return pages
        assert len(pages) < 100


def _cases(filters: list[Any], orders: list[Any], small_page: int, matrix: str) -> list[tuple[Any, Any, int]]:
    """``full``: every filter under every order, whole and in small pages (minutes: ``make test-long``);
    ``rotation``: every filter whole under one order and in small pages under the next, the orders in turn, so
    every filter, order and page size is still compared."""
    if matrix == "full":
        return [(f, o, size) for f in filters for o in orders for size in (1000, small_page)]
    return [(f, orders[(i + step) % len(orders)], size) for i, f in enumerate(filters) for step, size in enumerate((1000, small_page))]


@pytest.mark.parametrize("matrix", ["rotation", pytest.param("full", marks=pytest.mark.long)])
def test_registry_search_matches_sqlalchemy_store(fresh_server: str, tmp_path: Path, matrix: str) -> None:
    from mlflow.store.model_registry.rest_store import RestStore
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore
    from mlflow.utils.rest_utils import MlflowHostCreds

    sql = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/db.sqlite"))
    _build(_SqlOps(sql))
    _build(_HttpOps(fresh_server))
    # The store-level REST client sends the filter as given (MlflowClient would add a prompt filter).
    ours = RestStore(lambda: MlflowHostCreds(fresh_server))

    for flt, order, page_size in _cases(RM_FILTERS, RM_ORDERS, 2, matrix):
        expected = _all_pages(lambda n, t, f=flt, o=order: sql.search_registered_models(f, n, o, t), page_size)
        actual = _all_pages(lambda n, t, f=flt, o=order: ours.search_registered_models(f, n, o, t), page_size)
        _assert_same(actual, expected, _rm_view, f"filter={flt!r} order={order} page_size={page_size}")

    for flt, order, page_size in _cases(MV_FILTERS, MV_ORDERS, 3, matrix):
        expected = _all_pages(lambda n, t, f=flt, o=order: sql.search_model_versions(f, n, o, t), page_size)
        actual = _all_pages(lambda n, t, f=flt, o=order: ours.search_model_versions(f, n, o, t), page_size)
        _assert_same(actual, expected, _mv_view, f"filter={flt!r} order={order} page_size={page_size}")

    # The same errors for bad searches.
    for flt, order in [("name = 'a' or name = 'b'", None), ("foo = 'x'", None), (None, ["bogus DESC"]), ("version_number = 1.5", None)]:
        with pytest.raises(Exception) as sql_error:
            sql.search_model_versions(flt, 10, order, None)
        with pytest.raises(Exception) as our_error:
            ours.search_model_versions(flt, 10, order, None)
        # (MLflow formats some valid-key sets with Python's set repr, whose order varies by process.)
        assert sql_error.value.message.split(" Valid keys")[0] in str(our_error.value)
        assert our_error.value.error_code == sql_error.value.error_code
