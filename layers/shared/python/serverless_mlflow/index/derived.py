"""Source item -> the derived items it implies. Pure: used by the stream indexer and by ``admin verify``.

Derived items (RANK, FTS postings, a trace's issue links) are a function of one source item each, so the indexer
can rebuild them from any image of that item and verify can recompute all of them from the source items. (Run
summaries and metric digests are functions of a run: ``run_summaries``, ``run_metrics``; a trace's metric rollups
and content signature are functions of the trace: ``trace_aggregates``.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serverless_mlflow.index import fts, rank_items
from serverless_mlflow.index.run_summaries import SUMMARISED_TYPES
from serverless_mlflow.storage import issue_links, table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE, PK, SK

Item = dict[str, Any]
Key = tuple[str, str]

# Source entity types the indexer reacts to; everything else (derived items, config, locators...)
# is ignored so the indexer's own writes never cause more indexing work.
# Every item of a run's range feeds the run's summary (inputs and outputs derive nothing else); a run's metrics
# marker starts its metric pass (metric_marks: the digest, then the marker's removal).
SOURCE_TYPES = (
    frozenset({"latest_metric", "param", "run_tag", "run", "experiment_entry", "registered_model_entry", "trace", "run_metrics_marker"})
    | SUMMARISED_TYPES
) - {"run_metrics_digest"}
# Sources whose removal the indexer needs to see (a marker's removal is the indexer's own doing).
REMOVAL_SOURCE_TYPES = SOURCE_TYPES - {"run_metrics_marker"}
# What the stream delivers to the indexer: the sources, and the span items a trace's aggregates (rollups, content
# signature: serverless_mlflow.index.trace_aggregates) are rebuilt from (their removals too).
TRACE_AGGREGATE_TYPES = frozenset({"trace_spans"})
STREAM_TYPES = SOURCE_TYPES | TRACE_AGGREGATE_TYPES
REMOVAL_STREAM_TYPES = REMOVAL_SOURCE_TYPES | TRACE_AGGREGATE_TYPES
DERIVED_TYPES = frozenset(entity.type_name for entity in ENTITY.values() if entity.derived)
# Sources that carry the "not yet indexed" LSI5 flag (lsi5sk), removed by the indexer (a layout 2 trace's flag, set
# by an earlier release, stays until the ``trace_names`` step lists its name: ``tools/trace_names.py``).
FLAGGED_TYPES = frozenset({"latest_metric", "param", "run_tag", "run", "experiment_entry", "registered_model_entry", "trace"})
FLAG_ATTRIBUTE = COLLECTIONS["unindexed"].sk_attr


@dataclass(frozen=True)
class NameSource:
    """The indexed name of one entity, and the partition its postings live in."""

    scope: str
    kind: str
    entity_id: str
    name: str | None


def is_source(item: Item | None) -> bool:
    return bool(item) and item.get(ENTITY_TYPE) in SOURCE_TYPES


def name_source(item: Item) -> NameSource | None:
    """Which entity's name this source item carries (None if it carries no indexed name)."""
    entity_type = item.get(ENTITY_TYPE)
    if entity_type == "run":
        return NameSource(item[PK], fts.RUN, item["run_id"], item.get("run_name"))
    if entity_type == "experiment_entry":
        return NameSource(item[PK], fts.EXPERIMENT, item["experiment_id"], item.get("name"))
    if entity_type == "registered_model_entry":
        workspace = item[PK].split("#", 1)[1]  # RMLIST#<workspace>
        return NameSource(fts.registered_models_scope(workspace), fts.REGISTERED_MODEL, item["name"], item.get("name"))
    if entity_type == "trace" and is_layout1_trace(item):
        # A trace in its trace partition (layout 2) is found by name through the partition's name entries
        # (store.trace_names), which its writer keeps: no postings per trace, no flag for the indexer to clear.
        return NameSource(item[PK], fts.TRACE, item["trace_id"], item.get("trace_name"))
    return None


def is_layout1_trace(item: Item) -> bool:
    """Whether a trace info is a layout 1 one (in the experiment partition, before the ``traces_v2`` step)."""
    try:
        ENTITY["trace_v1"].parse_pk(item[PK])
    except ValueError:
        return False
    return True


def derive(item: Item | None) -> dict[Key, Item]:
    """Every derived item implied by ``item`` (a source item image, or None), keyed by (pk, sk)."""
    if not is_source(item):
        return {}
    assert item is not None
    entity_type = item[ENTITY_TYPE]
    out: list[Item] = []
    if entity_type == "latest_metric":
        out.append(rank_items.metric_rank_item(item))
    elif entity_type == "param":
        out.append(rank_items.param_rank_item(item))
    elif entity_type == "run_tag":
        out.append(rank_items.tag_rank_item(item))
    if entity_type == "trace":
        out.extend(issue_links.trace_links(item))
    source = name_source(item)
    if source is not None:
        for level, token in sorted(fts.name_tokens(source.name)):
            out.extend(fts.posting_items(source.scope, source.kind, source.entity_id, level, token))
    return {(derived[PK], derived[SK]): derived for derived in out}


def only_flag_removed(old: Item | None, new: Item | None) -> bool:
    """True for the MODIFY the indexer itself causes by clearing the LSI5 flag: nothing to index."""
    if not old or not new or FLAG_ATTRIBUTE not in old or FLAG_ATTRIBUTE in new:
        return False
    return {k: v for k, v in old.items() if k != FLAG_ATTRIBUTE} == new


def remove_flag(item: Item, condition: str = "", names: dict[str, str] | None = None, values: dict[str, Any] | None = None) -> bool:
    """Remove the LSI5 "not yet indexed" flag the item was read with; False when the item was written again since
    (its flag differs, or ``condition`` on what else was read fails): that write's stream record clears its own."""
    expected = "#f = :f" + (f" AND {condition}" if condition else "")
    try:
        table.update(
            {PK: item[PK], SK: item[SK]},
            "REMOVE #f",
            names={"#f": FLAG_ATTRIBUTE, **(names or {})},
            values={":f": item[FLAG_ATTRIBUTE], **(values or {})},
            condition=expected,
        )
    except table.ConditionFailed:
        return False
    return True
