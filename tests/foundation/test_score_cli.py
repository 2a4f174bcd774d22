"""`evalsuite score` and `evalsuite tasks` through the real console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.runs import RunDirectory

EVALSUITE = [sys.executable, "-m", "evalsuite"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVALSUITE, *args], capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def test_score_reproduces_every_recorded_prediction_and_score(trajectories_dir: Path, tmp_path: Path) -> None:
    files = sorted(str(p) for p in trajectories_dir.glob("*.json"))
    result = _run("score", *files, "--check-recorded", "-o", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    # ✓ only for what was compared, with the counts of each kind (issue 38: the old "every recorded prediction ...
    # reproduced" line also showed for files that record nothing)
    checked = [line for line in result.stdout.splitlines() if line.startswith("✓ ")]
    assert len(checked) == 6 and all("reproduced:" in line and "predictions" in line for line in checked), checked
    assert not any("differs:" in line for line in checked) and "nothing recorded to check" not in result.stdout
    run = RunDirectory(tmp_path / "nq_2026_04_28_16_43_search_r1_base_seed1")
    metrics = run.read_metrics()
    assert metrics.tasks["nq"].n == 1000
    recorded = json.loads(Path(files[4]).read_text())
    assert metrics.tasks["nq"].metrics["em"].mean == pytest.approx(sum(x["output"]["metric_score"]["em"] for x in recorded) / 1000)
    manifest = run.read_manifest()
    assert manifest.kind == "import" and manifest.source["n"] == 1000 and len(manifest.source["sha256"]) == 64
    record = run.read_predictions()[0]
    assert record.turns and record.turns[0].query and record.metrics["n_searches"] >= 1


def test_check_recorded_fails_and_lists_differences_when_a_score_was_tampered(trajectories_dir: Path, tmp_path: Path) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_29*.json")
    items = json.loads(source.read_text())
    items[3]["output"]["metric_score"]["em"] = 1.0 - items[3]["output"]["metric_score"]["em"]
    items[5]["output"]["pred"] = "something else"
    tampered = tmp_path / "bamboogle_tampered.json"
    tampered.write_text(json.dumps(items))
    result = _run("score", str(tampered), "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "2 differences" in result.stdout
    assert f"{items[3]['id']}: em" in result.stdout and f"{items[5]['id']}: prediction" in result.stdout
    # the run directory was still written: nothing is lost
    assert len(RunDirectory(tmp_path / "out" / "bamboogle_tampered").read_predictions()) == 125


def test_rescoring_a_run_directory_recomputes_metrics(trajectories_dir: Path, tmp_path: Path) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_28*.json")
    assert _run("score", str(source), "-o", str(tmp_path / "a")).returncode == 0
    first = tmp_path / "a" / source.stem
    # corrupt a stored metric, then rescore the run directory into a new place
    lines = (first / "predictions.jsonl").read_text().splitlines()
    obj = json.loads(lines[0])
    obj["metrics"]["em"] = 0.5
    lines[0] = json.dumps(obj)
    (first / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    result = _run("score", str(first), "-o", str(tmp_path / "b"))
    assert result.returncode == 0, result.stderr
    rescored = RunDirectory(tmp_path / "b" / source.stem).read_predictions()
    assert rescored[0].metrics["em"] in (0.0, 1.0)
    assert RunDirectory(tmp_path / "b" / source.stem).read_manifest().model_extra["rescored_from"] == str(first.resolve())


def test_score_user_errors_are_one_clear_message(tmp_path: Path) -> None:
    bad = tmp_path / "nq_bad.json"
    bad.write_text('[{"id": "1", "question": "q"}]')
    result = _run("score", str(bad), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    # no layout accounts for a record without an output: one line saying which fields were looked for and how to map them
    # issue 38: the error names the keys found and the nearest layout, with what it lacks
    assert "item 0: unknown result layout (keys id, question); nearest layout sequential (looks for output.pred; lacks output.pred)" in result.stderr
    assert "--fields prediction=PATH" in result.stderr
    assert "Traceback" not in result.stderr
    unknown = tmp_path / "mystery.json"
    shutil.copy(bad, unknown)
    result = _run("score", str(unknown), "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "--task" in result.stderr


def test_tasks_command_lists_all_seven_with_row_counts(benchmarks_dir: Path) -> None:
    result = _run("tasks", "--data-dir", str(benchmarks_dir))
    assert result.returncode == 0, result.stderr
    expected = {
        "nq": "test: 3610, test_sub1000: 1000",
        "triviaqa": "test: 11313, test_sub1000: 1000",
        "popqa": "test: not found (evalsuite data download), test_sub1000: 1000",
        "hotpotqa": "dev: 7405, dev_ctx: 1668, train_ctx: 100",
        "2wikimultihopqa": "dev: 12576, dev_ctx: 166, unverified: 36",
        "musique": "dev: 2417, dev_ctx: 292, train_ctx: 100",
        "bamboogle": "test: 125",
    }
    for name, counts in expected.items():
        # piped, the table is Markdown
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"| {name} "))
        assert counts in line, line
