"""SmartSearch's curriculum before GRPO (seeds/004, "Three-Stage Curriculum"): stage 1 SFT on quality-screened
trajectories, stage 2 DPO on preferred (refined) vs original trajectories.

Screened trajectories: a trajectory qualifies when its answer is correct and every query is high-quality
(novel, and useful when a judge is configured): the paper's "Collect trajectories that both have correct final
answers and pass query-quality checks at every step" (004:152), which does not say who generates them (its
only teacher model labels the evaluator's training data, 004:177). Besides the policy's own sampled rollouts
we build one per training row from its gold decomposition (each step searched against the real retriever, then
the gold answer), so that a weak starting policy still has trajectories to imitate; that source is ours. DPO
pairs prefer, for the same question, the better over the worse of a policy rollout and its refined branches
(`methods.smartsearch.refinement`: each weak query rewritten with its feedback and the trajectory regenerated
from there), ranked as the paper ranks them, by final correctness and then by fewer weak queries; and, where a
question has one, the qualifying trajectory over a policy rollout that failed or had weak queries.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalsuite.errors import require
from evalsuite.training.config import TrainConfig
from evalsuite.training.stages import finished_stage, run_stage


Segments = list[tuple[str, bool]]  # (text, written by the model): retrieved text is False


def decomposition_trajectory(
    method: Any, retriever: Any, steps: list[str], answer: str, topk: int, truncate
) -> Segments:
    """A Search-R1-protocol response that searches each step with the real retriever and answers with the gold."""
    from evalsuite.agent.method import Action

    segments: Segments = []
    for step in steps:
        segments.append((f"<think> I need to find: {step} </think>\n<search> {step} </search>", True))
        segments.append(
            (method.observation(Action("search", queries=[step]), retriever.search([step], topk), truncate), False)
        )
    segments.append((f"<think> I have the information I need. </think>\n<answer> {answer} </answer>", True))
    return segments


def sft_example(tokenizer: Any, prompt: str, segments: Segments) -> dict[str, list[int]]:
    """A pre-tokenized SFT row whose labels keep only the model's own tokens (-100 on prompt and retrieved text)."""
    from evalsuite.training.rollout import tokenize_segments

    tokens = tokenize_segments(tokenizer, prompt, segments, append_eos=True)
    labels = [-100] * len(tokens.prompt_ids) + [
        t if m else -100 for t, m in zip(tokens.completion_ids, tokens.env_mask)
    ]
    return {"input_ids": tokens.prompt_ids + tokens.completion_ids, "labels": labels}


def _quality_ok(reward: Any, text: str, golds: list[str], turns: list) -> bool:
    row = reward.breakdown([text], golden_answers=[golds], turns=[turns])[0]
    return row["em"] == 1.0 and (row["query_score"] == 1.0 or not any(t.query or t.sub_queries for t in turns))


def preference_key(reward: Any, rollout: Any, golds: list[str]) -> tuple[float, int]:
    """Final correctness first, then fewer low-quality queries (seeds/004, Stage 2)."""
    from evalsuite.methods.smartsearch.refinement import weak_queries

    em = reward.breakdown([rollout.response], golden_answers=[golds], turns=[rollout.turns])[0]["em"]
    return em, -len(weak_queries(rollout))


def refinement_pairs(
    engine: Any, refiner: Any, reward: Any, rollouts: list, golds_of: dict[str, list[str]], prompt_of: dict[str, str]
) -> list[dict]:
    """DPO pairs from refining every weak query of every rollout: best vs worst of (original, its branches)."""
    from evalsuite.methods.smartsearch.refinement import refine, weak_queries

    wanted = [(r, w) for r in rollouts for w in weak_queries(r)]
    branches = refine(engine, refiner, wanted, [f"{r.key}~{w.turn_position}" for r, w in wanted])
    family: dict[str, list] = {}
    for (source, _), branch in zip(wanted, branches):
        if branch is not None:
            family.setdefault(source.key, [source]).append(branch)
    pairs = []
    for members in family.values():
        golds = golds_of[members[0].question]
        ranked = sorted(members, key=lambda r: preference_key(reward, r, golds), reverse=True)
        best, worst = ranked[0], ranked[-1]
        if preference_key(reward, best, golds) > preference_key(reward, worst, golds):
            pairs.append({"prompt": prompt_of[best.question], "chosen": best.response, "rejected": worst.response})
    return pairs


def build_curriculum_data(
    config: TrainConfig,
    model_path: str,
    rows: list[dict[str, Any]],
    make_method: Callable[[dict[str, list[str]]], Any],
    reward: Any,
) -> tuple[list[dict], list[dict], dict[str, Any]]:
    """SFT rows (pre-tokenized, loss on the model's own tokens) and DPO rows (prompt, chosen, rejected), and counts.
    `make_method(golds)`: the evaluator method the rollouts play; `reward`: SmartSearch's, which screens and ranks."""
    transformers = require("transformers", "train", "the SmartSearch curriculum")
    from evalsuite.agent.engine import RolloutEngine
    from evalsuite.protocol.search_r1 import parse_trajectory
    from evalsuite.training.backend import TrainerBackend
    from evalsuite.methods.smartsearch.refinement import load_refiner
    from evalsuite.training.rollout import load_retriever

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_path)
    backend = TrainerBackend(model, tokenizer)
    golds_of = {r["question"]: r["golden_answers"] for r in rows}
    method = make_method(golds_of)
    # SmartSearch's own settings (its recipe's SmartSearchConfig, a TrainConfig subclass)
    curriculum_samples: int = getattr(config, "curriculum_samples")
    refine = getattr(config, "refine")
    retriever = load_retriever(config.retriever)
    rollout_config = config.rollout_config()
    style = method.resolve_style(config.prompt_style, backend.has_chat_template())
    engine = RolloutEngine(
        backend, method, retriever, type(rollout_config)(**{**rollout_config.__dict__, "temperature": 1.0}), style
    )
    items = [(f"{r['id']}#{k}", r["question"]) for r in rows for k in range(curriculum_samples)]
    rollouts = engine.run(items)
    sft, dpo = [], []
    counts = {"policy_rollouts": len(rollouts), "policy_screened": 0, "decomposition_trajectories": 0}
    by_question: dict[str, list] = {}
    for rollout in rollouts:
        by_question.setdefault(rollout.question, []).append(rollout)
    prompts = {row["question"]: engine.start("p", row["question"]).prompt for row in rows}
    for row in rows:
        golds = row["golden_answers"]
        prompt = prompts[row["question"]]
        good: list[Segments] = []
        bad: list[str] = []
        for rollout in by_question.get(row["question"], []):
            if _quality_ok(reward, rollout.response, golds, rollout.turns):
                good.append(rollout.segments)
            else:
                bad.append(rollout.response)
        counts["policy_screened"] += len(good)
        if row["reference_plan"] and golds:
            segments = decomposition_trajectory(
                method, retriever, row["reference_plan"], golds[0], rollout_config.topk, engine._truncate_obs
            )
            text = "".join(piece for piece, _ in segments)
            if _quality_ok(reward, text, golds, parse_trajectory(text).turns):
                good.append(segments)
                counts["decomposition_trajectories"] += 1
        sft += [sft_example(tokenizer, prompt, segments) for segments in good]
        if good and bad:
            chosen = "".join(piece for piece, _ in good[0])
            dpo += [{"prompt": prompt, "chosen": chosen, "rejected": text} for text in bad]
    refiner_style = "instruct" if backend.has_chat_template() else "base"
    refiner = load_refiner(refine.refiner, backend, refiner_style, refine.max_tokens, 0.0, 0)
    refined = refinement_pairs(engine, refiner, reward, rollouts, golds_of, prompts)
    counts.update(sft_rows=len(sft), dpo_pairs_decomposition=len(dpo), dpo_pairs_refined=len(refined))
    dpo = refined + dpo
    counts["dpo_pairs"] = len(dpo)
    return sft, dpo, counts


def finished_curriculum(config: TrainConfig, out: Path) -> str | None:
    """The model a finished SmartSearch curriculum left in `out` (its last configured stage's), else None."""
    last = "dpo" if config.dpo is not None else "sft" if config.sft is not None else None
    return finished_stage(out, last) if last else None


def run_curriculum(
    config: TrainConfig,
    model_path: str,
    out: Path,
    rows: list[dict[str, Any]],
    make_method: Callable[[dict[str, list[str]]], Any],
    reward: Any,
) -> tuple[str, dict[str, Any]]:
    """Stages 1-2; returns the model directory GRPO starts from and what each stage did."""
    sft_rows, dpo_rows, counts = build_curriculum_data(config, model_path, rows, make_method, reward)
    stages: dict[str, Any] = {"curriculum_data": counts}
    current = model_path
    # SFT rows come pre-tokenized with labels -100 on prompt and retrieved tokens: TRL uses the labels as they are
    plan = [
        ("sft", config.sft, sft_rows, "rows", "no screened trajectory"),
        ("dpo", config.dpo, dpo_rows, "pairs", "no preference pair"),
    ]
    for stage, settings, stage_rows, unit, empty in plan:
        if settings is None or not stage_rows:
            stages[stage] = {"skipped": "no config" if settings is None else empty}
            continue
        current, steps = run_stage(config, stage, settings, stage_rows, current, out)
        stages[stage] = {"steps": steps, unit: len(stage_rows)}
    return current, stages
