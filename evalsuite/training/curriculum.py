"""SmartSearch's curriculum before GRPO (seeds/004, "Three-Stage Curriculum"): stage 1 SFT on quality-screened
trajectories, stage 2 DPO on preferred (refined) vs original trajectories.

Screened trajectories: a trajectory qualifies when its answer is correct and every query is high-quality (novel, and
useful when a judge is configured). Besides the policy's own sampled rollouts we build one per training row from its
gold decomposition (each step searched against the real retriever, then the gold answer): the paper distils these
from a teacher model; the decomposition stands in for that teacher here. DPO pairs prefer, for the same question,
the qualifying trajectory over a policy rollout that failed or had weak queries (the paper's refined-vs-original pairs;
our "refinement" is the decomposition trajectory, since no refiner model is available).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsuite.errors import require
from evalsuite.training.config import TrainConfig
from evalsuite.training.log import make_callback, LOG_FILE


def decomposition_trajectory(method: Any, retriever: Any, question: str, steps: list[str], answer: str, topk: int, truncate) -> str:
    """A Search-R1-protocol response that searches each step with the real retriever and answers with the gold."""
    parts = []
    for step in steps:
        hits = retriever.search([step], topk)
        parts.append(f"<think> I need to find: {step} </think>\n<search> {step} </search>")
        from evalsuite.agent.method import Action

        parts.append(method.observation(Action("search", queries=[step]), hits, truncate))
    parts.append(f"<think> I have the information I need. </think>\n<answer> {answer} </answer>")
    return "".join(parts)


def _quality_ok(reward: Any, question: str, text: str, golds: list[str], turns: list) -> bool:
    row = reward.breakdown([text], golden_answers=[golds], turns=[turns])[0]
    return row["em"] == 1.0 and (row["query_score"] == 1.0 or not any(t.query or t.sub_queries for t in turns))


def build_curriculum_data(config: TrainConfig, model_path: str, rows: list[dict[str, Any]]) -> tuple[list[dict], list[dict], dict[str, Any]]:
    """SFT rows (prompt, completion) and DPO rows (prompt, chosen, rejected), and counts for the manifest."""
    transformers = require("transformers", "train", "the SmartSearch curriculum")
    from evalsuite.agent.engine import RolloutEngine
    from evalsuite.agent.method import get_method
    from evalsuite.agent.trajectory import parse_trajectory
    from evalsuite.rewards import get_reward
    from evalsuite.training.backend import TrainerBackend
    from evalsuite.training.trainer import load_retriever

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_path)
    backend = TrainerBackend(model, tokenizer)
    method = get_method("smartsearch")
    retriever = load_retriever(config.retriever)
    rollout_config = config.rollout_config()
    style = method.resolve_style(config.prompt_style, backend.chat_template([{"role": "user", "content": "x"}]) is not None)
    engine = RolloutEngine(backend, method, retriever, type(rollout_config)(**{**rollout_config.__dict__, "temperature": 1.0}), style)
    reward = get_reward("smartsearch", config.reward.settings)
    items = [(f"{r['id']}#{k}", r["question"]) for r in rows for k in range(config.curriculum_samples)]
    rollouts = engine.run(items)
    sft, dpo = [], []
    counts = {"policy_rollouts": len(rollouts), "policy_screened": 0, "decomposition_trajectories": 0}
    by_question: dict[str, list] = {}
    for rollout in rollouts:
        by_question.setdefault(rollout.question, []).append(rollout)
    for row in rows:
        golds = row["golden_answers"]
        prompt = engine.start("p", row["question"]).prompt
        good: list[str] = []
        bad: list[str] = []
        for rollout in by_question.get(row["question"], []):
            (good if _quality_ok(reward, row["question"], rollout.response, golds, rollout.turns) else bad).append(rollout.response)
        counts["policy_screened"] += len(good)
        if row["reference_plan"] and golds:
            text = decomposition_trajectory(method, retriever, row["question"], row["reference_plan"], golds[0], rollout_config.topk, engine._truncate_obs)
            if _quality_ok(reward, row["question"], text, golds, parse_trajectory(text).turns):
                good.append(text)
                counts["decomposition_trajectories"] += 1
        sft += [{"prompt": prompt, "completion": text} for text in good]
        if good and bad:
            dpo += [{"prompt": prompt, "chosen": good[0], "rejected": text} for text in bad]
    counts.update(sft_rows=len(sft), dpo_pairs=len(dpo))
    return sft, dpo, counts


def _train_and_save(trainer: Any, path: Path) -> str:
    """Train one stage and save model and tokenizer where the next stage starts from."""
    trainer.train()
    trainer.save_model(str(path))
    trainer.processing_class.save_pretrained(str(path))
    return str(path)


def run_curriculum(config: TrainConfig, model_path: str, out: Path, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Stages 1-2; returns the model directory GRPO starts from and what each stage did."""
    trl = require("trl", "train", "the SmartSearch curriculum")
    datasets = require("datasets", "train", "the SmartSearch curriculum")
    sft_rows, dpo_rows, counts = build_curriculum_data(config, model_path, rows)
    stages: dict[str, Any] = {"curriculum_data": counts}
    current = model_path
    common = {"report_to": "none", "save_strategy": "no", "logging_steps": 1}
    if config.sft is not None and sft_rows:
        sft_config = trl.SFTConfig(**{**common, **config.sft, "output_dir": str(out / "sft"), "completion_only_loss": True})
        trainer = trl.SFTTrainer(model=current, args=sft_config, train_dataset=datasets.Dataset.from_list(sft_rows), callbacks=[make_callback(out / LOG_FILE, "sft")])
        current = _train_and_save(trainer, out / "sft" / "model")
        stages["sft"] = {"steps": trainer.state.global_step, "rows": len(sft_rows)}
    else:
        stages["sft"] = {"skipped": "no config" if config.sft is None else "no screened trajectory"}
    if config.dpo is not None and dpo_rows:
        dpo_config = trl.DPOConfig(**{**common, **config.dpo, "output_dir": str(out / "dpo")})
        trainer = trl.DPOTrainer(model=current, args=dpo_config, train_dataset=datasets.Dataset.from_list(dpo_rows), callbacks=[make_callback(out / LOG_FILE, "dpo")])
        current = _train_and_save(trainer, out / "dpo" / "model")
        stages["dpo"] = {"steps": trainer.state.global_step, "pairs": len(dpo_rows)}
    else:
        stages["dpo"] = {"skipped": "no config" if config.dpo is None else "no preference pair"}
    return current, stages
