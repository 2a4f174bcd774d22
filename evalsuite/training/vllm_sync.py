"""GRPO generation through vLLM (TRL's `use_vllm=True, vllm_mode="colocate"`): the rollout plays on TRL's colocated
engine, and the engine gets the policy's weights after every optimizer step.

TRL 1.16 starts that engine with vLLM's dtype "auto", which turns a float32 checkpoint into bfloat16 (vLLM downcasts
fp32 models), and with compilation; on vLLM's CPU engine both are what the evaluation backends avoid (bf16 greedy
output depended on the batch, and its log-probabilities sat ~0.1 nats from the fp32 policy's). TRL has no option for
either, so while the trainer is built (and only then) the vLLM constructor TRL calls is given the CPU-safe settings
(`cpu_engine_settings`); on a GPU nothing is changed.

TRL's weight sync (`VLLMGeneration.sync_weights`, TRL 1.16) calls the vLLM model's `load_weights` tensor by tensor.
On vLLM's CPU engine that fails at the first step (`'Parameter' object has no attribute 'weight_loader'`): after
loading, the CPU path repacks linear weights into its kernels' layout and drops the loaders. vLLM's own
`reload_weights` (on the worker) loads checkpoint-format tensors and repeats that processing, so the sync here hands
TRL's parameter stream to it, then clears the prefix cache (cached KV of the old weights must not be reused). The
adapter is set on the trainer's `vllm_generation` object, never in TRL's or vLLM's installed files, and only where
TRL's own sync cannot work (vLLM's CPU platform); on a GPU TRL's sync runs unchanged.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evalsuite.models.vllm_engine import llvmlite_ffi_hidden


def engine_worker(llm: Any) -> Any:
    """The in-process worker of a colocated engine (TRL starts
    it with `distributed_executor_backend="external_launcher"`)."""
    return llm.llm_engine.model_executor.driver_worker.worker


def sync_weights_by_reload(generation: Any) -> None:
    """Load the policy's current parameters into the colocated engine through vLLM's `reload_weights`."""
    worker = engine_worker(generation.llm)
    worker.reload_weights(weights_iterator=generation._iter_named_params(), is_checkpoint_format=True)
    generation.llm.reset_prefix_cache()


def needs_reload_sync(llm: Any) -> bool:
    """True on vLLM's CPU platform, whose repacked weights TRL's `load_weights` sync cannot write."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu()) and hasattr(engine_worker(llm), "reload_weights")


def install_weight_sync(trainer: Any) -> bool:
    """Give a colocated-vLLM trainer the reload sync where it needs it; True when installed."""
    generation = getattr(trainer, "vllm_generation", None)
    if not getattr(trainer, "use_vllm", False) or generation is None or getattr(generation, "mode", None) != "colocate":
        return False
    if not needs_reload_sync(generation.llm):
        return False
    generation.sync_weights = types.MethodType(sync_weights_by_reload, generation)
    return True


@contextmanager
def cpu_engine_settings(use_vllm: bool) -> Iterator[None]:
    """While TRL builds its colocated engine on vLLM's CPU platform: float32 (unless a dtype is given) and eager mode.
    The constructor TRL's module calls is wrapped for the duration and restored after, in this process only."""
    if not use_vllm:
        yield
        return
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        yield
        return
    import trl.generation.vllm_generation as trl_vllm

    original = trl_vllm.LLM

    def build(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dtype") in (None, "auto"):
            kwargs["dtype"] = "float32"
        kwargs.setdefault("enforce_eager", True)
        return original(*args, **kwargs)

    trl_vllm.LLM = build
    try:
        with llvmlite_ffi_hidden():
            yield
    finally:
        trl_vllm.LLM = original


def engine_logprobs(llm: Any, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    """The engine's log-probability of each completion token after the prompt (prompt_logprobs of the joined ids):
    what the engine would sample from, to compare with the trainer's policy."""
    import vllm

    params = vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
    ids = [*prompt_ids, *completion_ids]
    (output,) = llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
    scored = output.prompt_logprobs[len(prompt_ids) :]
    return [float(position[token].logprob) for position, token in zip(scored, completion_ids)]


def policy_logprobs(model: Any, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    """The trainer's policy's log-probability of each completion token after the prompt (fp32, no gradients)."""
    import torch

    ids = torch.tensor([[*prompt_ids, *completion_ids]], device=next(model.parameters()).device)
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    return logprobs.gather(1, torch.tensor(completion_ids, device=logits.device)[:, None])[:, 0].tolist()
