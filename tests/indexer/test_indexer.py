"""The stream indexer against a real (moto) table and stream: derived items, redelivery, loops, failures."""

from __future__ import annotations

import copy
import math

import pytest

from serverless_mlflow.index import fts, param_ranks
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from tools import admin

from . import support as s


@pytest.fixture
def stream(dynamodb_endpoint: str):
    with s.private_table(dynamodb_endpoint) as st:
        yield st


def derived_items(pk: str) -> list[dict]:
    return [i for i in table.query(pk) if i["entity_type"] in ("metric_rank", "param_rank", "fts_forward", "fts_reverse")]


def metric_ranks(experiment_id: str, key: str) -> list[dict]:
    """The metric's RANK items, in their own partition (not the experiment's)."""
    return table.query(**ENTITY["metric_rank"].query("by_value", experiment_id=experiment_id, key=key))


def test_metric_rank_follows_latest_value_and_run_appears_once(stream: s.Stream) -> None:
    s.put_experiment("1", "exp one", 1)
    s.put_run("1", "a" * 32, "alpha", 2)
    s.log_metric("1", "a" * 32, "loss", 0.5, 3)
    s.drain(stream)
    s.log_metric("1", "a" * 32, "loss", 0.25, 4)
    s.log_metric("1", "a" * 32, "loss", math.nan, 5)
    s.drain(stream)
    rank_items = metric_ranks("1", "loss")
    assert [(i["run_id"], i["is_nan"]) for i in rank_items] == [("a" * 32, True)]
    assert table.query("EXP#1", "RANK#m#") == []  # nothing metric-derived in the experiment partition
    assert admin.verify().differences == 0
    # A REMOVE of the source deletes the RANK item.
    s.delete_run("1", "a" * 32)
    s.drain(stream)
    assert table.query("EXP#1", "RANK#") == [] and metric_ranks("1", "loss") == []
    assert table.query("EXP#1", "FTS") == []
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0


def test_rename_replaces_tokens_and_clears_flags(stream: s.Stream) -> None:
    s.put_experiment("1", "Churn Model", 1)
    s.put_run("1", "b" * 32, "baseline-run", 2)
    s.drain(stream)
    assert fts.run_candidates(["1"], "%line%") == {"b" * 32}
    assert fts.experiment_candidates(s.WS, "%churn%") == {"1"}
    # Flags cleared: nothing pending any more.
    assert fts.pending_ids(fts.runs_scope("1"), fts.RUN) == set()
    s.put_run("1", "b" * 32, "tuned", 3)
    s.put_experiment("1", "Fraud", 4)
    s.drain(stream)
    assert fts.run_candidates(["1"], "%line%") == set()
    assert fts.run_candidates(["1"], "%tun%") == {"b" * 32}
    assert fts.experiment_candidates(s.WS, "%churn%") == set()
    assert fts.experiment_candidates(s.WS, "%RAU%") == {"1"}
    assert admin.verify().differences == 0


def test_a_name_added_by_a_later_write_is_posted(stream: s.Stream) -> None:
    # Indexed first without a name (a trace whose name arrives with StartTrace after its spans), then named by a
    # MODIFY: what the new image implies must be written, though the record's images imply it too.
    s.put_experiment("1", "exp", 1)
    s.put_run("1", "c" * 32, None, 2)
    s.drain(stream)
    assert fts.run_candidates(["1"], "%named%") == set()
    s.put_run("1", "c" * 32, "named-later", 3)
    s.drain(stream)
    assert fts.run_candidates(["1"], "%named%") == {"c" * 32}
    assert admin.verify().differences == 0


def test_replay_duplicates_and_old_records_converge(stream: s.Stream) -> None:
    s.put_experiment("1", "e", 1)
    s.put_run("1", "c" * 32, "first name", 2)
    s.log_metric("1", "c" * 32, "acc", 1.0, 3)
    first = stream.read_new()
    s.invoke_indexer(first)
    s.put_run("1", "c" * 32, "second name", 4)
    s.log_metric("1", "c" * 32, "acc", 2.0, 5)
    s.drain(stream)
    before = sorted((i["pk"], i["sk"]) for i in [*derived_items("EXP#1"), *metric_ranks("1", "acc")])
    # Old records (value 1.0, "first name") delivered again, duplicated, then the whole stream.
    s.invoke_indexer(copy.deepcopy(first + first))
    s.invoke_indexer(copy.deepcopy(stream.history))
    s.drain(stream)
    after = sorted((i["pk"], i["sk"]) for i in [*derived_items("EXP#1"), *metric_ranks("1", "acc")])
    assert after == before
    assert [i["value"] for i in metric_ranks("1", "acc")] == ["2.0"]
    assert admin.verify().differences == 0


def test_derived_items_do_not_cause_indexing_work(stream: s.Stream) -> None:
    s.put_experiment("1", "loop check", 1)
    s.put_run("1", "d" * 32, "runner", 2)
    delivered = s.drain(stream)
    # Source writes + derived writes + flag clears, then silence (drain would raise on a loop).
    assert delivered > 0
    assert stream.read_new() == []


def test_poison_record_is_reported_and_the_rest_processed(stream: s.Stream) -> None:
    s.put_experiment("1", "poison", 1)
    s.put_run("1", "e" * 32, "good run", 2)
    records = stream.read_new()
    bad = copy.deepcopy(next(r for r in records if r["dynamodb"]["Keys"]["sk"]["S"].startswith("R#")))
    bad["dynamodb"]["SequenceNumber"] = "999999999999"
    bad["dynamodb"]["NewImage"]["run_id"] = {"NULL": True}  # breaks deriving (no run id)
    result = s.invoke_indexer([bad, *records])
    assert result["batchItemFailures"] == [{"itemIdentifier": "999999999999"}]
    assert fts.run_candidates(["1"], "%good%") == {"e" * 32}


def test_long_param_values_keep_sort_keys_small(stream: s.Stream) -> None:
    s.put_experiment("1", "params", 1)
    long_key = "k" * 250
    for i, value in enumerate(["x" * 6000, "x" * 5999 + "a", "y", "x" * 280]):
        run_id = f"{i:032d}"
        s.put_run("1", run_id, f"r{i}", 10 + i, start_time=10 + i)
        s.log_param("1", run_id, long_key, value, 20 + i)
    s.drain(stream)
    rank_items = table.query("EXP#1", "RANK#p#")
    assert len(rank_items) == 4
    assert all(len(i["sk"].encode()) < 1024 for i in rank_items)
    ordered = [r.value for g in param_ranks.iter_param_groups(["1"], long_key, True) for r in g]
    assert ordered == sorted(["x" * 6000, "x" * 5999 + "a", "y", "x" * 280])
    ordered_desc = [r.value for g in param_ranks.iter_param_groups(["1"], long_key, False) for r in g]
    assert ordered_desc == ordered[::-1]


def test_watermark_recorded(stream: s.Stream) -> None:
    s.put_experiment("1", "wm", 1)
    s.drain(stream)
    from indexer.logic import read_watermark

    mark = read_watermark()
    assert mark is not None and mark["value"] > 0 and mark["lag_ms"] >= 0


def test_poison_record_ends_in_dead_letters_after_bounded_retries(stream: s.Stream) -> None:
    from indexer.handler import lambda_handler

    from local.events import LambdaContext
    from local.streams import MAX_ATTEMPTS, StreamFollower

    s.put_experiment("1", "dlq", 1)
    s.put_run("1", "f" * 32, "before poison", 2)
    s.put_run("1", "9" * 32, "after poison", 3)
    records = stream.read_new()
    bad = copy.deepcopy(records[-1])
    bad["dynamodb"]["SequenceNumber"] = "5" * 12
    bad["dynamodb"]["NewImage"]["run_id"] = {"NULL": True}
    calls: list[int] = []

    def counting(event: dict, context: object) -> dict:
        calls.append(len(event["Records"]))
        return lambda_handler(event, context)

    follower = StreamFollower(None, stream.arn, lambda batch: counting({"Records": batch}, LambdaContext("indexer")))
    follower._deliver([*records[:-1], bad, records[-1]])
    assert next(r["dynamodb"]["SequenceNumber"] for r in follower.dead_letters) == "5" * 12
    assert len(calls) == MAX_ATTEMPTS  # bounded retries
    assert fts.run_candidates(["1"], "%poison%") == {"f" * 32, "9" * 32}
    assert admin.verify().differences == 0
