"""What `evalsuite run` shows while it runs when stderr is a log, not a terminal: one progress line per few seconds
with the elapsed and estimated time, and the last example's line."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.agent.test_run_directory import NQ_RECORDING


def test_a_run_logged_to_a_file_prints_progress_lines_not_bars(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
         "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir),
         "--limit", "5", "--schedule", "sync", "--batch-size", "2", "-o", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "examples: 5 to run" in lines
    last = [line for line in lines if line.startswith("examples 5/5 ·")]
    assert len(last) == 1 and re.fullmatch(r"examples 5/5 · \d+:\d\d elapsed · about 0:00 left · nq EM \d+\.\d", last[0]), last
    assert not any("━" in line for line in lines)  # no bar characters in a log


def test_a_run_prints_the_command_that_opens_its_examples(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
         "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir),
         "--limit", "2", "-o", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    assert f"see every example: evalsuite view {out} --open" in result.stdout.splitlines()
