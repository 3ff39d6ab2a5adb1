"""A newcomer's first ten minutes: a fresh clone, the README's commands as written, the UI and a logged run.

The repository is cloned into a temporary directory (with the checkout's uncommitted changes to tracked files
applied, so a developer tests what they are about to commit; CI's checkout has none) and the two command
blocks the README marks (``<!-- newcomer: server -->`` and ``<!-- newcomer: client -->``) are run with bash
in that clone, in an environment without this test session's variables: ``make serve`` builds its own
``.venv`` and ``node_modules`` there (from the machine's warm pip and npm caches) and serves; the client
command logs a run with the ``.venv``'s mlflow. The only change to the commands is the port: the README's
5000 becomes a free port (``PORT`` for make, the URL for the client), so that runs side by side never
collide. Then the web UI's index page is served and the UI's own search finds the logged run.
"""

from __future__ import annotations

import re
import subprocess

import pytest
import requests

from tests.newcomer.conftest import README_PORT, Newcomer, readme_block

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("newcomer")]


def test_the_readme_commands_work_as_written_on_a_fresh_clone(newcomer: Newcomer) -> None:
    url = newcomer.url
    client_command = readme_block("client").replace(f"127.0.0.1:{README_PORT}", f"127.0.0.1:{newcomer.port}")
    client = subprocess.run(
        ["bash", "-c", client_command], cwd=newcomer.clone, env=newcomer.env, capture_output=True, text=True, timeout=600, check=False
    )
    assert client.returncode == 0, client.stdout + client.stderr
    assert client.stdout.strip().splitlines()[-1] == "{'loss': 0.5}"

    index = requests.get(f"{url}/", timeout=60)
    assert index.status_code == 200 and '<div id="root"' in index.text
    found = requests.post(f"{url}/ajax-api/2.0/mlflow/runs/search", json={"experiment_ids": ["0"]}, timeout=60).json()
    runs = [r for r in found.get("runs", []) if r["info"].get("run_name") == "hello"]
    assert len(runs) == 1 and runs[0]["data"]["metrics"][0]["key"] == "loss" and runs[0]["data"]["metrics"][0]["value"] == 0.5
    output = newcomer.output_with(r'"GET / HTTP/1.1" 200 \d+ ms')
    # What the terminal showed: the prerequisites up front, each set-up step with its usual duration, then one
    # access line per request.
    assert output.startswith("make serve needs: Python 3.11+")
    assert re.search(r"==> Python packages for serving.*\(usually ", output)
    assert re.search(r'"POST /api/2.0/mlflow/runs/create HTTP/1.1" 200 \d+ ms', output)
    assert re.search(r'"GET / HTTP/1.1" 200 \d+ ms', output)
