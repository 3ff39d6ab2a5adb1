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
            ops.create_version(name, f"s3://bucket/{name}/{v}", run_id, version_tags)
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
        self._post("/model-versions/transition-stage", {"name": name, "version": str(version), "stage": stage, "archive_existing_versions": False})

    def update_model(self, name: str, description: str) -> None:
        self._post("/registered-models/update", {"name": name, "description": description}, "PATCH")


def _rm_view(rm: Any) -> dict[str, Any]:
    return {
        "name": rm.name,
        "description": rm.description or "",
        "tags": dict(rm.tags),
        "aliases": dict(rm.aliases),
        "latest": sorted((mv.version, mv.current_stage) for mv in rm.latest_versions),
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


def _all_pages(search: Any, page_size: int) -> list[list[Any]]:
    pages, token = [], None
    while True:
        result = search(page_size, token)
        pages.append(list(result))
        token = result.token
        if not token:
            return pages
        assert len(pages) < 100


def test_registry_search_matches_sqlalchemy_store(fresh_server: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore

    sql = SqlAlchemyStore(f"sqlite:///{tmp_path}/db.sqlite")
    _build(_SqlOps(sql))
    _build(_HttpOps(fresh_server))
    ours = MlflowClient(fresh_server)

    for flt in RM_FILTERS:
        for order in RM_ORDERS:
            for page_size in (1000, 2):
                expected = _all_pages(lambda n, t: sql.search_registered_models(flt, n, order, t), page_size)
                actual = _all_pages(lambda n, t: ours.search_registered_models(flt, n, order, t), page_size)
                context = f"filter={flt!r} order={order} page_size={page_size}"
                assert [[_rm_view(m) for m in p] for p in actual] == [[_rm_view(m) for m in p] for p in expected], context

    for flt in MV_FILTERS:
        for order in MV_ORDERS:
            for page_size in (1000, 3):
                expected = _all_pages(lambda n, t: sql.search_model_versions(flt, n, order, t), page_size)
                actual = _all_pages(lambda n, t: ours.search_model_versions(flt, n, order, t), page_size)
                context = f"filter={flt!r} order={order} page_size={page_size}"
                assert [[_mv_view(m) for m in p] for p in actual] == [[_mv_view(m) for m in p] for p in expected], context

    # The same errors for bad searches.
    for flt, order in [("name = 'a' or name = 'b'", None), ("foo = 'x'", None), (None, ["bogus DESC"]), ("version_number = 1.5", None)]:
        with pytest.raises(Exception) as sql_error:
            sql.search_model_versions(flt, 10, order, None)
        with pytest.raises(Exception) as our_error:
            ours.search_model_versions(flt, 10, order)
        assert sql_error.value.message in str(our_error.value)
