"""search_logged_models against mlflow's SqlAlchemyStore (sqlite) fed the same models."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import LoggedModelParameter, LoggedModelStatus, LoggedModelTag
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from tests.conftest import unique
from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

MODELS = [
    ("alpha", {"lr": "0.1", "depth": "3"}, {"team": "A"}, "sklearn"),
    ("Beta", {"lr": "0.01"}, {"team": "b"}, "torch"),
    ("gamma_1", {"depth": "10"}, {}, None),
    ("delta", {"lr": "1"}, {"team": "A", "env": "prod"}, "sklearn"),
    ("ünï", {}, {"env": "dev"}, ""),
]
FILTERS = [
    None,
    "name = 'alpha'",
    "name != 'alpha'",
    "name LIKE 'a%'",
    "name ILIKE 'b%'",
    "params.lr = '0.1'",
    "params.lr != '0.1'",
    "params.depth LIKE '1%'",
    "tags.team = 'A'",
    "tags.team ILIKE 'a'",
    "model_type = 'sklearn'",
    "name IN ('alpha', 'delta')",
    "tags.team = 'A' AND params.lr = '1'",
    "status = 'READY'",
]
ORDERS: list[list[dict[str, Any]] | None] = [
    None,
    [{"field_name": "name", "ascending": True}],
    [{"field_name": "name", "ascending": False}],
    [{"field_name": "creation_timestamp", "ascending": True}],
    [{"field_name": "model_type", "ascending": True}],
]


def names(search: Any, **kwargs: Any) -> Any:
    try:
        out, token = [], None
        while True:
            page = search(page_token=token, **kwargs)
            out.append([m.name for m in page])
            token = page.token
            if not token:
                return out
    except MlflowException as error:
        return ("error", error.error_code)


def test_search_logged_models_matches_sqlalchemy_store(server: str, tmp_path: Path) -> None:
    reference = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/db.sqlite"), str(tmp_path / "art"))
    client = mlflow.MlflowClient(server)
    ref_exp = reference.create_experiment("lm-diff")
    our_exp = client.create_experiment(unique("lm-diff"))
    for index, (name, params, tags, model_type) in enumerate(MODELS):
        ref = reference.create_logged_model(
            ref_exp,
            name=name,
            params=[LoggedModelParameter(k, v) for k, v in params.items()],
            # MLflow's REST handler passes the proto default "" for unset model_type / source_run_id.
            tags=[LoggedModelTag(k, v) for k, v in tags.items()],
            model_type=model_type or "",
            source_run_id="",
        )
        ours = client.create_logged_model(our_exp, name=name, params=params, tags=tags, model_type=model_type)
        if index % 2 == 0:
            reference.finalize_logged_model(ref.model_id, LoggedModelStatus.READY)
            client.finalize_logged_model(ours.model_id, LoggedModelStatus.READY)
        if name == "delta":
            reference.delete_logged_model(ref.model_id)
            client.delete_logged_model(ours.model_id)
        time.sleep(0.003)
    for filter_string in FILTERS:
        for order_by in ORDERS:
            for max_results in (2, 100):
                expected = names(
                    reference.search_logged_models,
                    experiment_ids=[ref_exp],
                    filter_string=filter_string,
                    order_by=order_by,
                    max_results=max_results,
                )
                actual = names(
                    client.search_logged_models,
                    experiment_ids=[our_exp],
                    filter_string=filter_string,
                    order_by=order_by,
                    max_results=max_results,
                )
                assert actual == expected, (filter_string, order_by, max_results)
