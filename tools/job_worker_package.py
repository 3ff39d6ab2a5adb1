"""Build the job worker's package and the shared layer for Lambda (arm64) from ``requirements/*.lock`` and print their
sizes; synth does the same (``infra/assets.py``), this shows the figures and fails over the size budget.

    python -m tools.job_worker_package           # for Lambda
    python -m tools.job_worker_package --host    # for this machine (the local runtime's built mode)
"""

from __future__ import annotations

import argparse

from infra import assets

# Lambda's limit for a function's unzipped code and layers together is 250 MiB; the worker keeps 50 MiB of it free
# for the layer's and MLflow's growth (tests/infra/test_built_assets.py holds the budget).
BUDGET_BYTES = 200 * 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", action="store_true", help="build for this machine instead of Lambda")
    target = assets.HOST if parser.parse_args().host else assets.RUNTIME
    assets.check_locks()
    layer, worker = assets.build_layer(target), assets.build_worker(target)
    total = layer.bytes + worker.bytes
    for name, built in (("shared layer", layer), ("job worker", worker)):
        print(f"{name}: {built.bytes / 2**20:.1f} MiB unzipped, {built.path} (asset hash {built.hash[:16]})")
    print(f"job worker + layer: {total / 2**20:.1f} MiB (budget {BUDGET_BYTES / 2**20:.0f} MiB, Lambda's limit 250 MiB)")
    if total > BUDGET_BYTES:
        raise SystemExit("the job worker and its layer exceed the size budget")


if __name__ == "__main__":
    main()
