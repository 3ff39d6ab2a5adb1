"""W1 against ``mlflow server`` in the same run, its DynamoDB requests, and where the runtime's time goes."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, table
from tools.workload_bench import LABEL, PASSES, measure_requests, measure_walls, median

TITLE = "W1: the client workload against stock mlflow server"


def section(context: Any) -> Figures:
    walls = measure_walls()
    rows = [
        (f"pass {i + 1}: make serve / mlflow server (sqlite)", f"{o:.1f} s / {r:.1f} s = {o / r:.1f}x")
        for i, (o, r) in enumerate(zip(walls.ours, walls.reference, strict=True))
    ]
    rows.append(("median ratio (target <= 2x)", f"{median(walls.ratios):.1f}x"))
    rows.append(("load average (1 / 5 / 15 min) after", " / ".join(f"{x:.1f}" for x in walls.load)))

    profile = measure_requests()
    callers = profile.by_caller()
    requests = [(f"{caller}", f"{n:,} requests, {seconds:.1f} s waiting on the engine") for caller, (n, seconds) in sorted(callers.items())]
    total = sum(n for n, _ in callers.values())
    requests.append(("all", f"{total:,} requests for {profile.http_requests} HTTP requests"))
    by_type: dict[str, int] = {}
    for key, count in profile.requests.items():
        caller, operation = key.split()[1], key.split()[2].split(":")[1]
        by_type[f"{caller} {operation}"] = by_type.get(f"{caller} {operation}", 0) + count
    requests += [(f"  {key}", f"{count:,}") for key, count in sorted(by_type.items(), key=lambda kv: -kv[1])]

    engine_functions = callers.get("functions", (0, 0.0))[1]
    engine_drain = callers.get("indexer", (0, 0.0))[1] + callers.get("stream-follower", (0, 0.0))[1]
    function_s, drain_s = profile.seconds["function"], profile.seconds["drain"]
    time_rows = [
        ("W1 wall, in-process runtime", f"{profile.wall:.1f} s"),
        (
            "functions (handlers, from event to response)",
            f"{function_s:.1f} s, of which {engine_functions:.1f} s waiting on DynamoDB Local",
        ),
        ("sync drain (stream reads + the indexer)", f"{drain_s:.1f} s, of which {engine_drain:.1f} s waiting on DynamoDB Local"),
        ("the rest (HTTP front, event building, the client)", f"{max(0.0, profile.wall - function_s - drain_s):.1f} s"),
    ]
    # workload.md: the wall-time table, then the requests by caller, then where the time goes.
    return Figures(
        [table(rows), table(requests, ("caller / operation", "requests")), table(time_rows, ("part", "time"))],
        {"label": LABEL, "passes": str(PASSES)},
    )
