"""Search-P1's offline reference plans: the essential-step vote, and `evalsuite train search-p1 plans` with a real
planner (SmolLM2 on llama.cpp), whose file the recipe reads back through `reference_plans:`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.methods.search_p1.plans import essential_steps
from evalsuite.resources import method_configs_dir

REPO = Path(__file__).resolve().parents[2]


def test_essential_steps_are_the_first_trajectorys_queries_most_trajectories_share():
    trajectories = [
        ["director of Jaws", "birth year of Steven Spielberg", "weather today"],
        ["Jaws director", "Steven Spielberg birth year"],
        ["who directed Jaws", "Spielberg born"],
    ]
    # "director of Jaws" vs "Jaws director": Jaccard 2/3; vs "who directed Jaws": 1/5 -> shared by 2 of 3 (a majority)
    assert essential_steps(trajectories) == ["director of Jaws", "birth year of Steven Spielberg"]
    assert essential_steps([]) == []
    assert essential_steps([[], ["a"]]) == []
    assert essential_steps([["a b", "a b"]]) == ["a b"]  # a repeated query is one step


def test_plans_command_writes_a_plan_per_row_and_the_recipe_reads_it(tmp_path):
    pytest.importorskip("llama_cpp")
    from llama_servers import smollm2_gguf

    from evalsuite.training.config import load_config
    from evalsuite.training.data import training_rows
    from evalsuite.training.recipe import get_recipe

    out = tmp_path / "plans.jsonl"
    config_file = method_configs_dir("search-p1") / "cpu_smoke.yaml"
    result = CliRunner().invoke(app, ["train", "search-p1", "plans", "--config", str(config_file), "-o", str(out), "--samples", "2",
                                      "--planner-backend", "llamacpp", "--planner-model", str(smollm2_gguf())])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "wrote 2 reference plans" in result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and all(line["source"] in ("trajectories", "decomposition", "none") for line in lines)
    # SmolLM2 answers nothing correctly, so the plans fall back to AD-QA's gold decompositions
    assert all(line["source"] == "decomposition" and line["plan"] and line["correct_trajectories"] == 0 for line in lines)
    custom = tmp_path / "custom.yaml"
    # files a config names are relative to the config file: the plans beside the copy, the paper block at home
    text = config_file.read_text().replace("paper: gpu.yaml", f"paper: {config_file.parent / 'gpu.yaml'}")
    custom.write_text(text + f"reference_plans: {out.name}\n")
    edited = {line["id"]: ["my own step"] for line in lines}
    out.write_text("".join(json.dumps({"id": i, "plan": p, "source": "edited"}) + "\n" for i, p in edited.items()))
    loaded = load_config(custom, "search-p1")
    rows = training_rows(loaded, get_recipe("search-p1").row_columns(loaded))
    assert [row["reference_plan"] for row in rows] == [["my own step"], ["my own step"]]
    wrong = CliRunner().invoke(app, ["train", "search-r1", "plans", "--config", str(method_configs_dir("search-r1") / "cpu_smoke.yaml")])
    assert wrong.exit_code != 0 and "only search-p1" in wrong.output
