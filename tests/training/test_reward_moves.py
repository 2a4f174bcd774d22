"""Every recipe moves its own reward: GRPO on a model that earns the recipe's own terms, against the untrained policy.

Design 2, fixed on 2026-12-03 before any run of it (design 1, below, ran once; what it showed and why it changed is in
docs/recipes/reproduce.md). A recipe whose loss runs but whose gradient never reaches the policy passes the 2-step
smoke tests; a recipe whose own reward terms are always 0 gives GRPO nothing to follow. So each test:

- uses the recipe's own reward and nothing else (`smoke_overlap_weight` 0: the smoke configs' shared
  question-overlap term is off), so the reward TRL optimises and logs per step (`rewards/<recipe>/...` in
  training_log.jsonl) is the recipe's;
- chooses its model and prompts by a rule, before training: for each model of MODELS in order, CANDIDATES training
  questions of the recipe's task (the first of its train split) get SELECT_SAMPLES samples each from the base policy
  (seed SELECT_SEED, used nowhere else); the prompts kept are those whose samples' own score is not all equal (a
  group in which GRPO's advantage is not 0), at most PROMPTS of them in split order; the first model on which the
  recipe's `earned` term is non-zero on some sample and MIN_PROMPTS or more prompts are kept is the test's model.
  With none, the test skips and its reason gives every model's measurement: no model here gives GRPO an advantage
  on that recipe's term in this rollout;
- treatment: STEPS GRPO steps on the kept prompts at the model's learning rate (LEARNING_RATES: Qwen's is the
  pre-registered learning run's, Gemma's design 1's), 4 samples per prompt (16 completions per step, micro-batch
  4 × accumulation 4), bf16 autocast, the tied embedding and output matrix frozen, no KL term, seed 0;
- control: the same run at learning rate 0, whose weights are the base weights exactly (AdamW's step and its
  decoupled weight decay are both scaled by the learning rate; `test_lr_zero_leaves_the_weights` checks it), so the
  control policy is the base model and is not trained;
- measures both policies by SAMPLES fresh samples per kept prompt (temperature 1, seed EVAL_SEED for both, so sample
  j of prompt i of the two policies share their random numbers; the selection's samples are not reused, so the
  choice of prompts does not bias the base's score) scored by the recipe's reward
  (`evalsuite.training.policy_score`): samples of a fixed policy are independent given it, so the paired test over
  prompts × samples is valid however autocorrelated the training steps were (the old first-8 vs last-8 steps test
  was not: issue 40);
- statistic: the mean over the prompts × SAMPLES pairs of (checkpoint − base) of the recipe's own score
  (`Setting.own_score`: the sum of the named components of its reward's breakdown); one-sided sign-flip
  randomization test (`policy_score.one_sided_rise`, 100,000 sign draws, seed 0); the test passes when the mean
  rose and p < ALPHA.

Design 3 (2026-12-03, fixed before any run of it), for the three recipes design 2 skipped (OASES, Progress,
Search-P1) and nothing else: their rollout gives 128 tokens a model turn (LONG_ROLLOUT) instead of 48. Under design
2, no sample of either model earned their terms in 48 tokens: no OASES sample searched at all (one state each), and
no sample's queries matched a Search-P1 plan step or a Progress gold sub-question; the guess is that 48 tokens leave
no room for a search after the reasoning and planning these prompts ask for first. The rule, the statistic and every
other setting are design 2's; search-r1, subsearch and smartsearch keep their design 2 settings and results.

Design 1 (2026-12-03, replaced): one model per recipe (Gemma-3-270M; search-r1 then Qwen), the first 4 training
prompts whatever the base scored on them, 4 steps at 2e-5, skip when the earned term was 0 on the 16 base samples.

The base-policy rates and each test's result are in docs/recipes/reproduce.md (`benchmarks/recipe_term_rates.py`
measures the rates on their own). The rule, statistic, alpha, steps, learning rates, prompt and sample counts above
are not to be tuned after seeing results; a change is a new design, dated in that doc with its reason.

Slow (tens of minutes per recipe on 2 idle cores): `python -m pytest -m slow tests/training/test_reward_moves.py
-p no:cacheprovider -rA -s`; the selection, the statistic, p and the per-sample scores are printed and recorded as
test properties.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

import pytest

from evalsuite.resources import method_configs_dir

# tried in this order: Qwen2.5-Coder-0.5B is the one model here that searches and answers AD-QA at all; Gemma-3-270M
# earned SmartSearch's process term in design 1 (SmolLM2-135M earns nothing on these tasks: docs/recipes/reproduce.md)
MODELS = ("qwen2.5-coder-0.5b", "gemma3-270m")
LEARNING_RATES = {"qwen2.5-coder-0.5b": 5.0e-6, "gemma3-270m": 2.0e-5}
CANDIDATES = 16
SELECT_SAMPLES = 4
SELECT_SEED = 99
PROMPTS = 8
MIN_PROMPTS = 2  # one prompt's 4 pairs cannot reach p < 0.05 (1/16 at best)
SAMPLES = 4  # fresh samples per kept prompt for each policy
STEPS = 8
PROMPTS_PER_STEP = 4  # 16 completions a step (micro-batch 4 x accumulation 4) over 4 samples a prompt
EVAL_SEED = 1234  # neither a training step's seed (0 + step) nor the selection's
ALPHA = 0.05
# the multi-turn rollout of the recipes that search: two model turns (one search, then an answer), 48 tokens a turn
SEARCH_ROLLOUT = {"max_turns": 2, "max_tokens": 48, "max_obs_tokens": 48, "topk": 2}
# design 3's, for the recipes whose terms no sample earned in 48 tokens a turn (the module's docstring)
LONG_ROLLOUT = {**SEARCH_ROLLOUT, "max_tokens": 128}


@dataclass(frozen=True)
class Setting:
    """One recipe's test: its task, its own score (components of its reward summed), the term that must be earned
    by the base policy, and what differs from its cpu_smoke.yaml besides the shared settings above."""

    tasks: str
    own_score: tuple[str, ...]
    earned: str
    rollout: dict[str, Any] = field(default_factory=lambda: dict(SEARCH_ROLLOUT))
    config: dict[str, Any] = field(default_factory=dict)


SETTINGS = {
    # OASES's own terms: the outcome F1 and the state scores' differences (the summed form of its per-turn credit)
    "oases": Setting("adqa", ("outcome_f1", "process"), "process", dict(LONG_ROLLOUT)),
    # GRPO only: the SFT and DPO curriculum stages are not run (their own smoke tests cover them)
    "smartsearch": Setting("adqa", ("outcome", "process", "format"), "process", config={"sft": None, "dpo": None}),
    "progress": Setting("adqa", ("em", "format", "coverage_f1"), "coverage_f1", dict(LONG_ROLLOUT)),
    "subsearch": Setting("adqa", ("answerability", "decomposition"), "decomposition"),
    "search-p1": Setting("adqa", ("path", "outcome"), "path", dict(LONG_ROLLOUT)),
    # the pre-registered learning run's task and rollout: retrieval before answering (the base model rarely searches
    # and never answers right under the Search-R1 loop), the paper's EM-only reward
    "search-r1": Setting(
        "adqa-single",
        ("em",),
        "em",
        {"max_tokens": 32, "topk": 3, "max_obs_tokens": 500},
        {"rollout_method": "naive-rag", "reward_settings": {}},
    ),
}


def moves_config(method: str, model: str, subset: str = f"first:{CANDIDATES}") -> Any:
    """The recipe's cpu_smoke.yaml with this test's model, task, rollout and GRPO settings."""
    from evalsuite.training.config import load_config

    setting = SETTINGS[method]
    config = load_config(method_configs_dir(method) / "cpu_smoke.yaml", method)
    config.model, config.tasks, config.subset = model, setting.tasks, subset
    config.smoke_overlap_weight = 0.0
    config.freeze = ["embed_tokens"]  # tied: the output layer is the same matrix
    config.rollout = {**config.rollout, **setting.rollout}
    for key, value in setting.config.items():
        if key == "reward_settings":
            config.reward.settings = dict(value)
        else:
            setattr(config, key, value)
    config.grpo = {
        **config.grpo,
        "max_steps": STEPS,
        "learning_rate": LEARNING_RATES[model],
        "lr_scheduler_type": "constant",
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 4,
        "num_generations": 4,
        "beta": 0.0,
        "temperature": 1.0,
        "bf16": True,
        "seed": 0,
    }
    return config


def on_rows(recipe: Any, ids: set[str]) -> Any:
    """The recipe, training on the rows with these ids only (the kept prompts), repeated in turn until they fill a
    step's PROMPTS_PER_STEP: TRL's sampler draws whole batches, so with fewer rows than a batch it runs no step at all
    (design 2's first subsearch run, with 2 kept prompts, trained 0 steps; docs/recipes/reproduce.md)."""

    class Kept(type(recipe)):  # type: ignore[misc]
        def prepare_data(self, config: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            kept = [row for row in super().prepare_data(config, rows) if str(row["id"]) in ids]
            return [kept[i % len(kept)] for i in range(max(len(kept), PROMPTS_PER_STEP))] if kept else kept

    return Kept()


@dataclass
class Selection:
    """What the rule measured on one model: the earned term's rate and the kept prompts."""

    model: str
    earned_rate: float
    kept: list[dict[str, Any]]
    rates: dict[str, float]

    @property
    def usable(self) -> bool:
        return self.earned_rate > 0 and len(self.kept) >= MIN_PROMPTS

    def line(self, setting: Setting) -> str:
        return (
            f"{self.model}: {setting.earned} non-zero on {self.earned_rate:.1%} of {CANDIDATES}x{SELECT_SAMPLES} "
            f"samples, {len(self.kept)} prompt(s) with mixed own score"
        )


def select(method: str, model: str) -> Selection:
    """The design's rule on one model (see the module's docstring)."""
    from evalsuite.training.data import training_rows
    from evalsuite.training.model import resolve_model
    from evalsuite.training.policy_score import score_policy
    from evalsuite.training.recipe import get_recipe

    setting = SETTINGS[method]
    config = moves_config(method, model)
    recipe = get_recipe(method)
    rows = recipe.prepare_data(config, training_rows(config, recipe.row_columns(config)))
    scores = score_policy(config, resolve_model(model), rows, SELECT_SAMPLES, SELECT_SEED, recipe)
    kept = [rows[i] for i in scores.mixed_prompts(setting.own_score)][:PROMPTS]
    rates = {name: scores.nonzero_rate(name) for name in scores.components}
    return Selection(model, scores.nonzero_rate(setting.earned), kept, rates)


def logged_own_terms(log, method: str, own: tuple[str, ...]) -> dict[str, list[float]]:
    """Per GRPO step, the mean of each own component as TRL logged it (`rewards/<recipe>/<component>/mean`)."""
    from evalsuite.training.log import read_log

    steps = [r for r in read_log(log) if r.get("stage") == "grpo" and "reward" in r]
    return {name: [float(r.get(f"rewards/{method}/{name}/mean", float("nan"))) for r in steps] for name in own}


def component_means(scores: Any) -> dict[str, float]:
    return {name: round(scores.mean(name), 4) for name in scores.components}


# A recorded result, kept as the test's outcome (strict: a run that passes is reported, and the doc must change with
# it): the assertion still runs, and what it measured is in docs/recipes/reproduce.md. A new design is needed to
# test SubSearch's process terms (its adaptive residual stops paying them once answers are right; its 2 kept
# prompts were learnt by heart), and it is dated there before it runs.
RECORDED_FAILURES = {
    "subsearch": "design 2 (2026-12-03): answerability + decomposition 0.083 -> 0.000 over 8 pairs; its whole reward "
    "rose 0.08 -> 1.00 (EM 0 -> 1 on the 2 repeated prompts, answered without search)",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "method",
    [
        pytest.param(method, marks=pytest.mark.xfail(reason=RECORDED_FAILURES[method], strict=True))
        if method in RECORDED_FAILURES
        else method
        for method in SETTINGS
    ],
)
def test_recipe_moves_its_own_reward(method, tmp_path, record_property):
    pytest.importorskip("trl")
    from evalsuite.models.precision import cpu_supports_bf16
    from evalsuite.training.model import resolve_model
    from evalsuite.training.policy_score import one_sided_rise, score_policy
    from evalsuite.training.recipe import get_recipe
    from evalsuite.training.trainer import train

    if not cpu_supports_bf16():
        pytest.skip("the design trains in bf16 autocast; this CPU has no native bf16")
    setting = SETTINGS[method]
    measured: list[Selection] = []
    for model in MODELS:
        measured.append(select(method, model))
        print(
            f"reward moves {method}: selection on {measured[-1].line(setting)}; rates {measured[-1].rates}", flush=True
        )
        if measured[-1].usable:
            break
    record_property("selection", json.dumps([vars(m) | {"kept": [r["id"] for r in m.kept]} for m in measured]))
    chosen = measured[-1]
    if not chosen.usable:
        pytest.skip(
            f"no model here gives GRPO an advantage on {method}'s {setting.earned} ({setting.tasks}, rollout "
            f"{moves_config(method, chosen.model).rollout}): "
            + "; ".join(m.line(setting) for m in measured)
            + f" (needs the term non-zero and {MIN_PROMPTS}+ mixed prompts; docs/recipes/reproduce.md)"
        )
    config = moves_config(method, chosen.model)
    recipe = on_rows(get_recipe(method), {str(row["id"]) for row in chosen.kept})
    base = score_policy(config, resolve_model(chosen.model), chosen.kept, SAMPLES, EVAL_SEED, recipe)
    result = train(config, tmp_path / "ckpt", recipe=recipe)
    assert len(result.seconds_per_step) == STEPS, f"{len(result.seconds_per_step)} GRPO steps ran, not {STEPS}"
    trained = score_policy(config, str(result.checkpoint), chosen.kept, SAMPLES, EVAL_SEED, recipe)
    before, after = base.term(setting.own_score), trained.term(setting.own_score)
    p = one_sided_rise(before, after)
    # the whole reward per step and every component's mean per policy are reported beside the statistic, not tested
    # (design 2's subsearch run: its own terms fell while its outcome term, outside them, rose to 1)
    logged = logged_own_terms(result.log, method, (*setting.own_score, "total"))
    logged_total = logged.pop("total")
    summary = {
        "method": method,
        "model": chosen.model,
        "prompts": len(chosen.kept),
        "own_score": setting.own_score,
        "base_mean": mean(before),
        "trained_mean": mean(after),
        "p": p,
        "earned_rate_base": base.nonzero_rate(setting.earned),
        "earned_rate_trained": trained.nonzero_rate(setting.earned),
        "base": before,
        "trained": after,
        "logged_per_step": logged,
        "logged_total_per_step": logged_total,
        "components_base": component_means(base),
        "components_trained": component_means(trained),
        "seconds_per_step": result.seconds_per_step,
    }
    record_property("reward_moves", json.dumps(summary))
    print(
        f"reward moves {method} on {chosen.model}: own score {'+'.join(setting.own_score)} base {mean(before):.4f} -> "
        f"trained {mean(after):.4f} over {len(before)} paired samples ({len(chosen.kept)} prompts), one-sided "
        f"sign-flip p = {p:.4g}; {setting.earned} non-zero {summary['earned_rate_base']:.1%} -> "
        f"{summary['earned_rate_trained']:.1%}; {mean(result.seconds_per_step):.1f} s/step; logged per step {logged}, "
        f"total {logged_total}; components base {summary['components_base']} -> trained "
        f"{summary['components_trained']}"
    )
    assert all(len(values) == STEPS for values in logged.values()), logged
    assert mean(after) > mean(before) and p < ALPHA, summary


def test_kept_prompts_fill_a_step_in_turn():
    """Two kept prompts train as a step of four (each twice, in turn); five stay five; the rest are left out."""

    class Plain:
        def prepare_data(self, config, rows):
            return rows

    rows = [{"id": x} for x in "abcdef"]
    assert [r["id"] for r in on_rows(Plain(), {"a", "c"}).prepare_data(None, rows)] == ["a", "c", "a", "c"]
    assert [r["id"] for r in on_rows(Plain(), set("abcde")).prepare_data(None, rows)] == list("abcde")


def test_mixed_prompts_are_the_groups_with_a_reward_difference():
    """The selection rule on hand-made scores: 3 prompts x 2 samples; only the middle one's samples differ in the
    own score (em + f1), though the first's differ in a component outside it."""
    from evalsuite.training.policy_score import PolicyScores

    scores = PolicyScores(
        [
            {"em": 0.0, "f1": 0.5, "format": 0.0},
            {"em": 0.0, "f1": 0.5, "format": 1.0},
            {"em": 1.0, "f1": 1.0, "format": 0.0},
            {"em": 0.0, "f1": 1.0, "format": 0.0},
            {"em": 1.0, "f1": 1.0, "format": 1.0},
            {"em": 1.0, "f1": 1.0, "format": 1.0},
        ],
        samples_per_prompt=2,
    )
    assert scores.mixed_prompts(("em", "f1")) == [1]
    assert scores.mixed_prompts(("format",)) == [0]
    assert scores.mixed_prompts(("f1",)) == []


def test_component_means_and_rates_by_hand():
    from evalsuite.training.policy_score import PolicyScores

    scores = PolicyScores([{"em": 1.0, "total": 1.5}, {"em": 0.0, "total": 0.5}, {"em": 0.0, "total": 0.0}], 3)
    assert scores.components == ["em", "total"]
    assert scores.mean("em") == pytest.approx(1 / 3) and scores.mean("total") == pytest.approx(2 / 3)
    assert scores.nonzero_rate("total") == pytest.approx(2 / 3)
    assert component_means(scores) == {"em": 0.3333, "total": 0.6667}


def test_the_one_sided_test_on_hand_computed_cases():
    """The paired sign-flip test: four equal positive differences are exceeded or matched by 1 of the 16 sign patterns
    (p = 1/16 by hand); sixteen of them by 1 in 65,536; no difference at all is never significant; a fall is not a
    rise."""
    from evalsuite.training.policy_score import one_sided_rise

    assert one_sided_rise([0.0] * 4, [1.0] * 4) == pytest.approx(1 / 16, abs=0.005)
    assert one_sided_rise([0.0] * 16, [0.5] * 16) < 0.001
    assert one_sided_rise([0.3, 0.1, 0.0, 1.0], [0.3, 0.1, 0.0, 1.0]) == 1.0
    assert one_sided_rise([1.0] * 8, [0.0] * 8) > 0.99
    with pytest.raises(ValueError, match="equal, non-zero lengths"):
        one_sided_rise([1.0], [1.0, 0.0])


@pytest.mark.slow
def test_lr_zero_leaves_the_weights(tmp_path):
    """The control of the reward-moves tests is the base policy because a GRPO step at learning rate 0 changes no
    weight: one real step of SmolLM2-135M (its cpu_smoke.yaml, one step, lr 0) and every tensor of the checkpoint
    equals the base model's."""
    pytest.importorskip("trl")
    import torch

    from evalsuite.training.config import load_config
    from evalsuite.training.model import resolve_model
    from evalsuite.training.policy_score import load_policy
    from evalsuite.training.trainer import train

    config = load_config(method_configs_dir("search-r1") / "cpu_smoke.yaml", "search-r1")
    config.grpo = {**config.grpo, "max_steps": 1, "learning_rate": 0.0, "weight_decay": 0.1}
    result = train(config, tmp_path / "ckpt")
    base, _ = load_policy(resolve_model(config.model))
    trained, _ = load_policy(str(result.checkpoint))
    trained_weights = trained.state_dict()
    assert result.seconds_per_step, "no GRPO step ran"
    changed = [name for name, tensor in base.state_dict().items() if not torch.equal(tensor, trained_weights[name])]
    assert not changed, f"learning rate 0 changed {len(changed)} tensors, e.g. {changed[:3]}"


def test_every_shipped_recipe_has_a_reward_moves_setting():
    """A new recipe is not silently left out of the tests above: it needs its own row in SETTINGS."""
    from evalsuite.registry import packaged_parts

    assert set(SETTINGS) == {name for name, _ in packaged_parts("recipe")}
