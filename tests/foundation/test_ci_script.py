"""`.ci/run`'s exit trap: it must never turn a passing CI into a failing one, nor a failing one into a pass.

A stop's CI once printed "CI passed" and still ended with status 1: under `set -e`, `pkill` finding no process of
an ended background job failed inside the trap. These run the script's own `stop_jobs` under the same shell options.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

CI_RUN = Path(__file__).resolve().parents[2] / ".ci" / "run"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("pkill") is None, reason="needs bash and pkill")


def stop_jobs_function() -> str:
    match = re.search(r"^stop_jobs\(\) \{\n.*?^\}\n", CI_RUN.read_text(encoding="utf-8"), re.S | re.M)
    assert match, ".ci/run defines no stop_jobs() function for its EXIT trap"
    return match.group(0)


def run_script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir()
    script = f"""set -euo pipefail
WORK={work}
VLLM_INSTALL="" WITHOUT_SHARED="" MYPY=""
{stop_jobs_function()}
trap stop_jobs EXIT
sleep 0.1 & MYPY=$!
wait "$MYPY"
sleep 30 & WITHOUT_SHARED=$!
{body}
"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=20)


def test_the_trap_keeps_a_passing_run_passing_with_ended_and_running_jobs(tmp_path: Path) -> None:
    done = run_script(tmp_path, 'echo "CI passed"')
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "work").exists()  # the trap got to its cleanup


def test_the_trap_keeps_a_failing_run_failing(tmp_path: Path) -> None:
    done = run_script(tmp_path, "false")
    assert done.returncode == 1
    assert not (tmp_path / "work").exists()
