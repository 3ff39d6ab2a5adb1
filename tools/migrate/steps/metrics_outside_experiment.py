"""Layout 1 -> 2: metric points, latest values, metric RANK items, run summaries, pair index items and logged-model
metrics leave the experiment partition (issue 23).

Experiments are moved one at a time, in id order (the checkpoint is the last one done and the phase reached in
the next); each phase is idempotent, so a resumed phase only finds what is left:

1. **latest values**: each run's layout-1 latest values (``R#<run>#M#<key>``) are put in the run's partition
   (conditional on MLflow's rank: a newer value written meanwhile wins), the run is marked for the indexer
   (``metric_marks``, so readers take its metrics from its partition until the indexer has written its digest
   and RANK items), then the old items and their RANK items are deleted (conditional on being unchanged);
2. **derived items**: every run's summary is rebuilt in its partition (with its pair index items), the layout-1
   summaries, pair items and metric RANK items are deleted, and the experiment is recorded as ranked in layout 2
   (``experiment_layout.ranks``): searches use the new RANK partitions from then on;
3. **history**: layout-1 points (``H#...``), a page at a time: each copied to its metric's partition (same identity:
   idempotent), then deleted. Readers merge both places meanwhile, by position: a point is never missing or twice;
4. **logged-model metrics**: copied to the model's partition, then deleted (readers merge them the same way);
5. the experiment is recorded as moved (``experiment_layout.version``): its readers stop reading layout 1.

Then every experiment is checked once more for layout-1 items (written by an older release still running when
the move began; the move needs the new code deployed first) and moved again if any is found. The runner records
layout 2 for the table.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.index import metric_marks, run_summaries
from serverless_mlflow.index.derived import derive
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, LEGACY, PK, SK
from serverless_mlflow.store import run_metrics
from serverless_mlflow.store import runs as store
from tools import admin
from tools.migrate import Context

NAME = "metrics_outside_experiment"
FROM = 1
TO = layout.METRICS_OUTSIDE_EXPERIMENT

HISTORY_V1 = LEGACY["metric_history"]
MODEL_METRIC = ENTITY["logged_model_metric"]
MODEL_METRIC_V1 = LEGACY["logged_model_metric"]
LOGGED_MODEL = ENTITY["logged_model"]
EXPERIMENT_LAYOUT = ENTITY["experiment_layout"]
PAGE = 500
WORKERS = 16
_DERIVED_V1 = ("run_summary", "pair_rank", "metric_rank")


def run(context: Context) -> None:
    progress = context.checkpoint()
    after = progress.get("after")
    for experiment_id in admin.experiment_ids(context.workspaces):
        if after is not None and admin.experiment_order(experiment_id) <= admin.experiment_order(after):
            continue
        phase = int(progress.get("phase", 1)) if progress.get("experiment") == experiment_id else 1
        move_experiment(context, experiment_id, phase, after)
        after = experiment_id
        context.save({"after": after})
    # Layout-1 items written while the move ran (by an older release still answering): move those experiments again.
    for experiment_id in admin.experiment_ids(context.workspaces):
        if has_layout_1_items(experiment_id):
            context.log(f"{NAME}: experiment {experiment_id} has layout-1 items again: moving them")
            move_experiment(context, experiment_id, 1, after)


def move_experiment(context: Context, experiment_id: str, phase: int = 1, after: str | None = None) -> None:
    """Phases ``phase``.. of one experiment, each recorded when done (``after``: the last experiment done before it)."""
    phases = [move_latest_values, rebuild_derived, move_history, move_model_metrics, record_moved]
    for number, work in enumerate(phases, start=1):
        if number < phase:
            continue
        work(context, experiment_id)
        context.save({"after": after, "experiment": experiment_id, "phase": number + 1})


# --- 1. latest values ---------------------------------------------------------------------------------------


def move_latest_values(context: Context, experiment_id: str) -> None:
    by_run: dict[str, list[dict[str, Any]]] = {}
    for item in table.iter_query(**store.RUN.query("with_data", experiment_id=experiment_id)):
        if run_metrics.is_legacy_latest(item):
            by_run.setdefault(store.run_id_of_sk(item[SK]), []).append(item)
    runs = sorted(by_run.items())
    for start in range(0, len(runs), WORKERS * 4):
        chunk = runs[start : start + WORKERS * 4]
        parallel.parallel_map(lambda pair: _move_run_latest(experiment_id, *pair), chunk, workers=WORKERS)
        context.spend(sum(len(items) for _, items in chunk))


def _move_run_latest(experiment_id: str, run_id: str, items: list[dict[str, Any]]) -> None:
    moved = [
        run_metrics.latest_item(
            experiment_id, run_id, {"key": item["key"], "value": float(item["value"]), "timestamp": item["timestamp"], "step": item["step"]}
        )
        for item in items
    ]
    # Marked before the values move (as a metric writer does): readers take the run's metrics from its partition
    # until the indexer's pass has written its digest and RANK items.
    ensured = metric_marks.before_write(experiment_id, run_id, *metric_marks.read(experiment_id, run_id))
    for start in range(0, len(moved), table.TRANSACTION_LIMIT):
        run_metrics.put_if_newer(moved[start : start + table.TRANSACTION_LIMIT])
    metric_marks.after_write(experiment_id, run_id, ensured)
    for item in items:
        try:
            table.delete({PK: item[PK], SK: item[SK]}, condition="#rank = :rank", names={"#rank": "rank"}, values={":rank": item["rank"]})
        except table.ConditionFailed:
            continue  # rewritten by an older release meanwhile: the final check moves it again
        table.batch_write(deletes=[{PK: pk, SK: sk} for pk, sk in derive(item)])


# --- 2. derived items -----------------------------------------------------------------------------------------


def rebuild_derived(context: Context, experiment_id: str) -> None:
    run_ids = [
        item["run_id"] for item in table.iter_query(**store.RUN.query("by_start_time", experiment_id=experiment_id)) if "run_id" in item
    ]
    for start in range(0, len(run_ids), PAGE):
        chunk = run_ids[start : start + PAGE]
        parallel.parallel_map(lambda run_id: run_summaries.rebuild(experiment_id, run_id), chunk, workers=WORKERS)
        context.spend(len(chunk))
    for name in _DERIVED_V1:
        _delete_all(context, LEGACY[name].query("all", experiment_id=experiment_id))
    _record(experiment_id, "ranks")


def _delete_all(context: Context, query: Any) -> None:
    while True:
        keys = [{PK: item[PK], SK: item[SK]} for item in table.query(**query, limit=PAGE)]
        if not keys:
            return
        table.batch_write(deletes=keys)
        context.spend(len(keys))


# --- 3. history -----------------------------------------------------------------------------------------------


def move_history(context: Context, experiment_id: str) -> None:
    everything = HISTORY_V1.query("all", experiment_id=experiment_id)
    while True:
        page = table.query(**everything, limit=PAGE)
        if not page:
            return
        table.batch_write(puts=[_history_point(item) for item in page])
        table.batch_write(deletes=[{PK: item[PK], SK: item[SK]} for item in page])
        context.spend(len(page))


def _history_point(item: dict[str, Any]) -> dict[str, Any]:
    """The same point (same identity: run, key, timestamp, step, value) in its metric's partition."""
    fields = HISTORY_V1.parse(item[SK])
    attributes = {name: item[name] for name in HISTORY_V1.attributes if name in item}
    return run_metrics.HISTORY.item(attributes, **fields)


# --- 4. logged-model metrics ------------------------------------------------------------------------------------


def move_model_metrics(context: Context, experiment_id: str) -> None:
    legacy = [
        item
        for item in table.iter_query(**LOGGED_MODEL.query("with_data", experiment_id=experiment_id))
        if item.get(ENTITY_TYPE) == MODEL_METRIC.type_name
    ]
    for start in range(0, len(legacy), PAGE):
        page = legacy[start : start + PAGE]
        table.batch_write(puts=[_model_point(item) for item in page])
        table.batch_write(deletes=[{PK: item[PK], SK: item[SK]} for item in page])
        context.spend(len(page))


def _model_point(item: dict[str, Any]) -> dict[str, Any]:
    fields = MODEL_METRIC_V1.parse(item[SK])
    attributes = {name: item[name] for name in (*MODEL_METRIC_V1.attributes, "model_id") if name in item}
    return MODEL_METRIC.item(attributes, **fields)


# --- 5. done ------------------------------------------------------------------------------------------------------


def record_moved(context: Context, experiment_id: str) -> None:
    _record(experiment_id, "version")
    context.log(f"{NAME}: experiment {experiment_id} moved")


def _record(experiment_id: str, attribute: str) -> None:
    table.update(
        EXPERIMENT_LAYOUT.key(experiment_id=experiment_id),
        "SET #a = :v, entity_type = :type",
        names={"#a": attribute},
        values={":v": TO, ":type": EXPERIMENT_LAYOUT.type_name},
    )


def has_layout_1_items(experiment_id: str) -> bool:
    """Whether a layout-1 item is left (cheap checks: a Query of one item per layout-1 prefix)."""
    queries = [LEGACY[name].query("all", experiment_id=experiment_id) for name in ("metric_history", *_DERIVED_V1)]
    return any(table.query(**query, limit=1) for query in queries)
