"""Differential test: search_registered_models / search_model_versions on MLflow's registry SqlAlchemyStore
(sqlite) vs our module on mirrored dicts (incl. the implicit prompt and Deleted_Internal rules)."""

from __future__ import annotations

import itertools
import random
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from mlflow.entities.model_registry import ModelVersionTag, RegisteredModelTag
from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as RegistryStore

from serverless_mlflow import search
from tests.search.helpers import LIKE_PATTERNS, STRINGS, assert_same, drain_mlflow, drain_ours, outcome, quoted
from tests.sqlite_template import migrated_sqlite

SEED = 77
N_MODELS = 45
N_QUERIES = 260
CLOCK = [100, 100, 200, 300, 300, 400]
PROMPT = "mlflow.prompt.is_prompt"
RUN_IDS = ["r" * 32, "a1" * 16, "B2" * 16, None]
SOURCES = ["s3://b/model", "s3://b/Model", "file:///x/al%ha", "file:///x/al_ha", "dbfs:/日本"]


@pytest.fixture(scope="module")
def world(scratch_dir: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    clock = (rng.choice(CLOCK) for _ in itertools.count())
    store = RegistryStore(migrated_sqlite(f"{scratch_dir}/registry.sqlite"))
    names = list(STRINGS) + [f"{rng.choice(STRINGS)}-{i}" for i in range(N_MODELS)]
    names = names[:N_MODELS]
    versions: list[tuple[str, int]] = []
    deleted: set[tuple[str, int]] = set()
    version_tags: dict[tuple[str, int], dict[str, str]] = {}
    with mock.patch("mlflow.store.model_registry.sqlalchemy_store.get_current_time_millis", side_effect=lambda: next(clock)):
        for i, name in enumerate(names):
            # Prompts: tag on the model and every version (as MLflow's prompt APIs do); model #7's versions
            # are partly tagged, model #11 is tagged on the model only.
            is_prompt = i % 9 == 4 or i in (7, 11)
            tags = [RegisteredModelTag(k, rng.choice(STRINGS)) for k in ("t1", "t2") if rng.random() < 0.5]
            if is_prompt and i != 7:
                tags.append(RegisteredModelTag(PROMPT, "true"))
            store.create_registered_model(name, tags=tags)
            for v in range(1, rng.choice([0, 1, 2, 3, 4]) + 1):
                vtags = {k: rng.choice(STRINGS) for k in ("t1",) if rng.random() < 0.5}
                if is_prompt and i != 11 and (i != 7 or v == 2):
                    vtags[PROMPT] = "true"
                store.create_model_version(
                    name, rng.choice(SOURCES), rng.choice(RUN_IDS), [ModelVersionTag(k, x) for k, x in vtags.items()]
                )
                versions.append((name, v))
                version_tags[(name, v)] = vtags
                if rng.random() < 0.2:
                    store.update_model_version(name, str(v), "touched")
                if rng.random() < 0.12:
                    store.delete_model_version(name, str(v))
                    deleted.add((name, v))
            if rng.random() < 0.25:
                store.update_registered_model(name, "touched")
    models = []
    for name in names:
        rm = store.get_registered_model(name)
        models.append(
            {
                "name": rm.name,
                "creation_timestamp": rm.creation_timestamp,
                "last_updated_timestamp": rm.last_updated_timestamp,
                "description": rm.description,
                "tags": dict(rm._tags),
            }
        )
    prompt_models = {n for (n, v), t in version_tags.items() if t.get(PROMPT) == "true"}
    mvs = []
    for name, v in versions:
        entry: dict[str, Any] = {"name": name, "version": v, "tags": version_tags[(name, v)], "model_is_prompt": name in prompt_models}
        if (name, v) in deleted:
            entry["current_stage"] = search.STAGE_DELETED_INTERNAL
        else:
            mv = store.get_model_version(name, str(v))
            entry.update(
                creation_timestamp=mv.creation_timestamp,
                last_updated_timestamp=mv.last_updated_timestamp,
                current_stage=mv.current_stage,
                source=mv.source,
                run_id=mv.run_id,
                status=mv.status,
            )
            assert dict(mv.tags) == entry["tags"]
        mvs.append(entry)
    return {"store": store, "models": models, "versions": mvs, "names": names}


def _name_clause(rng: random.Random, names: list[str]) -> str:
    op = rng.choice(["=", "!=", "LIKE", "ILIKE", "LIKE", "ILIKE", "IN", "NOT IN", "like"])
    if "IN" in op:
        return f"name {op} ({', '.join(repr(n) for n in rng.sample(names, rng.choice([1, 3])))})"
    pool = LIKE_PATTERNS if "LIKE" in op.upper() and rng.random() < 0.8 else STRINGS
    return f"{rng.choice(['name', 'attribute.name'])} {op} {quoted(rng.choice(pool), rng)}"


def _tag_clause(rng: random.Random) -> str:
    if rng.random() < 0.25:
        op, value = rng.choice([("=", "true"), ("=", "false"), ("!=", "true"), ("!=", "false"), ("=", "TRUE"), ("LIKE", "t%"), ("!=", "x")])
        return f"tags.`{PROMPT}` {op} '{value}'"
    key = rng.choice(["tags.t1", "tag.t2", "tags.`t1`", "tags.missing"])
    op = rng.choice(["=", "!=", "LIKE", "ILIKE"])
    pool = LIKE_PATTERNS if "LIKE" in op and rng.random() < 0.8 else STRINGS
    return f"{key} {op} {quoted(rng.choice(pool), rng)}"


def _rm_filter(rng: random.Random, names: list[str]) -> str:
    clauses = []
    for _ in range(rng.choice([0, 1, 1, 2])):
        roll = rng.random()
        if roll < 0.45:
            clauses.append(_name_clause(rng, names))
        elif roll < 0.9:
            clauses.append(_tag_clause(rng))
        else:
            clauses.append(
                rng.choice(
                    [
                        "name > 'a'",
                        "creation_timestamp > 5",
                        "name = 5",
                        "tags.t1 IN ('a')",
                        "tags.t1 IS NULL",
                        "params.x = 'a'",
                        "run_id = 'x'",
                        "`name` = 'x'",
                        "name = 'a' OR name = 'b'",
                        "tags.t1 = 5",
                    ]
                )
            )
    return " AND ".join(clauses)


def _rm_order_by(rng: random.Random) -> list[str] | None:
    if rng.random() < 0.2:
        return None
    terms = [
        f"{t} {rng.choice(['ASC', 'DESC', ''])}".strip()
        for t in rng.sample(["name", "timestamp", "last_updated_timestamp"], rng.choice([1, 1, 2]))
    ]
    if rng.random() < 0.1:
        terms.append(rng.choice(["creation_timestamp", "tags.t1", "name sideways", "foo"]))
    return terms


def _mlflow_rm(store: RegistryStore, filter_string: str, max_results: int, order_by: list[str] | None) -> list[str]:
    return [m.name for m in store.search_registered_models(filter_string, max_results, order_by)]


def _ours_rm(models: list[dict[str, Any]], filter_string: str, max_results: int, order_by: list[str] | None, token: str | None) -> Any:
    return search.prepare_registered_model_search(filter_string, order_by, max_results, token).run(models)


def _our_rm(models: list[dict[str, Any]], filter_string: str, max_results: int, order_by: list[str] | None) -> list[str]:
    return [m["name"] for m in _ours_rm(models, filter_string, max_results, order_by, None)[0]]


def test_registered_models_match_mlflow(world: dict[str, Any]) -> None:
    store, models, names = world["store"], world["models"], world["names"]
    rng = random.Random(SEED + 1)
    n_errors = n_nonempty = n_paged = 0
    for i in range(N_QUERIES):
        filter_string, order_by = _rm_filter(rng, names), _rm_order_by(rng)
        expected = outcome(_mlflow_rm, store, filter_string, 1000, order_by)
        actual = outcome(_our_rm, models, filter_string, 1000, order_by)
        assert_same(actual, expected, f"query #{i}: filter={filter_string!r} order_by={order_by!r}")
        if expected[0] != "ok":
            n_errors += 1
            continue
        n_nonempty += bool(expected[1])
        if i % 6 == 0 and len(expected[1]) > 3:
            n_paged += 1
            size = rng.choice([1, 2, 5])
            mlflow_pages = drain_mlflow(partial(store.search_registered_models, filter_string, size, order_by))
            our_pages = drain_ours(partial(_ours_rm, models, filter_string, size, order_by))
            assert [[m.name for m in p] for p in mlflow_pages] == [[m["name"] for m in p] for p in our_pages], f"paging #{i}"
    assert n_errors > 15 and n_nonempty > 100 and n_paged > 10, (n_errors, n_nonempty, n_paged)
    for max_results in (1001, 5000):
        assert outcome(_our_rm, models, "", max_results, None) == outcome(_mlflow_rm, store, "", max_results, None)


def _mv_filter(rng: random.Random, names: list[str]) -> str:
    clauses = []
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        roll = rng.random()
        if roll < 0.3:
            clauses.append(_name_clause(rng, names))
        elif roll < 0.55:
            clauses.append(_tag_clause(rng))
        elif roll < 0.7:
            value = rng.choice(["1", "2", "3", "'2'", "0"])
            clauses.append(f"version_number {rng.choice(['=', '!=', '>', '>=', '<', '<='])} {value}")
        elif roll < 0.8:
            op = rng.choice(["=", "!=", "LIKE", "ILIKE", "IN", "NOT IN"])
            if "IN" in op:
                clauses.append(f"run_id {op} ({', '.join(repr(r) for r in rng.sample(RUN_IDS[:3], 2))})")
            else:
                clauses.append(f"run_id {op} '{rng.choice([*RUN_IDS[:3], '%1%', 'b2%', '%B2%'])}'")
        elif roll < 0.9:
            clauses.append(
                f"source_path {rng.choice(['=', '!=', 'LIKE', 'ILIKE'])} '{rng.choice([*SOURCES, '%model', '%MODEL', 's3://%', '%al_ha'])}'"
            )
        else:
            clauses.append(
                rng.choice(
                    [
                        "version_number = 1.5",
                        "version_number = 'abc'",
                        "version_number LIKE '1'",
                        "version_number IN ('1')",
                        "source_path IN ('x')",
                        "creation_timestamp > 5",
                        "name > 'a'",
                        "run_id = 5",
                        "tags.t1 > 'a'",
                        "current_stage = 'None'",
                        "name = 'a' OR name = 'b'",
                    ]
                )
            )
    return " AND ".join(clauses)


def _mv_order_by(rng: random.Random) -> list[str] | None:
    if rng.random() < 0.25:
        return None
    pool = ["name", "version_number", "creation_timestamp", "last_updated_timestamp", "attribute.name"]
    terms = [f"{t} {rng.choice(['ASC', 'DESC', ''])}".strip() for t in rng.sample(pool[:4], rng.choice([1, 1, 2, 3]))]
    if rng.random() < 0.1:
        terms.append(rng.choice(["tags.name", "run_id", "foo.bar", "name sideways", pool[4]]))
    return terms


def _mlflow_mv(store: RegistryStore, filter_string: str, max_results: Any, order_by: list[str] | None) -> list[tuple[str, int]]:
    return [(m.name, int(m.version)) for m in store.search_model_versions(filter_string, max_results, order_by)]


def _ours_mv(mvs: list[dict[str, Any]], filter_string: str, max_results: Any, order_by: list[str] | None, token: str | None) -> Any:
    return search.prepare_model_version_search(filter_string, order_by, max_results, token).run(mvs)


def _our_mv(mvs: list[dict[str, Any]], filter_string: str, max_results: Any, order_by: list[str] | None) -> list[tuple[str, int]]:
    return [(m["name"], m["version"]) for m in _ours_mv(mvs, filter_string, max_results, order_by, None)[0]]


def test_model_versions_match_mlflow(world: dict[str, Any]) -> None:
    store, mvs, names = world["store"], world["versions"], world["names"]
    rng = random.Random(SEED + 2)
    n_errors = n_nonempty = n_paged = 0
    for i in range(N_QUERIES):
        filter_string, order_by = _mv_filter(rng, names), _mv_order_by(rng)
        expected = outcome(_mlflow_mv, store, filter_string, 10000, order_by)
        actual = outcome(_our_mv, mvs, filter_string, 10000, order_by)
        assert_same(actual, expected, f"query #{i}: filter={filter_string!r} order_by={order_by!r}")
        if expected[0] != "ok":
            n_errors += 1
            continue
        n_nonempty += bool(expected[1])
        if i % 6 == 0 and len(expected[1]) > 3:
            n_paged += 1
            size = rng.choice([1, 2, 5])
            mlflow_pages = drain_mlflow(partial(store.search_model_versions, filter_string, size, order_by))
            our_pages = drain_ours(partial(_ours_mv, mvs, filter_string, size, order_by))
            assert [[(m.name, int(m.version)) for m in p] for p in mlflow_pages] == [
                [(m["name"], m["version"]) for m in p] for p in our_pages
            ], f"paging #{i}"
    assert n_errors > 15 and n_nonempty > 100 and n_paged > 10, (n_errors, n_nonempty, n_paged)
    for max_results in (0, -3, 200_001):
        assert outcome(_our_mv, mvs, "", max_results, None) == outcome(_mlflow_mv, store, "", max_results, None)
