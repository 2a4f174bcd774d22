"""Recipe YAMLs: nested sections, files named relative to the config, and early refusal of settings that would fail
minutes into a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.errors import DataError
from evalsuite.methods.smartsearch.recipe import RefineSpec
from evalsuite.training.config import load_config

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def test_sections_load_as_their_dataclasses_and_files_resolve_beside_the_config(tmp_path):
    path = write(tmp_path, "method: smartsearch\nrefine: {slots: 1, refiner: {backend: llamacpp, model: x.gguf}}\n"
                           "reward: {panel: panels/p.yaml}\ngrpo: {num_generations: 4}\n")
    config = load_config(path)
    assert config.refine == RefineSpec(slots=1, refiner={"backend": "llamacpp", "model": "x.gguf"})
    assert not hasattr(config, "state_eval")  # OASES's section: each recipe's config class holds its own
    assert config.reward.panel == str(tmp_path / "panels" / "p.yaml")


@pytest.mark.parametrize(("text", "message"), [
    ("method: smartsearch\nrefine: {slot: 1}\n", "unknown refine keys"),
    ("method: smartsearch\nrefine: [1]\n", "refine must be a mapping"),
    ("method: smartsearch\nrefine: {slots: 2}\ngrpo: {num_generations: 2}\n", "leaves no fresh rollout"),
    ("method: smartsearch\nrefine: {slots: 1, max_shared_prefix: 0}\n", "max_shared_prefix >= 1"),
    ("method: smartsearch\nrefine: {slots: 1, refiner: gpt}\n", "refine.refiner must be"),
    ("method: search-r1\nrefine: {slots: 1}\n", "refine is a setting of the smartsearch recipe; search-r1 does not take it"),
    ("method: oases\nsft: {max_steps: 1}\n", "oases has no sft stage"),
    ("method: oases\nstate_eval: {weight: -1}\n", "state_eval.weight"),
    ("method: oases\nstate_eval: {temprature: 1}\n", "unknown state_eval keys"),
    ("method: search-r1\ngrpo: {learning_rate: 1e-6}\n", "grpo.learning_rate is the text '1e-6'"),
])
def test_bad_settings_are_refused_at_load(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize("algorithm", ["ppo", "PPO", "dpo", "reinforce"])
def test_an_algorithm_label_that_is_not_the_trainer_that_runs_is_refused(tmp_path, algorithm):
    """Issue 37: every recipe trains with GRPO (the shared trainer's last stage), so `algorithm: ppo` would show the
    paper's PPO as matched while GRPO trains."""
    with pytest.raises(DataError, match=rf"algorithm '{algorithm}' is not what trains: search-r1's recipe runs grpo"):
        load_config(write(tmp_path, f"method: search-r1\nalgorithm: {algorithm}\n"))


def test_the_algorithm_label_is_stored_as_the_trainer_that_runs(tmp_path):
    assert load_config(write(tmp_path, "method: search-r1\nalgorithm: GRPO\n")).algorithm == "grpo"
    assert load_config(write(tmp_path, "method: search-r1\n")).algorithm == "grpo"
