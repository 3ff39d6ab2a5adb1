"""Server-wide settings in the CONFIG partition: changed by the operator command, seen by a running server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import requests

from tests.conftest import ROOT, runtime_process, unique

pytestmark = pytest.mark.e2e

PRIVATE_HOOK = {"name": "local", "url": "http://127.0.0.1:9/hook", "events": [{"entity": "REGISTERED_MODEL", "action": "CREATED"}]}


def _settings(table: str, *args: str) -> str:
    env = {**os.environ, "TABLE_NAME": table}
    done = subprocess.run([sys.executable, "-m", "tools.settings", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_webhook_targets_follow_the_stored_settings_without_a_restart(server: str) -> None:
    table = unique("settings")
    # No MLFLOW_WEBHOOK_* in the environment: MLflow's defaults (https only, public addresses only).
    with runtime_process({"TABLE_NAME": table, "BUCKET_NAME": unique("settings"), "SETTINGS_MAX_AGE_SECONDS": "0"}) as url:
        hooks = f"{url}/api/2.0/mlflow/webhooks"
        refused = requests.post(hooks, json=PRIVATE_HOOK, timeout=30)
        assert refused.status_code == 400
        assert refused.json()["message"] == "Invalid webhook URL scheme: 'http'. Allowed schemes are: https."
        _settings(table, "set", "MLFLOW_WEBHOOK_ALLOWED_SCHEMES=http,https", "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=true")
        assert requests.post(hooks, json=PRIVATE_HOOK, timeout=30).status_code == 200
        _settings(table, "unset", "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS")
        refused = requests.post(hooks, json=PRIVATE_HOOK, timeout=30)
        assert refused.status_code == 400
        assert "must not resolve to a non-public IP address" in refused.json()["message"]
        shown = _settings(table, "show")
        assert '"MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https"' in shown


def test_the_command_refuses_unknown_settings_and_bad_values(server: str) -> None:
    env = {**os.environ, "TABLE_NAME": unique("settings")}
    for args in (
        ["set", "NOT_A_SETTING=1"],
        ["set", "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=maybe"],
        ["set", "MLFLOW_WEBHOOK_REQUEST_TIMEOUT=-3"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "tools.settings", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (args, done.stdout, done.stderr)
