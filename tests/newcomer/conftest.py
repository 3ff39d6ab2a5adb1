"""One fresh clone serving for both newcomer tests: setting up a clone (its own ``.venv`` and ``node_modules``) and
starting ``make serve`` takes minutes on a 2-core box, and each test checks a different thing of the same start.

The clone serves with the README's server command as written (only the port changes), in a newcomer's environment
(``tools.fresh_clone``) plus the variables of the mock OpenAI-compatible provider that answers test_serve_jobs'
judge and issue detection (a newcomer's OpenAI settings: nothing of the set-up or the start reads them). Both tests
are in the ``newcomer`` xdist group, so the package-scoped fixture starts once (and stops after the second).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.review.test_issue_detection_invoke import DISCOVERY_SCRIPT
from tools.fresh_clone import clone_checkout, free_port, newcomer_environment, serving
from tools.mock_llm import MockLLM

ROOT = Path(__file__).resolve().parents[2]
README_PORT = "5000"


def readme_block(marker: str) -> str:
    """The commands of the bash block that follows ``<!-- newcomer: <marker> ... -->`` in README.md."""
    text = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- newcomer: {marker}\b[^>]*-->\s*```bash\n(.*?)```", text, re.DOTALL)
    assert found, f"README.md has no bash block marked newcomer: {marker}"
    return found.group(1).strip()


@dataclass
class Newcomer:
    clone: Path
    url: str
    port: int
    env: dict[str, str]
    log: Path

    def output_with(self, pattern: str, timeout: float = 60) -> str:
        """The terminal output once it shows ``pattern`` (a request's access line follows its answer closely)."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, output := self.log.read_text(errors="replace")) and time.monotonic() < deadline:
            time.sleep(0.2)
        return output


@pytest.fixture(scope="package")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Newcomer]:
    llm = MockLLM().start()
    for marker, answer in DISCOVERY_SCRIPT:
        llm.script(marker, answer)
    env = {**newcomer_environment(), "OPENAI_API_KEY": "test-key", "OPENAI_API_BASE": f"{llm.url}/v1"}
    clone = clone_checkout(tmp_path_factory.mktemp("newcomer") / "mlflow-serverless")
    port = free_port()
    log = clone / "serve.log"
    try:
        with serving(clone, env, log, command=readme_block("server"), port=port) as url:
            yield Newcomer(clone, url, port, env, log)
    finally:
        llm.stop()
