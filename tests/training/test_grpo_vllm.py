"""GRPO generation through vLLM (TRL's use_vllm, colocate) on vLLM's CPU engine, with the real SmolLM2 and BM25 over
AD-QA: two steps of the Search-R1 recipe's `cpu_vllm` config, every rollout searching, retrieved tokens masked, and
after each optimizer step the engine generating from the updated weights (its log-probabilities of a fixed
completion move with the policy and agree with it). .ci/run's vLLM step runs this (`pytest -m vllm`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.training.test_env_mask_grad import AlwaysSearch

NO_VLLM = "vLLM is not installed (scripts/install_vllm_cpu.sh installs its CPU engine; .ci/run's vLLM step runs these tests)"
pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason=NO_VLLM)]

# fp32 on both sides; vLLM's CPU kernels and torch's sum in different orders. Measured on this project's CPU (an AMD
# EPYC with AVX2): under 2e-3 apart before training and 5.1e-3 after two steps, while the two steps moved the same
# log-probabilities by 5.7e-2 (lr 1e-5). A bound of 1e-2, and a move of at least three bounds.
AGREEMENT = 1e-2


def test_grpo_through_vllm_masks_retrieval_and_the_engine_follows_the_policy(tmp_path):
    from evalsuite.training.config import load_config
    from evalsuite.training.data import training_rows
    from evalsuite.training.model import resolve_model
    from evalsuite.training.trainer import build_grpo, build_reward, generation_record
    from evalsuite.training.vllm_sync import engine_logprobs, policy_logprobs

    import bm25s  # noqa: F401  (as a process that has opened a BM25 index before: numba and llvmlite loaded)

    config = load_config("cpu_vllm", "search-r1")
    assert config.grpo["use_vllm"] is True
    rows = training_rows(config)
    trainer, rollout = build_grpo(config, resolve_model(config.model), Path(tmp_path), rows, build_reward(config))
    rollout.method = AlwaysSearch()  # every rollout retrieves, so the mask has environment tokens to hide
    masks: list[list[int]] = []
    play = rollout.__call__

    def recorded(prompts, trainer_):
        out = play(prompts, trainer_)
        masks.extend(out["env_mask"])
        return out

    trainer.rollout_func = recorded
    record = generation_record(trainer)
    assert record["engine"].startswith("vllm-cpu") and record["weight_sync"].startswith("vLLM reload_weights")

    tokenizer = trainer.processing_class
    prompt_ids = tokenizer("Question: which channel had the highest click-through rate?\n")["input_ids"]
    completion_ids = tokenizer("<think> compare the channels </think>\n<search> click-through rate by channel </search>", add_special_tokens=False)["input_ids"]
    llm = trainer.vllm_generation.llm
    engine_before = engine_logprobs(llm, prompt_ids, completion_ids)
    policy_before = policy_logprobs(trainer.model, prompt_ids, completion_ids)
    gap_before = max(abs(a - b) for a, b in zip(engine_before, policy_before))
    print(f"engine-policy gap before training {gap_before:.2e}")
    assert gap_before < AGREEMENT

    trainer.train()
    assert trainer.state.global_step == 2
    assert rollout.generated_by == "vllm"  # the rollouts played on TRL's colocated engine, not on transformers
    assert masks and all(0 in mask and 1 in mask for mask in masks)  # retrieved tokens masked, model tokens trained

    trainer.vllm_generation.sync_weights()  # what TRL does before the next rollout
    engine_after = engine_logprobs(llm, prompt_ids, completion_ids)
    policy_after = policy_logprobs(trainer.model, prompt_ids, completion_ids)
    moved = max(abs(a - b) for a, b in zip(policy_after, policy_before))
    engine_moved = max(abs(a - b) for a, b in zip(engine_after, engine_before))
    gap = max(abs(a - b) for a, b in zip(engine_after, policy_after))
    print(f"policy moved {moved:.2e}, engine moved {engine_moved:.2e}, engine-policy gap after sync {gap:.2e}")
    assert moved > 3 * AGREEMENT  # the two steps changed the policy clearly more than the kernels differ
    assert gap < AGREEMENT and engine_moved > 3 * AGREEMENT
