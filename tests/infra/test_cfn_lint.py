"""cfn-lint on every synthesized template (the stack and its nested stacks, default and largest configuration):
0 errors. Warnings W3005 (a DependsOn that a GetAtt already implies) are CDK's own output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.test_stack import Synth

pytestmark = pytest.mark.xdist_group("infra")


def _cfn_lint() -> str:
    found = os.environ.get("CFN_LINT") or shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    assert found, "cfn-lint is not installed in this venv: pip install -r requirements-dev.txt (it pins cfn-lint)"
    return found


@pytest.mark.parametrize("which", ["default", "largest"])
def test_cfn_lint_finds_no_error_in_any_template(synth: Synth, largest: Synth, which: str) -> None:
    templates = sorted(str(p) for p in (synth if which == "default" else largest).outdir.glob("*.template.json"))
    assert len(templates) >= 2  # the stack and its monitoring nested stack (and the canary's, in the largest)
    result = subprocess.run([_cfn_lint(), "--format", "parseable", *templates], capture_output=True, text=True, timeout=600, check=False)
    errors = [line for line in result.stdout.splitlines() if re.search(r":E\d{4}:", line)]
    # Exit status bit 2: errors (bits 4 and 8: warnings, informational); anything above 8 is a crash.
    assert not errors and not result.returncode & 2 and result.returncode < 16, result.stdout[-4000:] + result.stderr[-2000:]
