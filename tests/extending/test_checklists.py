"""docs/architecture.md's checklists, tried: a method and a backend added in scratch registries go through
`evalsuite run` (a task and a metric: test_add_metric_and_task.py and test_tasks_as_data.py; a recipe:
tests/training/test_recipe_registry.py; all three through an installed plugin: test_plugin_package.py). And every file
a checklist names exists, so the checklists cannot drift from the tree."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from evalsuite.agent.method import METHODS, get_method
from evalsuite.methods.search_r1.method import SearchR1
from evalsuite.cli import app
from evalsuite.models.registry import BACKENDS, backend_class
from evalsuite.models.replay import ReplayBackend
from evalsuite.runs import RunDirectory

REPO = Path(__file__).resolve().parents[2]
NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


class ShoutingR1(SearchR1):
    """Search-R1's tags and prompt; the answer is upper-cased (so its effect on the scores is visible)."""

    name = "shouting-r1"

    def extract_answer(self, response):
        answer = super().extract_answer(response)
        return answer.upper() if answer is not None else None


class RecordedBackend(ReplayBackend):
    """The replay backend under a name of its own: a backend registered as a lazy target of this module."""

    name = "recorded"


def _run(trajectories_dir: Path, benchmarks_dir: Path, out: Path, *options: str):
    result = CliRunner().invoke(app, [
        "run", "--model", str(trajectories_dir / NQ_RECORDING), "--retriever", "replay", "--tasks", "nq",
        "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--limit", "4", "-o", str(out), "--json", *options])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return RunDirectory(out)


def test_a_method_in_a_scratch_registry_runs(tmp_path, trajectories_dir, benchmarks_dir):
    with METHODS.scratch():
        METHODS.register("shouting-r1", ShoutingR1)
        assert "shouting-r1" in CliRunner().invoke(app, ["methods"]).output
        run = _run(trajectories_dir, benchmarks_dir, tmp_path / "run", "--backend", "replay", "--method", "shouting-r1")
        assert run.read_manifest().method == "shouting-r1"
        records = run.read_predictions()
        assert all(r.prediction is None or r.prediction == r.prediction.upper() for r in records)
        assert get_method("shouting-r1").template_hash("base") == get_method("search-r1").template_hash("base")  # same prompt
    assert "shouting-r1" not in METHODS


def test_a_backend_in_a_scratch_registry_runs_and_is_imported_only_when_used(tmp_path, trajectories_dir, benchmarks_dir):
    with BACKENDS.scratch():
        BACKENDS.register("recorded", f"{__name__}:RecordedBackend")
        assert BACKENDS._entries["recorded"] == f"{__name__}:RecordedBackend"  # a lazy target until asked for
        run = _run(trajectories_dir, benchmarks_dir, tmp_path / "run", "--backend", "recorded")
        assert backend_class("recorded") is RecordedBackend
        assert run.read_manifest().backend.backend == "recorded"
    assert "recorded" not in BACKENDS


def test_every_file_a_checklist_names_exists():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    checklists = text[text.index("## Checklists"):text.index("## Lint and types")]
    named = set(re.findall(r"`((?:evalsuite|tests|baselines|docs)/[^`*<>{} ]+)`", checklists))
    assert len(named) > 15
    missing = sorted(p for p in named if not (REPO / p.split(":")[0]).exists())
    assert missing == [], f"docs/architecture.md's checklists name files that do not exist: {missing}"
