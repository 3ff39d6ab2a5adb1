"""End to end: real writers (the feature handlers over HTTP, driven by the mlflow client) on a local
runtime whose indexer is PAUSED. The index-backed searches (FTS candidates + exact match, RANK order)
give the same answers as the handlers' exhaustive searches, before any indexing, after the indexer
catches up (``admin verify`` clean, no pending flags left), and after further writes while paused."""

from __future__ import annotations

import math
import uuid

import pytest

from serverless_mlflow.index import fts, param_ranks, rank_items, ranks
from serverless_mlflow.search import parse_experiment_filter
from serverless_mlflow.search.like import like_match
from serverless_mlflow.storage import table
from tools import admin

pytestmark = pytest.mark.e2e


def _entries() -> dict[str, str]:
    return {
        i["experiment_id"]: i["name"] for i in table.query(fts.experiments_scope("default"), "E#") if i["entity_type"] == "experiment_entry"
    }


def _metric_ranks(experiment_id: str, key: str) -> list[dict]:
    return table.query(**rank_items.METRIC_RANK.query("by_value", experiment_id=experiment_id, key=key))


def _run_names(experiment_id: str) -> dict[str, str]:
    return {i["run_id"]: i.get("run_name", "") for i in table.query(f"EXP#{experiment_id}", "R#") if i["entity_type"] == "run"}


def check_experiments(client, prefix: str) -> None:
    from mlflow.entities import ViewType

    for pattern in [f"{prefix}%train%", f"%{prefix}%TRAIN%", f"{prefix}%rAiN_ng%", "%new%", "%ab%"]:
        for comparator in ("LIKE", "ILIKE"):
            filter_string = f"name {comparator} '{pattern}'"
            expected = {e.experiment_id for e in client.search_experiments(ViewType.ALL, filter_string=filter_string, max_results=1000)}
            candidates = fts.filter_candidates(parse_experiment_filter(filter_string), [fts.experiments_scope("default")], fts.EXPERIMENT)
            if candidates is None:
                assert pattern == "%ab%"
                continue
            names = _entries()
            found = {c for c in candidates if c in names and like_match(names[c], pattern, comparator == "LIKE")}
            assert found == expected, filter_string


def check_runs(client, experiment_id: str) -> None:
    for pattern in ["%ain%", "%AIN%", "%eval%"]:
        for comparator in ("LIKE", "ILIKE"):
            expected = {r.info.run_id for r in client.search_runs([experiment_id], f"attributes.run_name {comparator} '{pattern}'")}
            names = _run_names(experiment_id)
            candidates = fts.run_candidates([experiment_id], pattern)
            assert candidates is not None
            assert {c for c in candidates if like_match(names.get(c, ""), pattern, comparator == "LIKE")} == expected
    for ascending in (True, False):
        order = "ASC" if ascending else "DESC"
        runs = client.search_runs([experiment_id], order_by=[f"metrics.m {order}"], max_results=100)
        expected = [r.info.run_id for r in runs if "m" in r.data.metrics]
        assert list(ranks.iter_run_ids_by_metric([experiment_id], "m", ascending)) == expected
        runs = client.search_runs([experiment_id], order_by=[f"params.p {order}"], max_results=100)
        expected = [r.info.run_id for r in runs if "p" in r.data.params]
        assert list(param_ranks.iter_run_ids_by_param([experiment_id], "p", ascending)) == expected


def check_models(client, prefix: str) -> None:
    for pattern in [f"{prefix}%model%", f"%{prefix}%Model%"]:
        for comparator in ("LIKE", "ILIKE"):
            expected = {m.name for m in client.search_registered_models(f"name {comparator} '{pattern}'", max_results=1000)}
            candidates = fts.registered_model_candidates("default", pattern)
            assert candidates is not None
            # Candidates may name models renamed or deleted since (stale postings): the caller reads them.
            existing = {
                i["name"] for i in table.query(fts.registered_models_collection("default")) if i["entity_type"] == "registered_model_entry"
            }
            assert {c for c in candidates if c in existing and like_match(c, pattern, comparator == "LIKE")} == expected


def test_indexed_searches_correct_while_indexer_paused(paused_runtime) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(paused_runtime.url)
    prefix = uuid.uuid4().hex[:6]
    ids = [client.create_experiment(f"{prefix} {name}") for name in ["Training", "train eval", "retraining", "other", "TRAINING ab"]]
    experiment_id = ids[0]
    run_ids = []
    for i, (name, value, param) in enumerate(
        [("train-a", 1.0, "b"), ("eval", 3.0, "a"), ("Retrain", math.nan, "c"), ("x", 3.0, "a"), ("plain", -2.0, None)]
    ):
        run = client.create_run(experiment_id, run_name=name, start_time=1000 + (i % 2))
        client.log_metric(run.info.run_id, "m", value, step=0, timestamp=1)
        if param is not None:
            client.log_param(run.info.run_id, "p", param)
        run_ids.append(run.info.run_id)
    client.create_run(experiment_id, run_name="no metric")
    client.create_registered_model(f"{prefix} Fraud Model")
    client.create_registered_model(f"{prefix} other")

    # Nothing indexed yet: everything is answered through the "not yet indexed" flags and metrics markers.
    assert table.query(f"EXP#{experiment_id}", "RANK#") == [] and _metric_ranks(experiment_id, "m") == []
    check_experiments(client, prefix)
    check_runs(client, experiment_id)
    check_models(client, prefix)

    paused_runtime.indexer_mode = "sync"
    paused_runtime.drain_stream()
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0, report.summary()
    assert len(_metric_ranks(experiment_id, "m")) == 5
    check_experiments(client, prefix)
    check_runs(client, experiment_id)
    check_models(client, prefix)

    # Paused again: renames, new latest values and a renamed model are visible at once.
    paused_runtime.indexer_mode = "paused"
    client.rename_experiment(ids[3], f"{prefix} new training")
    client.rename_experiment(ids[0], f"{prefix} renamed")
    client.update_run(run_ids[1], name="now training")
    client.log_metric(run_ids[0], "m", 10.0, step=1, timestamp=2)
    client.log_metric(run_ids[3], "m", math.nan, step=1, timestamp=2)
    client.rename_registered_model(f"{prefix} Fraud Model", f"{prefix} fraud")
    client.create_registered_model(f"{prefix} new model")
    check_experiments(client, prefix)
    check_runs(client, experiment_id)
    check_models(client, prefix)
    paused_runtime.indexer_mode = "sync"
    paused_runtime.drain_stream()
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0, report.summary()
