"""`evalsuite teacher-queries --from-data` and the judge command's user errors (no server needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EVALSUITE = [sys.executable, "-m", "evalsuite"]
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVALSUITE, *args], capture_output=True, text=True, timeout=300, env=ENV)


def test_teacher_queries_from_musique_gold_decompositions(benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "teacher.jsonl"
    result = _run("teacher-queries", "--task", "musique", "--split", "dev_ctx", "--data-dir", str(benchmarks_dir), "--from-data", "--limit", "3", "-o", str(out))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["2hop__673655_316668", "2hop__574419_270105", "2hop__403712_793210"]
    assert rows[2]["teacher_queries"] == ["Edward Baring, 1st Baron Revelstoke >> father", "Henry Baring >> father"]
    assert all(r["source"] == "question_decomposition" and r["error"] is None for r in rows)


def test_teacher_queries_needs_exactly_one_source(benchmarks_dir: Path, tmp_path: Path) -> None:
    result = _run("teacher-queries", "--task", "musique", "--split", "dev_ctx", "--data-dir", str(benchmarks_dir), "-o", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2 and "exactly one of --from-data and --panel" in result.stderr


def test_coverage_without_teacher_queries_is_one_clear_error(trajectories_dir: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_24_17_37*.json")
    assert _run("score", str(source), "-o", str(tmp_path)).returncode == 0
    panel = tmp_path / "panel.yaml"
    panel.write_text("judges:\n  - {name: a, model: m, base_url: 'http://127.0.0.1:9/v1'}\n")
    bad_teacher = tmp_path / "teacher.jsonl"
    bad_teacher.write_text('{"id": "test_0", "teacher_queries": ["a"]}\n{"id": "test_1", "teacher_queries": "not a list"}\n')
    run = str(tmp_path / source.stem)
    result = _run("judge", run, "--panel", str(panel), "--metrics", "coverage", "--teacher-queries", str(bad_teacher), "--cache", str(tmp_path / "c.sqlite"))
    assert result.returncode == 2 and "teacher.jsonl:2: expected" in result.stderr and "Traceback" not in result.stderr
    result = _run("judge", run, "--panel", str(panel), "--metrics", "coverage", "--data-dir", str(benchmarks_dir), "--cache", str(tmp_path / "c.sqlite"))
    assert result.returncode == 2 and "125 of 125 examples have no teacher queries" in result.stderr  # Bamboogle has no decompositions
    result = _run("judge", run, "--panel", str(panel), "--metrics", "fluency", "--cache", str(tmp_path / "c.sqlite"))
    assert result.returncode == 2 and "unknown judge metrics ['fluency']" in result.stderr
    assert not (tmp_path / source.stem / "judgments.jsonl").exists()
