"""Migration step ``issue_schedules``: every experiment carrying an issue-detection schedule tag has the
monitor's ``issue_schedule`` item (``jobs.issue_detection_dispatch``).

Releases before scheduled detection was dispatched kept the schedule in the experiment's tags only. The monitor
finds schedules through their items (a Query of the items due, never a Scan of experiments), so a schedule saved
then would never run until it is saved again. Per experiment: its tags are read, and when a schedule tag is there
an item due now is put, on condition that none exists (an item the request path or the dispatcher keeps is never
moved). The monitor's next pass then anchors, retimes, pauses or drops it as MLflow's dispatcher does. The item
names no user: under basic auth such a schedule is skipped with a warning until someone saves it again (the
user who saved it is not recorded in the tag).

Online, idempotent and resumable; recorded in ``CONFIG / CFG#layout`` when every experiment has been looked at.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow.core import clock
from serverless_mlflow.storage import layout, table
from serverless_mlflow.store import experiment_items, issue_schedule
from serverless_mlflow.store import experiments as experiment_store

STEP = layout.ISSUE_SCHEDULES


def index_schedule(experiment_id: str) -> bool:
    """Put the experiment's schedule item if it has a schedule tag and no item; whether one was put."""
    found = experiment_store.read_experiment(experiment_id)
    if found is None:
        return False
    meta, tags = found
    if not any(tag["key"] == issue_schedule.SCHEDULE_TAG for tag in tags):
        return False
    workspace = meta.get("workspace") or experiment_items.DEFAULT_WORKSPACE
    item = experiment_items.issue_schedule_item(experiment_id, workspace, clock.now_millis(), None)
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        return False
    return True


def run(experiment_ids: Iterable[str], record: bool = True) -> int:
    """Index every scheduled experiment of these; record the step. Returns how many items were put."""
    put = sum(index_schedule(experiment_id) for experiment_id in experiment_ids)
    if record:
        layout.record_steps([STEP])
    return put
