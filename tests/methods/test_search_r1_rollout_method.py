"""The search-r1 recipe's `rollout_method`: the Search-R1 loop by default, or retrieval before answering
(`naive-rag`) for a model that does not follow the search protocol, as the pre-registered learning run
(`qwen_singlehop_learn`) fixes. The method is what the rollouts, the training manifest and `reproduce` play."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError
from evalsuite.methods.search_r1.recipe import RECIPE
from evalsuite.training.config import load_config
from tests.conftest import requires_extra


def test_the_learning_run_plays_naive_rag_and_the_others_the_search_r1_loop():
    learn = load_config("qwen_singlehop_learn", "search-r1")
    assert RECIPE.played_method(learn) == "naive-rag" and RECIPE.rollout_method(learn, {}).name == "naive-rag"
    assert learn.freeze == ["embed_tokens", "lm_head"] and learn.grpo["bf16"] is True
    assert learn.reward.settings == {}  # the paper's outcome reward: EM only, no format or overlap term
    assert learn.smoke_overlap_weight == 0.0
    smoke = load_config("cpu_smoke", "search-r1")
    assert RECIPE.played_method(smoke) == "search-r1" and RECIPE.rollout_method(smoke, {}).name == "search-r1"


def test_a_method_the_reward_cannot_score_is_refused(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("method: search-r1\nrollout_method: subsearch\n")
    with pytest.raises(DataError, match="rollout_method 'subsearch' is not one the search-r1 reward scores"):
        load_config(path)


@requires_extra("train", "torch", "trl")
def test_the_learning_run_config_dry_runs():
    result = CliRunner().invoke(app, ["train", "search-r1", "--config", "qwen_singlehop_learn", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "nothing trained" in result.output and "retrieval before answering" in result.output


def test_naive_rag_rollouts_are_scored_on_the_answer_that_method_extracts():
    """The smoke step of the learning run scored EM 0 on every completion: the reward read `<answer>` tags, which
    naive-rag never writes. Its answer is the first line, recorded on the last model turn by the engine."""
    from evalsuite.runs.schema import Turn

    learn = RECIPE.build_reward(load_config("qwen_singlehop_learn", "search-r1"))
    loop = RECIPE.build_reward(load_config("cpu_smoke", "search-r1"))
    retrieval = Turn(text="", query="What audience is the ad group Maroon Bison Bundle targeting?",
                     extra={"initial_retrieval": True})
    answered = Turn(text="Seasoned Travellers Guild", answer="Seasoned Travellers Guild")
    golds = [["Seasoned Travellers Guild"], ["Seasoned Travellers Guild"]]
    wrong = Turn(text="Quarry Knoll", answer="Quarry Knoll")
    rows = learn.breakdown(["a", "b"], golden_answers=golds, turns=[[retrieval, answered], [retrieval, wrong]],
                           model_text=["Seasoned Travellers Guild", "Quarry Knoll"])
    assert [(r["em"], r["total"]) for r in rows] == [(1.0, 1.0), (0.0, 0.0)]  # EM only: 1 or 0
    assert learn.config()["answer"].startswith("the rollout method's own")
    # the Search-R1 loop still reads the last <answer> tag of the model's own text: untagged text answers nothing
    assert loop.breakdown(["a"], golden_answers=golds[:1], turns=[[retrieval, answered]],
                          model_text=["Seasoned Travellers Guild"])[0]["em"] == 0.0
