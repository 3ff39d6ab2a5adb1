"""Jobs throughput: N trivial jobs (``test_echo``, ``functions/job_worker/kinds/testing.py``) submitted through the
jobs API and run by the local runner (the SQS queue and the job worker), jobs per second and DynamoDB work per
job (``table.STATS``).

The local runtime's background workers do not count their DynamoDB work (deployed, they are other functions'
invocations); here the runtime starts none (``JOB_WORKER_CONCURRENCY=0``) and the section delivers the queue's
messages to the worker itself, one at a time as the local worker does, so every request is counted."""

from __future__ import annotations

import os
import time
from typing import Any

import requests

from tools.bench_sections import Figures, table

TITLE = "Jobs throughput"
JOBS = "/ajax-api/3.0/jobs"


def section(context: Any) -> Figures:
    from serverless_mlflow.storage.table import STATS
    from tools import bench

    n = int(os.environ.get("BENCH_JOBS", "100"))
    saved = {name: os.environ.get(name) for name in ("JOB_TEST_KINDS", "JOB_WORKER_CONCURRENCY")}
    os.environ.update(JOB_TEST_KINDS="true", JOB_WORKER_CONCURRENCY="0")
    runtime = bench.fresh_runtime()
    session = requests.Session()
    try:
        source = runtime.jobs.source

        def submit(i: int) -> str:
            response = session.post(f"{runtime.url}{JOBS}/", json={"job_name": "test_echo", "params": {"i": i}}, timeout=60)
            response.raise_for_status()
            return response.json()["job_id"]

        # Warm-up: the jobs function and the worker's first job (imports, clients), unmeasured.
        submit(-1)
        source.deliver_once()
        STATS.reset()
        started = time.perf_counter()
        ids = [submit(i) for i in range(n)]
        submitted = time.perf_counter()
        submit_work = STATS.snapshot()
        STATS.reset()
        delivered, deadline = 0, time.monotonic() + 600
        while delivered < n and time.monotonic() < deadline:
            delivered += source.deliver_once(wait_seconds=1)
        finished = time.perf_counter()
        run_work = STATS.snapshot()
        statuses = [session.get(f"{runtime.url}{JOBS}/{job_id}", timeout=60).json()["status"] for job_id in ids]
        succeeded = statuses.count("SUCCEEDED")
        if succeeded != n:
            raise RuntimeError(f"{succeeded} of {n} jobs succeeded: {sorted(set(statuses))}")
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())

        def per_job(work: dict[str, Any]) -> str:
            by_type = ", ".join(f"{k} {v / n:g}" for k, v in sorted(work["requests"].items()))
            total = sum(work["requests"].values()) / n
            return f"{total:g} ({by_type}); items read {work['items_read'] / n:g}, written {work['items_written'] / n:g}"

        rows = [
            (f"{n} jobs submitted (`POST {JOBS}/`), then run one after another by one worker", f"{finished - started:.1f} s"),
            ("submitted per second (the jobs API: the job's item and its SQS message)", f"{n / (submitted - started):.1f}"),
            ("run per second by one worker (receive, run, record SUCCEEDED)", f"**{n / (finished - submitted):.1f}**"),
            ("end to end, jobs per second", f"{n / (finished - started):.1f}"),
            ("DynamoDB requests per job: submit", per_job(submit_work)),
            ("DynamoDB requests per job: run (worker)", per_job(run_work)),
            ("load average (1 / 5 / 15 min) after", load),
        ]
        return Figures([table(rows)])
    finally:
        runtime.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
