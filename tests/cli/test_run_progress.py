"""What `evalsuite run` shows when stderr is a log, not a terminal: one progress line per few seconds with the
elapsed and estimated time, and the last example's line; what it prints at the end: the command that opens its
examples and the plot it wrote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.agent.test_run_directory import NQ_RECORDING
from tests.conftest import requires_extra


def replay_run(trajectories_dir: Path, benchmarks_dir: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    """`evalsuite run` over recorded NQ trajectories in a subprocess, stdout and stderr captured (not terminals)."""
    result = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
         "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir),
         "-o", str(out), *options],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    return result


def test_a_run_logged_to_a_file_prints_progress_lines_not_bars(tmp_path, trajectories_dir, benchmarks_dir):
    result = replay_run(trajectories_dir, benchmarks_dir, tmp_path / "run", "--limit", "5", "--schedule", "sync", "--batch-size", "2")
    lines = result.stderr.splitlines()
    assert "examples: 5 to run" in lines
    last = [line for line in lines if line.startswith("examples 5/5 ·")]
    # issue 39: the line counts the tokens generated, so a batch in flight shows progress before it finishes
    assert len(last) == 1 and re.fullmatch(r"examples 5/5 · \d+:\d\d elapsed · about 0:00 left · [\d,]+ tokens generated · nq EM \d+\.\d", last[0]), last
    assert not any("━" in line for line in lines)  # no bar characters in a log


@requires_extra("site", "matplotlib")  # metrics.png is drawn where matplotlib is installed
def test_a_run_prints_the_view_command_and_writes_its_plot(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    stdout = replay_run(trajectories_dir, benchmarks_dir, out, "--limit", "3").stdout.splitlines()
    assert f"see every example: evalsuite view {out} --open" in stdout
    assert f"plot: {out / 'metrics.png'}" in stdout
    assert (out / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unknown_method_is_refused_before_any_model_is_loaded(tmp_path):
    result = subprocess.run([sys.executable, "-m", "evalsuite", "run", "--method", "zerosearch", "-o", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["error: unknown method 'zerosearch'",
                                          "  hint: ZeroSearch checkpoints use Search-R1's tags: pass --method search-r1"]
    assert not (tmp_path / "run").exists()


@requires_extra("site", "matplotlib")  # metrics.png is drawn where matplotlib is installed
def test_a_json_run_writes_its_plot_too(tmp_path, trajectories_dir, benchmarks_dir):
    import json

    out = tmp_path / "run"
    payload = json.loads(replay_run(trajectories_dir, benchmarks_dir, out, "--limit", "2", "--json").stdout)
    assert payload["plot"] == str(out / "metrics.png") and (out / "metrics.png").is_file()
