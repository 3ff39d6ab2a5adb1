"""RANK items as the stream indexer writes them, and the value encodings their readers share.

A run's latest metric value is ``<f64 value>#<run_id>`` in the partition of the experiment and metric key
(``MRANK#<experiment>#<key>``; a layout-1 value in the experiment's partition); a param or tag value is
``RANK#p#<key><text(value, 300)><run_id>`` in the experiment partition. Apart from the readers (``ranks``,
``param_ranks``) so the indexer's item derivation (``derived``) loads only these shapes.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from serverless_mlflow.storage import keys
from serverless_mlflow.storage.schema import ENTITY, LEGACY, PK, SK
from serverless_mlflow.store import run_metrics

METRIC_RANK = ENTITY["metric_rank"]
METRIC_RANK_V1 = LEGACY["metric_rank"]
PARAM_RANK = ENTITY["param_rank"]
TAG_RANK = ENTITY["tag_rank"]
# Value-ordered string items: (rank entity, source entity type) per search key type.
STRING_RANKS = {"parameter": (PARAM_RANK, "param"), "tag": (TAG_RANK, "run_tag")}
PARAM_VALUE_BUDGET = 300
_DIGEST_AND_MARKERS = 26  # keys.text(): 24-char digest + truncation mark + terminator
PARAM_HEAD_BYTES = PARAM_VALUE_BUDGET - _DIGEST_AND_MARKERS


def metric_value(raw: Any) -> float:
    """A stored metric value (string or number) as a float; ``NaN``/``inf`` strings included."""
    return float(raw)


def rank_value(value: float) -> float:
    """MLflow's SQL store saves +-inf as +-max float, so they tie with it: rank them the same."""
    if math.isinf(value):
        return sys.float_info.max if value > 0 else -sys.float_info.max
    return value


def run_id_of(source: dict[str, Any]) -> str:
    return source[SK].split("#")[1]  # R#<run_id>#M#... / R#<run_id>#P#...


def experiment_id_of(source: dict[str, Any]) -> str:
    return source[PK].split("#", 1)[1]


def metric_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    """The RANK item of a latest metric value: in its own partition, or (a layout-1 value) in the experiment's."""
    value = metric_value(source["value"])
    if run_metrics.is_legacy_latest(source):
        run_id, experiment_id, entity = run_id_of(source), experiment_id_of(source), METRIC_RANK_V1
    else:
        run_id, experiment_id, entity = source["run_id"], str(source["experiment_id"]), METRIC_RANK
    attributes = {"run_id": run_id, "key": source["key"], "value": repr(value), "is_nan": math.isnan(value)}
    return entity.item(attributes, experiment_id=experiment_id, key=source["key"], value=rank_value(value), run_id=run_id)


def param_value_key(value: str) -> str:
    return keys.text(value, PARAM_VALUE_BUDGET)


def param_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    run_id = run_id_of(source)
    value = str(source["value"])
    attributes = {"run_id": run_id, "key": source["key"], "value": value}
    return PARAM_RANK.item(
        attributes, experiment_id=experiment_id_of(source), key=source["key"], value_key=param_value_key(value), run_id=run_id
    )


def tag_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    run_id = run_id_of(source)
    value = str(source["value"])
    attributes = {"run_id": run_id, "key": source["key"], "value": value}
    return TAG_RANK.item(
        attributes, experiment_id=experiment_id_of(source), key=source["key"], value_key=param_value_key(value), run_id=run_id
    )
