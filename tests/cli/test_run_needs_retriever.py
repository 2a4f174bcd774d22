"""A search method run without --retriever is refused in one line naming --retriever (issue 39.5: a forgotten
--retriever ran silently); `--retriever none` runs it without one on purpose, and methods that never search need none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.agent.test_run_directory import NQ_RECORDING

REFUSAL = "error: --method search-r1 searches, but no --retriever was given"


def replay(trajectories_dir, benchmarks_dir, out, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
         "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--limit", "2", "-o", str(out),
         *options],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300", "NO_COLOR": "1"},
    )


def test_a_search_method_without_a_retriever_is_refused_before_anything_runs(tmp_path, trajectories_dir, benchmarks_dir):
    result = replay(trajectories_dir, benchmarks_dir, tmp_path / "run")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "  hint:"))]
    assert errors == [
        REFUSAL,
        "  hint: pass --retriever INDEX_DIR, http://host:port/retrieve or adqa; --retriever none runs it without retrieval on purpose",
    ]
    assert not (tmp_path / "run").exists()


def test_retriever_none_runs_it_without_retrieval_on_purpose(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = replay(trajectories_dir, benchmarks_dir, out, "--retriever", "none")
    assert REFUSAL not in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run_config"]["retriever"] == "none" and not manifest.get("retriever")
    # the recorded model searches: with no retriever that search is the run's one-line error, after the run started
    assert "the model searched but no retriever is configured" in result.stderr


def test_a_method_that_never_searches_needs_no_retriever(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = replay(trajectories_dir, benchmarks_dir, out, "--method", "direct", "--allow-failures")
    assert "no --retriever was given" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 2
