"""How often a base policy earns each term of a recipe's own reward: fresh seeded samples on a few training prompts,
scored by the recipe's reward as GRPO scores them (`evalsuite.training.policy_score`). It is how the model, task and
rollout of each reward-moves test (tests/training/test_reward_moves.py) were chosen: a term the base policy never
earns gives GRPO no advantage to follow.

    PYTHONPATH=$PWD python benchmarks/recipe_term_rates.py subsearch --model qwen2.5-coder-0.5b \
        --tasks adqa --subset first:4 --samples 4 --max-turns 2

Prints, per component of the reward, the share of samples where it is not 0 and its mean, and the seconds taken.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    from evalsuite.resources import method_configs_dir
    from evalsuite.training.config import load_config
    from evalsuite.training.data import training_rows
    from evalsuite.training.model import resolve_model
    from evalsuite.training.policy_score import score_policy
    from evalsuite.training.recipe import get_recipe

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--tasks", default="adqa")
    parser.add_argument("--subset", default="first:4")
    parser.add_argument("--samples", type=int, default=4, help="samples per prompt")
    parser.add_argument("--max-turns", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bf16", action="store_true", help="sample under bf16 autocast (as a bf16 trainer does)")
    args = parser.parse_args()

    config = load_config(method_configs_dir(args.method) / "cpu_smoke.yaml", args.method)
    config.model, config.tasks, config.subset = args.model, args.tasks, args.subset
    config.smoke_overlap_weight = 0.0
    limits = {"max_turns": args.max_turns, "max_tokens": args.max_tokens}
    config.rollout = {**config.rollout, **{k: v for k, v in limits.items() if v is not None}}
    config.grpo = {**config.grpo, "bf16": args.bf16}
    recipe = get_recipe(args.method)
    rows = recipe.prepare_data(config, training_rows(config, recipe.row_columns(config)))
    started = time.perf_counter()
    scores = score_policy(config, resolve_model(config.model), rows, args.samples, args.seed, recipe)
    seconds = time.perf_counter() - started
    n = len(scores.breakdowns)
    print(
        f"{args.method} on {args.model}, {args.tasks} {args.subset}, {args.samples} samples each ({n}), "
        f"rollout {config.rollout}, {seconds:.0f} s"
    )
    for name in scores.components:
        print(f"  {name:22s} non-zero {scores.nonzero_rate(name):6.1%}  mean {scores.mean(name):.4f}")


if __name__ == "__main__":
    main()
