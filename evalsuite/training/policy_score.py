"""A policy scored by its recipe's own reward outside training: fresh, seeded samples on fixed prompts, each scored by
the recipe's reward exactly as GRPO scores a rollout (the same rollout columns, the same reward object), so a trained
checkpoint and its base can be compared term by term.

Samples of one fixed policy are independent given the policy, so a paired test over prompts × samples (the base's
sample j of prompt i against the checkpoint's, drawn with the same seed) is valid whatever the training steps'
autocorrelation (`one_sided_rise`). Training with learning rate 0 leaves the weights exactly as they were (AdamW's
update and its decoupled weight decay are both multiplied by the learning rate), so the base policy is that control.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.training.config import TrainConfig
from evalsuite.training.recipe import Recipe, get_recipe
from evalsuite.training.rollout import SearchRollout, load_retriever


@dataclass
class PolicyScores:
    """Per sample (prompt-major: prompt i's samples at i·k … i·k+k−1): the reward's components and `total`."""

    breakdowns: list[dict[str, float]]
    samples_per_prompt: int

    def term(self, names: tuple[str, ...]) -> list[float]:
        """The sum of the named components, per sample."""
        return [sum(b[name] for name in names) for b in self.breakdowns]

    @property
    def components(self) -> list[str]:
        """The reward's component names, `total` included."""
        return list(self.breakdowns[0])

    def mean(self, name: str) -> float:
        """The mean of component `name` over the samples."""
        return sum(b[name] for b in self.breakdowns) / len(self.breakdowns)

    def nonzero_rate(self, name: str) -> float:
        """The share of samples whose component `name` is not 0."""
        return sum(1 for b in self.breakdowns if b[name] != 0.0) / len(self.breakdowns)

    def mixed_prompts(self, names: tuple[str, ...]) -> list[int]:
        """The prompts (by position) whose samples do not all score the same on the named components' sum: the
        groups in which GRPO's advantage on them is not 0 everywhere, so they can move."""
        scores = self.term(names)
        k = self.samples_per_prompt
        return [i for i in range(len(scores) // k) if len(set(scores[i * k : (i + 1) * k])) > 1]


def load_policy(path: str) -> tuple[Any, Any]:
    """A causal LM (fp32 weights, as the trainer holds them) and its tokenizer from a model directory."""
    from evalsuite.errors import require

    transformers = require("transformers", "train", "training")
    torch = require("torch", "train", "training")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, transformers.AutoTokenizer.from_pretrained(path)


def score_policy(
    config: TrainConfig,
    model_path: str,
    rows: list[dict[str, Any]],
    samples_per_prompt: int,
    seed: int,
    recipe: Recipe | None = None,
) -> PolicyScores:
    """Play each row's question `samples_per_prompt` times with the policy at `model_path` (the recipe's rollout
    method and extension, the config's rollout limits, GRPO's sampling temperature and precision, `seed`) and score
    every sample with a fresh copy of the recipe's reward (a stateful reward, SubSearch's β, starts as in training)."""
    from evalsuite.training.backend import TrainerBackend

    recipe = recipe or get_recipe(config.method)
    golds = {r["question"]: r["golden_answers"] for r in rows}
    rollout = SearchRollout(
        recipe.rollout_method(config, golds),
        load_retriever(config.retriever),
        config.rollout_config(),
        config.prompt_style,
        recipe.rollout_extension(config, golds),
    )
    model, tokenizer = load_policy(model_path)
    backend = TrainerBackend(model, tokenizer, bf16=bool(config.grpo.get("bf16")))
    temperature = float(config.grpo.get("temperature", 1.0))
    repeated = [row for row in rows for _ in range(samples_per_prompt)]  # grouped as TRL repeats a prompt
    columns = rollout.play(
        rollout.engine_over(backend, temperature, seed), [r["question"] for r in repeated], tokenizer
    )
    dataset = {key: [row[key] for row in repeated] for key in rows[0] if key != "prompt"}
    rollout_columns = {key: value for key, value in columns.items() if value is not None}
    reward = recipe.build_reward(config)
    breakdowns = reward.breakdown(columns["model_text"] or [], **{**dataset, **rollout_columns})
    return PolicyScores(breakdowns, samples_per_prompt)


def one_sided_rise(base: list[float], trained: list[float], n_permutations: int = 100_000, seed: int = 0) -> float:
    """One-sided p of 'the trained policy scores higher than the base' from paired samples: the sign-flip randomization
    test of the mean paired difference (`stats.significance.approximate_randomization`, alternative 'greater')."""
    import numpy as np

    from evalsuite.stats.significance import approximate_randomization

    if len(base) != len(trained) or not base:
        raise ValueError(f"paired scores need equal, non-zero lengths, got {len(base)} and {len(trained)}")
    result = approximate_randomization(
        np.asarray(trained, dtype=float),
        np.asarray(base, dtype=float),
        n_permutations,
        seed,
        key="policy-rise",
        alternative="greater",
    )
    return result.p_value
