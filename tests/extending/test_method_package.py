"""docs/architecture.md's "A method" checklist, tried: a whole method (its evaluator method, reward, recipe, paper
setting and configs) written as one package in a folder of the test's own, and nothing else. Inside
`extra_method_packages` it is a package of evalsuite.methods like the shipped ones: `evalsuite methods` lists it,
`evalsuite run` plays it, `evalsuite train --list` and `--dry-run` find its recipe and its shipped config, its reward
and its paper setting are looked up by name. No file of evalsuite is touched, and after the block it is gone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.agent.method import METHODS, get_method
from evalsuite.agent.papers import evaluation_setting
from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.registry import RegistryConflict, extra_method_packages
from evalsuite.rewards import get_reward, list_rewards
from evalsuite.training.recipe import default_registry

from tests.extending.test_plugin_package import _evalsuite_files
from tests.conftest import requires_extra

PACKAGE = {
    "__init__.py": '''
        """Toy-R1: Search-R1's tags, the answer upper-cased; rewarded for short answers."""

        NAME = "toy-r1"
        PARTS = {
            "method": ".method:ToyR1",
            "reward": ".reward:ToyReward",
            "recipe": ".recipe:RECIPE",
            "paper": ".paper:SETTING",
        }
    ''',
    "method.py": '''
        from evalsuite.methods.search_r1.method import SearchR1


        class ToyR1(SearchR1):
            """Search-R1's prompt and tags; the answer upper-cased."""

            name = "toy-r1"

            def extract_answer(self, response):
                answer = super().extract_answer(response)
                return answer.upper() if answer is not None else None
    ''',
    "reward.py": '''
        from dataclasses import dataclass

        from evalsuite.rewards.base import MethodReward


        @dataclass
        class ToyRewardConfig:
            max_words: int = 8


        class ToyReward(MethodReward):
            """1 for an answer of at most max_words words, else 0."""

            name = "toy-r1"
            components = ("short",)
            config_class = ToyRewardConfig

            def __init__(self, config=None):
                super().__init__()
                self.settings = config or ToyRewardConfig()

            def score_batch(self, batch):
                short = [float(len(s.model_text.split()) <= self.settings.max_words) for s in batch]
                return [{"short": value, "total": value} for value in short]

            def config(self):
                return {"name": self.name, "max_words": self.settings.max_words}
    ''',
    "recipe.py": '''
        from evalsuite.rewards import get_reward
        from evalsuite.training.config import TrainConfig
        from evalsuite.training.recipe import Recipe


        class ToyRecipe(Recipe[TrainConfig]):
            name = "toy-r1"
            evaluator_method = "toy-r1"
            summary = "short answers (a test recipe)"

            def build_reward(self, config):
                return get_reward(self.name, config.reward.settings)


        RECIPE = ToyRecipe()
    ''',
    "paper.py": '''
        from evalsuite.agent.papers import PaperSetting, assumed

        SETTING = PaperSetting(evaluation=[assumed("benchmarks", ["adqa"], "a test method: no paper")])
    ''',
    "reported/table1.yaml": '''
        paper: toy-r1
        paper_title: "Toy-R1: a test method"
        table: 1
        caption: "Toy results."
        metric: em
        scale: fraction
        seed_lines: "none: a test method"
        averaging: "no average column is printed"
        column_groups:
          - title: ""
            columns:
              - {key: nq, label: "NQ", dataset: nq}
        row_groups:
          - title: ""
            rows:
              - {label: "Toy-R1", method: Toy-R1, model: Qwen2.5-3B-Instruct, cells: "0.500"}
    ''',
    "configs/cpu_smoke.yaml": '''
        method: toy-r1
        model: smollm2-135m
        tasks: adqa
        subset: first:2
        retriever: adqa
        reward: {settings: {max_words: 4}}
        grpo: {max_steps: 1, per_device_train_batch_size: 2, num_generations: 2, use_cpu: true, bf16: false}
        deviations: ['a test method']
    ''',
}


def write_package(root: Path) -> Path:
    for relative, text in PACKAGE.items():
        path = root / "toy_r1" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


@requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate")
def test_a_method_package_is_a_method_reward_recipe_and_paper_setting_without_touching_evalsuite(tmp_path):
    before = _evalsuite_files()
    default_registry()  # the shipped recipes' registry exists, as in any session that trains
    with extra_method_packages(write_package(tmp_path / "packages")):
        assert "toy-r1" in CliRunner().invoke(app, ["methods"]).output
        assert type(get_method("toy-r1")).__module__ == "evalsuite.methods.toy_r1.method"
        assert "toy-r1" in list_rewards() and get_reward("toy-r1", {"max_words": 3}).config()["max_words"] == 3
        assert [v.name for v in evaluation_setting("toy-r1")] == ["benchmarks"]
        listed = CliRunner().invoke(app, ["train", "--list"])
        assert listed.exit_code == 0 and "toy-r1" in listed.output and "cpu_smoke" in listed.output
        dry = CliRunner().invoke(app, ["train", "toy-r1", "--config", "cpu_smoke", "--dry-run"])
        assert dry.exit_code == 0, dry.output + repr(dry.exception)
        assert "train nothing" in dry.output.lower() or "built" in dry.output
    assert "toy-r1" not in METHODS and "toy-r1" not in list_rewards() and "toy-r1" not in default_registry()
    assert _evalsuite_files() == before


def test_the_method_package_plays_a_run(tmp_path, trajectories_dir, benchmarks_dir):
    from tests.extending.test_checklists import _run

    from evalsuite.reported import load_reported

    with extra_method_packages(write_package(tmp_path / "packages")):
        assert list(load_reported("toy-r1:table1").rows) == ["Toy-R1"]
        run = _run(trajectories_dir, benchmarks_dir, tmp_path / "run", "--backend", "replay", "--method", "toy-r1")
        assert run.read_manifest().method == "toy-r1"
        records = run.read_predictions()
        assert records and all(r.prediction is None or r.prediction == r.prediction.upper() for r in records)


def test_a_package_reusing_a_shipped_name_is_refused_naming_both(tmp_path):
    root = write_package(tmp_path / "packages")
    init = root / "toy_r1" / "__init__.py"
    init.write_text(init.read_text().replace('NAME = "toy-r1"', 'NAME = "search-r1"'))
    with extra_method_packages(root), pytest.raises(RegistryConflict) as error:
        METHODS.names()  # the packages are read on the first listing or lookup of a name not yet known
    assert "already registered" in str(error.value) and "toy_r1" in str(error.value)


def test_a_package_without_a_name_is_refused_in_one_line(tmp_path):
    root = write_package(tmp_path / "packages")
    init = root / "toy_r1" / "__init__.py"
    init.write_text(init.read_text().replace('NAME = "toy-r1"\n', ""))
    with extra_method_packages(root), pytest.raises(EvalsuiteError) as error:
        METHODS.names()
    assert error.value.message == "the method package evalsuite.methods.toy_r1 names its method in PARTS but has no NAME"
    assert "NAME =" in error.value.hint


def test_configs_and_paper_are_found_through_the_packages_name_not_its_folder(tmp_path):
    """One identity: a package in folder `toy_r1` registered as "toy-bravo" has its configs, PAPER and transcribed
    tables found under "toy-bravo" (the folder's spelling, "toy-r1", names nothing)."""
    from evalsuite.registry import packaged_papers
    from evalsuite.reported import list_reported
    from evalsuite.resources import method_configs_dir

    root = write_package(tmp_path / "packages")
    init = root / "toy_r1" / "__init__.py"
    text = init.read_text().replace('NAME = "toy-r1"', 'NAME = "toy-bravo"\nPAPER = {"name": "Toy Bravo"}')
    init.write_text(text.replace('"toy-r1"', '"toy-bravo"'))
    with extra_method_packages(root):
        configs = method_configs_dir("toy-bravo")
        assert configs is not None and (configs / "cpu_smoke.yaml").is_file()
        assert method_configs_dir("toy-r1") is None
        assert packaged_papers()["toy-bravo"] == {"name": "Toy Bravo"}
        assert "toy-bravo:table1" in list_reported() and "toy-r1:table1" not in list_reported()
    assert method_configs_dir("toy-bravo") is None and "toy-bravo" not in packaged_papers()
    assert "toy-bravo:table1" not in list_reported()
