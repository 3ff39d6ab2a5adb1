"""Scheduled issue detection's dispatcher (MLflow 3.18's ``run_issue_detection_scheduler``), run by the monitor's
minute tick (MLflow polls every 15 minutes).

MLflow searches every experiment carrying a schedule tag on each pass. Here saving the schedule tag puts the
experiment's ``issue_schedule`` item, due at once, and a pass queries only the items due (``due`` at or before now).
Each is then handled as MLflow's ``_dispatch_if_due`` does, on the experiment's tags read strongly consistent: a
schedule seen for the first time is anchored (its first run is at its next fire time, not now), a retimed one is
re-anchored, and an occurrence that is due is claimed (the ``mlflow.issueDetection.scheduleState`` tag) and submitted
as MLflow's ``scheduled_issue_detection`` job with MLflow's params. The item then moves to the schedule's next fire
time; a paused or removed schedule leaves the index until the tag is saved again.

Nothing is submitted twice for one occurrence: the claim is one transaction conditioned on the state tag still being
what the pass read and on the item's ``due`` (a schedule saved meanwhile wins, and the next pass sees it). As in
MLflow, an occurrence is claimed before its job is submitted (a crash in between skips it; the next occurrence's
window still covers its traces), and one that is due while a detection run of the experiment is still going is left
unclaimed for a later pass. Under basic auth the job runs as the user who saved the schedule.
"""

from __future__ import annotations

import logging
from typing import Any

from serverless_mlflow import auth
from serverless_mlflow.core import clock
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import experiment_items, experiments, issue_schedule, issue_schedule_runs, job_kinds
from serverless_mlflow.store import jobs as job_store
from serverless_mlflow.store import runs as run_store
from serverless_mlflow.store.issue_schedule import State, Timing

log = logging.getLogger(__name__)

ISSUE_SCHEDULE = ENTITY["issue_schedule"]
# MAX_EXPERIMENTS_PER_PASS: the rest are due still, so the next pass takes them.
MAX_EXPERIMENTS_PER_PASS = 500
# The monitor's interval: a retimed schedule is re-anchored at the previous pass, as MLflow's is (its poll interval).
POLL_INTERVAL_MS = 60_000
# mlflow.utils.mlflow_tags: a detection run's type.
RUN_TYPE_TAG, ISSUE_DETECTION = "mlflow.runType", "issue_detection"
# MLFLOW_SERVER_JOB_DEFAULT_TIMEOUT's default: a detection run older than this no longer blocks a new one.
JOB_DEFAULT_TIMEOUT_MS = 3600 * 1000


def in_flight_detection_run(experiment_id: str, now_ms: int | None = None) -> str | None:
    """MLflow's ``in_flight_detection_run``: an active issue-detection run still RUNNING and younger than the job
    timeout (manual and scheduled detection never overlap)."""
    oldest = (clock.now_millis() if now_ms is None else now_ms) - JOB_DEFAULT_TIMEOUT_MS
    for view in run_store.experiment_runs(experiment_id):
        info = view.info
        if (
            view.tags.get(RUN_TYPE_TAG) == ISSUE_DETECTION
            and info.get("status") == "RUNNING"
            and info.get("lifecycle_stage") == run_store.ACTIVE
            and int(info.get("start_time") or 0) > oldest
        ):
            return str(info["run_id"])
    return None


def _due_items(now_ms: int) -> list[dict[str, Any]]:
    query = ISSUE_SCHEDULE.query("due", due=now_ms + 1).below()
    due: list[dict[str, Any]] = []
    for item in table.iter_query(**query):
        due.append(item)
        if len(due) >= MAX_EXPERIMENTS_PER_PASS:
            break
    return due


def _commit(item: dict[str, Any], tags: dict[str, str], state: State | None, due: int | None, job_id: str | None = None) -> None:
    """One transaction: the state tag (when given; conditioned on the value read) and the item's next ``due``
    (conditioned on the ``due`` read). Raises ``table.ConditionFailed`` when either moved meanwhile."""
    experiment_id, workspace = str(item["experiment_id"]), item.get("workspace") or job_store.DEFAULT_WORKSPACE
    moved = experiment_items.issue_schedule_item(experiment_id, workspace, due, item.get("created_by"))
    if job_id is not None:
        moved["job_id"] = job_id
    elif item.get("job_id"):
        moved["job_id"] = item["job_id"]
    operations = [table.put_op(moved, condition="#due = :due", names={"#due": "due"}, values={":due": item["due"]})]
    if state is not None and state.to_json() != tags.get(issue_schedule.STATE_TAG):
        previous = tags.get(issue_schedule.STATE_TAG)
        condition, names, values = (
            ("attribute_not_exists(pk)", None, None) if previous is None else ("#v = :previous", {"#v": "value"}, {":previous": previous})
        )
        value = state.to_json()
        operations += [
            table.put_op(experiment_items.tag_item(experiment_id, issue_schedule.STATE_TAG, value), condition, names, values),
            table.put_op(experiment_items.entry_tag_item(experiment_id, issue_schedule.STATE_TAG, value, workspace)),
        ]
    table.transact(operations)


def _settled_state(timing: Timing, state: State | None, now_ms: int) -> State:
    """The state before deciding what is due: anchored the first time, the timing adopted or re-anchored."""
    if state is None:
        return issue_schedule.synced_state(timing, None, now_ms)
    if state.timing is None:
        return issue_schedule.synced_state(timing, state, now_ms)
    if state.timing != timing.fingerprint:
        # Noticed after the edit: anchored at the previous pass, so an occurrence the edit placed in between runs now.
        return issue_schedule.reanchored(state, timing, now_ms - POLL_INTERVAL_MS)
    return state


def dispatch(item: dict[str, Any], now_ms: int) -> str | None:
    """Handle one due item; the job id submitted, if any."""
    experiment_id = str(item["experiment_id"])
    found = experiments.read_experiment(experiment_id)
    tags = {tag["key"]: tag["value"] for tag in found[1]} if found else {}
    timing = issue_schedule.parse_timing(tags.get(issue_schedule.SCHEDULE_TAG))
    if found is None or timing is None or issue_schedule.parse_paused(tags.get(issue_schedule.SCHEDULE_TAG)):
        _commit(item, tags, None, None)  # no schedule to run: out of the index until the tag is saved again
        return None
    read_state = issue_schedule.parse_state(tags.get(issue_schedule.STATE_TAG))
    state = _settled_state(timing, read_state, now_ms)
    if read_state is None or found[0].get("lifecycle_stage") != experiment_items.ACTIVE:
        # First seen (anchored: its first run is at its next fire time), or deleted (MLflow looks at active ones
        # only; looked at again at each fire time, so a restored experiment's schedule runs on).
        _commit(item, tags, state, issue_schedule.next_fire_time_ms(timing, now_ms))
        return None
    fire_time_ms = issue_schedule.due_occurrence_ms(timing, False, state, now_ms)
    if fire_time_ms is None:
        _commit(item, tags, state, state.next_fire_time_ms or issue_schedule.next_fire_time_ms(timing, state.last_fire_time_ms))
        return None
    if running := in_flight_detection_run(experiment_id, now_ms):
        log.info("issue detection of experiment %s is due at %d but run %s is still going", experiment_id, fire_time_ms, running)
        _commit(item, tags, state, item["due"])  # unclaimed: the next pass tries again
        return None
    creator = item.get("created_by")
    claimed = issue_schedule.claimed(state, timing, fire_time_ms, now_ms)
    if creator is None and auth.basic_enabled():
        log.warning("issue detection of experiment %s skipped: its schedule names no user to run as", experiment_id)
        _commit(item, tags, claimed, claimed.next_fire_time_ms)  # saving the schedule again names one
        return None
    params = issue_schedule_runs.job_params(experiment_id, tags, timing, fire_time_ms)
    job_id = job_store.new_job_id()
    _commit(item, tags, claimed, claimed.next_fire_time_ms, job_id)
    workspace = item.get("workspace") or job_store.DEFAULT_WORKSPACE
    job_queue.create_and_submit(job_kinds.SCHEDULED_ISSUE_DETECTION, params, None, creator, job_id=job_id, workspace=workspace)
    return job_id


def run_scheduler(now_ms: int | None = None) -> list[str]:
    """One pass over the schedules due; the job ids submitted. One experiment's failure (or a schedule saved while
    the pass read it) never stops the pass, as in MLflow."""
    now_ms = clock.now_millis() if now_ms is None else now_ms
    submitted: list[str] = []
    for item in _due_items(now_ms):
        try:
            with request_workspace.bound(item.get("workspace") or job_store.DEFAULT_WORKSPACE):
                if (job_id := dispatch(item, now_ms)) is not None:
                    submitted.append(job_id)
        except table.ConditionFailed:
            log.info("issue detection schedule of experiment %s changed during the pass; the next pass sees it", item["experiment_id"])
        except Exception:
            log.exception("issue detection of experiment %s could not be dispatched", item["experiment_id"])
    return submitted
