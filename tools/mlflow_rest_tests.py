"""MLflow's own REST tests against stock ``mlflow server`` (sqlite) and against this server; prints and writes
which tests stock passes, how many of those we pass, and the list of those we fail.

    MLFLOW_TESTS_DIR=/path/to/mlflow-checkout python -m tools.mlflow_rest_tests [-k EXPR] [--target stock|ours|both]

MLflow's test code is not part of this repository: ``MLFLOW_TESTS_DIR`` is a directory laid out as MLflow's tree
(``tests/__init__.py``, ``tests/conftest.py``, ``tests/tracking/test_rest_tracking.py`` and the modules it imports),
e.g. a checkout of the tag that matches the installed client. Results go to ``build/mlflow-rest/``
(``stock.xml``, ``ours.xml`` JUnit files and ``report.md``; ``MLFLOW_REST_OUT`` names another directory). Kept out of ``make test``: the two runs take tens
of minutes (a fresh runtime process per test on our side).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tools.mlflow_rest_plugin import EXCLUDED

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("MLFLOW_REST_OUT") or ROOT / "build" / "mlflow-rest")
TEST_FILE = "tests/tracking/test_rest_tracking.py"
HOW_TO_GET = (
    "MLFLOW_TESTS_DIR is not set (or holds no {test_file}). MLflow's tests are not in its sdist; get them with\n"
    "  git clone --depth 1 --branch v{version} https://github.com/mlflow/mlflow /path/to/mlflow\n"
    "then run: MLFLOW_TESTS_DIR=/path/to/mlflow make test-mlflow-rest"
)


def run_target(tests_dir: Path, target: str, extra: list[str]) -> Path:
    """One pytest run of MLflow's REST tests against ``target``; returns its JUnit XML."""
    OUT.mkdir(parents=True, exist_ok=True)
    junit = OUT / f"{target}.xml"
    # No network here: MLflow's servers read the model catalog bundled in the wheel (what ours ships) instead of
    # fetching the latest one (MLflow's default MLFLOW_MODEL_CATALOG_URI), which hangs the gateway tests.
    env = dict(
        os.environ,
        MLFLOW_MODEL_CATALOG_URI="",
        MLFLOW_REST_TARGET=target,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "-p",
        "tools.mlflow_rest_plugin",
        "-q",
        "-W",
        "ignore",
        f"--junitxml={junit}",
        TEST_FILE,
        *extra,
    ]
    print(f"== {target}: {' '.join(command[3:])}", flush=True)
    subprocess.run(command, cwd=tests_dir, env=env, check=False)
    return junit


def outcomes(junit: Path) -> dict[str, str]:
    """Test id (name with parameters) -> passed | failed | error | skipped."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = "failed" if "failure" in kinds else "error" if "error" in kinds else "skipped" if "skipped" in kinds else "passed"
        found[case.get("name", "")] = outcome
    return found


def report(stock: dict[str, str], ours: dict[str, str]) -> str:
    stock_passes = sorted(name for name, outcome in stock.items() if outcome == "passed")
    we_pass = [name for name in stock_passes if ours.get(name) == "passed"]
    we_fail = [name for name in stock_passes if ours.get(name) != "passed"]
    import mlflow

    lines = [
        f"# MLflow's REST tests ({TEST_FILE}), {datetime.date.today().isoformat()}, mlflow client {mlflow.__version__}",
        "",
        f"stock `mlflow server` (sqlite) passes {len(stock_passes)} of {len(stock)} tests;",
        f"mlflow-serverless passes {len(we_pass)} of those {len(stock_passes)}; fails {len(we_fail)}.",
        "",
        "## Stock passes, we fail",
        *(f"- {name} ({ours.get(name, 'not run')})" for name in we_fail),
        "",
        "## Excluded from both runs",
        *(f"- {name}: {reason}" for name, reason in sorted(EXCLUDED.items())),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``[--target stock|ours|both] [pytest arguments...]``: everything but ``--target`` goes to pytest."""
    target = "both"
    if "--target" in argv:
        at = argv.index("--target")
        target = argv[at + 1]
        argv = argv[:at] + argv[at + 2 :]
    if target not in ("stock", "ours", "both"):
        print(f"--target must be stock, ours or both, not {target!r}", file=sys.stderr)
        return 2
    tests_dir = Path(os.environ.get("MLFLOW_TESTS_DIR", ""))
    if not os.environ.get("MLFLOW_TESTS_DIR") or not (tests_dir / TEST_FILE).is_file():
        import mlflow

        print(HOW_TO_GET.format(test_file=TEST_FILE, version=mlflow.__version__), file=sys.stderr)
        return 2
    for name in ("stock", "ours") if target == "both" else (target,):
        run_target(tests_dir, name, argv)
    if not all((OUT / f"{name}.xml").is_file() for name in ("stock", "ours")):
        return 0
    text = report(outcomes(OUT / "stock.xml"), outcomes(OUT / "ours.xml"))
    (OUT / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
