"""`evalsuite reproduce search-r1 --config cpu_smoke` end to end with the real SmolLM2-135M: 2 GRPO steps, the base
and the checkpoint on 3 held-out AD-QA test questions, the table with its paired tests, a submission that names the training manifest (and
whose leaderboard verification, on the 3-question subset, is reported); run again, every stage is skipped; edit the evaluation settings, it is refused in one
line (slow: minutes on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.files import file_sha256
from evalsuite.reproduce import STAGES
from evalsuite.resources import method_configs_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_cpu_smoke_reproduction_runs_every_stage_then_skips_them_and_refuses_a_changed_input(tmp_path):
    pytest.importorskip("trl")
    from evalsuite.leaderboard.verify import verify_submission
    from evalsuite.runs import RunDirectory

    out = tmp_path / "repro"
    config = ["--config", "cpu_smoke", "-o", str(out)]
    first = CliRunner().invoke(app, ["reproduce", "search-r1", *config, "--json"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output[first.output.index("{"):])
    assert [summary[s]["action"] for s in STAGES] == ["run"] * len(STAGES)
    for stage in STAGES:
        record = json.loads((out / stage / "stage.json").read_text())
        assert record["complete"] and all(record["inputs"].values()), (stage, record)

    train_manifest = out / "train" / "train_manifest.json"
    link = RunDirectory(out / "eval-trained").read_manifest().run_config["reproduce"]["training_manifest"]
    assert link["sha256"] == file_sha256(train_manifest)
    base, trained = (RunDirectory(out / name).read_predictions() for name in ("eval-base", "eval-trained"))
    assert [r.id for r in base] == [r.id for r in trained] and len(base) == 3
    table = (out / "table" / "table.md").read_text()
    assert "eval-trained" in table and "eval-base" in table and "Search-R1 (EM) (paper)" in table
    differences = summary["table"]["differences"]
    assert differences and all(0.0 <= d["p_value"] <= 1.0 for d in differences)

    # 3 of AD-QA's 1,000 test questions: an entry on that subset (ranked in a column of its own), and the summary says so
    report = verify_submission(out / "submission" / "entry")
    assert link["sha256"] in report.meta.info.description and "CPU smoke reproduction" in report.meta.info.name
    assert report.accepted and report.tasks["adqa"].split == "test@first:3", report.problem_lines()
    assert summary["submission"]["leaderboard"] == "accepted"

    again = CliRunner().invoke(app, ["reproduce", "search-r1", *config, "--json"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert {s["action"] for s in json.loads(again.output[again.output.index("{"):]).values()} == {"skipped"}

    raw = yaml.safe_load((method_configs_dir("search-r1") / "cpu_smoke.yaml").read_text())
    raw["reproduce"]["subset"] = "first:2"
    raw["paper"] = str(method_configs_dir("search-r1") / "gpu.yaml")
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(raw))
    with pytest.raises(EvalsuiteError, match="^stage eval-base: evaluation settings changed since"):
        CliRunner().invoke(app, ["reproduce", "search-r1", "--config", str(changed), "-o", str(out)], catch_exceptions=False)
    rerun = CliRunner().invoke(app, ["reproduce", "search-r1", "--config", str(changed), "-o", str(out), "--rerun", "--dry-run"],
                               catch_exceptions=False)
    assert "plan: train: skip" in rerun.output and "plan: eval-base: run" in rerun.output
