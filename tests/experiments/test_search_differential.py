"""search_experiments against mlflow's SqlAlchemyStore (sqlite) fed the same operations, on an empty table."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import ExperimentTag, ViewType
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

NAMES = ["alpha", "Alpha_2", "beta#1", "beta%2", "gamma", "ünïcode", "日本語", "a_b", "aXb", "zeta", "Zeta", "100%"]
TAGS = [{}, {"team": "A"}, {"team": "b"}, {"team": "A", "env": "prod"}, {"env": "dev"}, {"team": "a%"}]

FILTERS = [
    None,
    "name = 'alpha'",
    "name != 'alpha'",
    "name LIKE 'a%'",
    "name LIKE 'A%'",
    "name ILIKE 'a%'",
    "name LIKE '%#%'",
    "name LIKE '%\\%%'",
    "name LIKE 'a_b'",
    "name ILIKE '%ETA'",
    "tags.team = 'A'",
    "tags.team != 'A'",
    "tags.team LIKE 'a%'",
    "tags.team ILIKE 'a%'",
    "tags.env IS NULL",
    "tags.env IS NOT NULL",
    "tags.`team` = 'b'",
    "name LIKE '%a%' AND tags.team = 'A'",
    "experiment_id = '3'",
    "experiment_id IN ('1', '4', '7')",
    "experiment_id NOT IN ('1', '4')",
    "creation_time > 0",
    "last_update_time >= 1",
    "attribute.name = 'gamma'",
]
ORDERS = [
    None,
    ["name"],
    ["name DESC"],
    ["experiment_id DESC"],
    ["creation_time ASC"],
    ["last_update_time DESC", "name"],
    ["name ASC", "experiment_id DESC"],
]
BAD = [
    ("name > 'a'", None),
    ("foo = 'a'", None),
    ("metrics.x > 1", None),
    ("creation_time = 'abc'", None),
    ("experiment_id > '1'", None),
    ("tags.team IN ('a')", None),
    (None, ["tags.team"]),
    (None, ["foo"]),
    (None, ["name SIDEWAYS"]),
]


def build(reference: SqlAlchemyStore, client: mlflow.MlflowClient) -> None:
    for index, name in enumerate(NAMES):
        tags = TAGS[index % len(TAGS)]
        ref_id = reference.create_experiment(name, tags=[ExperimentTag(k, v) for k, v in tags.items()])
        our_id = client.create_experiment(name, tags=tags)
        assert ref_id == our_id
        time.sleep(0.003)  # distinct creation times in both stores, so time orderings agree
    for experiment_id in ("2", "7", "9", "12"):
        reference.delete_experiment(experiment_id)
        client.delete_experiment(experiment_id)
        time.sleep(0.003)
    reference.rename_experiment("5", "gamma-renamed")
    client.rename_experiment("5", "gamma-renamed")
    reference.set_experiment_tag("6", ExperimentTag("env", "late"))
    client.set_experiment_tag("6", "env", "late")


def pages(search: Any, **kwargs: Any) -> list[list[str]]:
    out, token = [], None
    while True:
        page = search(page_token=token, **kwargs)
        out.append([f"{e.experiment_id}:{e.name}:{e.lifecycle_stage}:{sorted(e.tags.items())}" for e in page])
        token = page.token
        if not token:
            return out


def outcome(search: Any, **kwargs: Any) -> Any:
    try:
        return pages(search, **kwargs)
    except MlflowException as error:
        return ("error", error.error_code)


def test_search_experiments_matches_sqlalchemy_store(fresh_server: str, tmp_path: Path) -> None:
    reference = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/db.sqlite"), str(tmp_path / "art"))
    client = mlflow.MlflowClient(fresh_server)
    build(reference, client)
    # Every filter under every view type, and every ordering paged by 3 (moto's Query walks the whole
    # table, so the combinations are sampled rather than fully crossed).
    rng = random.Random(11)
    cases = [
        (v, f, rng.choice(ORDERS), rng.choice((3, 1000)))
        for v in (ViewType.ACTIVE_ONLY, ViewType.DELETED_ONLY, ViewType.ALL)
        for f in FILTERS
    ]
    cases += [(ViewType.ALL, rng.choice(FILTERS[:8]), order, 3) for order in ORDERS]
    for view_type, filter_string, order_by, max_results in cases:
        kwargs = {"view_type": view_type, "filter_string": filter_string, "order_by": order_by, "max_results": max_results}
        expected = outcome(reference.search_experiments, **kwargs)
        actual = outcome(client.search_experiments, **kwargs)
        assert actual == expected, kwargs


def test_search_errors_match_sqlalchemy_store(fresh_server: str, tmp_path: Path) -> None:
    reference = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/db.sqlite"), str(tmp_path / "art"))
    client = mlflow.MlflowClient(fresh_server)
    for filter_string, order_by in BAD:
        with pytest.raises(MlflowException) as expected:
            reference.search_experiments(filter_string=filter_string, order_by=order_by)
        with pytest.raises(MlflowException) as actual:
            client.search_experiments(filter_string=filter_string, order_by=order_by)
        assert actual.value.error_code == expected.value.error_code
        assert _canonical(actual.value.message) == _canonical(f"{expected.value.error_code}: {expected.value.message}"), (
            filter_string,
            order_by,
        )


def _canonical(message: str) -> str:
    """MLflow prints Python sets in some messages; their order depends on the process's hash seed."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)
