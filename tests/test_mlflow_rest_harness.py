"""``tools/mlflow_rest_tests.py``, the harness for MLflow's own REST tests: what it says without MLflow's test
files, and how it compares the two runs' JUnit results (the runs themselves need MLFLOW_TESTS_DIR and take tens
of minutes: ``make test-mlflow-rest``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools import mlflow_rest_tests

ROOT = Path(__file__).resolve().parent.parent


def test_without_mlflow_tests_dir_says_how_to_get_them() -> None:
    env = {name: value for name, value in os.environ.items() if name != "MLFLOW_TESTS_DIR"}
    done = subprocess.run([sys.executable, "-m", "tools.mlflow_rest_tests"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    import mlflow

    assert f"git clone --depth 1 --branch v{mlflow.__version__} https://github.com/mlflow/mlflow" in done.stderr
    assert "MLFLOW_TESTS_DIR=" in done.stderr


def _junit(path: Path, cases: dict[str, str]) -> Path:
    body = {"passed": "", "failed": "<failure message='x'/>", "error": "<error message='x'/>", "skipped": "<skipped/>"}
    rows = "".join(
        f"<testcase classname='tests.tracking.test_rest_tracking' name='{name}'>{body[outcome]}</testcase>"
        for name, outcome in cases.items()
    )
    path.write_text(f"<testsuites><testsuite name='pytest'>{rows}</testsuite></testsuites>")
    return path


def test_report_counts_stock_passes_and_lists_what_we_fail(tmp_path: Path) -> None:
    stock = mlflow_rest_tests.outcomes(
        _junit(
            tmp_path / "stock.xml",
            {"test_a[sqlalchemy]": "passed", "test_b": "passed", "test_c": "failed", "test_d": "skipped", "test_e": "passed"},
        )
    )
    ours = mlflow_rest_tests.outcomes(
        _junit(tmp_path / "ours.xml", {"test_a[sqlalchemy]": "passed", "test_b": "error", "test_c": "passed", "test_d": "passed"})
    )
    assert ours["test_b"] == "error"
    text = mlflow_rest_tests.report(stock, ours)
    assert "passes 3 of 5 tests" in text
    assert "mlflow-serverless passes 1 of those 3; fails 2." in text
    failing = text.split("## Stock passes, we fail")[1].split("##")[0]
    assert "- test_b (error)" in failing
    assert "- test_e (not run)" in failing
    assert "test_a" not in failing and "test_c" not in failing
