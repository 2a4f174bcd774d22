"""TRL `GRPOTrainer` rollouts played through the evaluator's own loop (`agent.engine.RolloutEngine`).

`rollout_func(prompts, trainer)` (TRL ≥ 1.16): prompts arrive repeated `num_generations` times;
we return, per prompt, `prompt_ids`, `completion_ids`, `logprobs=None` and `env_mask` (1 = a token the model
generated, 0 = an environment token: retrieved passages, the invalid-action message), which TRL multiplies into the
loss mask (Search-R1's `info_mask`). Token ids come from tokenizing the engine's segments one by one, as Search-R1
re-tokenizes its responses. Extra keys (`turns`, `model_text`, `n_turns`, `n_searches`, `stop_reason`,
`protocol_errors`) reach the reward functions as columns.

A method that plays its rollouts otherwise, or adds columns (OASES's state scores, SmartSearch's refined branches),
gives a `RolloutExtension` (its recipe's `rollout_extension`); nothing here knows any method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalsuite.agent.engine import Rollout, RolloutConfig, RolloutEngine, model_text
from evalsuite.agent.method import Method
from evalsuite.errors import EvalsuiteError
from evalsuite.training.backend import TrainerBackend


@dataclass
class TokenizedRollout:
    """One rollout as ids: the prompt, the completion, its environment mask and, per completion token, the index of
    the model turn that wrote it (−1: environment text), all the same length as the completion."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    turn_ids: list[int]


def tokenize_text(tokenizer: Any, prompt: str, completion: str, append_eos: bool) -> TokenizedRollout:
    """A single-segment completion written wholly by the model (OASES's evaluation answers)."""
    return tokenize_segments(tokenizer, prompt, [(completion, True)], append_eos)


def tokenize_rollout(tokenizer: Any, rollout: Rollout, append_eos: bool) -> TokenizedRollout:
    """Tokenize the prompt and each response segment; mask 0 on environment segments; EOS after a final answer."""
    return tokenize_segments(tokenizer, rollout.prompt, rollout.segments, append_eos)


def tokenize_segments(
    tokenizer: Any, prompt: str, segments: Sequence[tuple[str, bool]], append_eos: bool
) -> TokenizedRollout:
    """Prompt ids, then each segment's ids with mask 1 (model text) or 0 (environment text)."""
    bos = tokenizer.bos_token
    add_special = not (bos and prompt.startswith(bos))  # as HFBackend encodes the prompt it generates from
    prompt_ids = tokenizer(prompt, add_special_tokens=add_special)["input_ids"]
    completion_ids: list[int] = []
    env_mask: list[int] = []
    turn_ids: list[int] = []
    turn = -1
    for text, by_model in segments:
        turn += by_model  # model segment k is model turn k, empty or not
        if not text:
            continue
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        completion_ids.extend(ids)
        env_mask.extend([1 if by_model else 0] * len(ids))
        turn_ids.extend([turn if by_model else -1] * len(ids))
    if append_eos and tokenizer.eos_token_id is not None:
        completion_ids.append(tokenizer.eos_token_id)
        env_mask.append(1)
        turn_ids.append(max(turn, 0))  # the EOS closes the last model turn
    if not completion_ids:  # TRL needs at least one completion token per row
        completion_ids, env_mask, turn_ids = [tokenizer.eos_token_id], [1], [0]
    check_mask(completion_ids, env_mask)
    return TokenizedRollout(prompt_ids, completion_ids, env_mask, turn_ids)


def check_mask(completion_ids: Sequence[int], env_mask: Sequence[int]) -> None:
    """TRL pads a short mask with 1 (silently training environment tokens): refuse any length mismatch."""
    if len(completion_ids) != len(env_mask):
        raise EvalsuiteError(f"env_mask has {len(env_mask)} entries for {len(completion_ids)} completion tokens")
    if any(m not in (0, 1) for m in env_mask):
        raise EvalsuiteError("env_mask entries must be 0 or 1")


def load_retriever(spec: str) -> Any:
    """`adqa` → the BM25 index of the shipped AD-QA corpus; else an index directory or a /retrieve URL."""
    from evalsuite.agent.runner import load_retriever_spec

    return load_retriever_spec(spec, backend=None)


def prompt_question(prompt: Any) -> str:
    """The question a dataset prompt carries: the prompt string, or the last user message's content."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return str(users[-1])
    raise EvalsuiteError("a training prompt must be the question string or a message list with a user message")


def policy_backend(trainer: Any, model: Any = None) -> Any:
    """The generation backend of a rollout: vLLM when TRL runs a colocated engine (`use_vllm`), else transformers."""
    generation = getattr(trainer, "vllm_generation", None)
    if getattr(trainer, "use_vllm", False) and generation is not None and getattr(generation, "llm", None) is not None:
        from evalsuite.models.vllm import VLLMBackend

        return VLLMBackend.from_llm(generation.llm, {"live": True, "colocated": True})
    # generate in the trainer's precision: under bf16 autocast when it trains with bf16
    bf16 = bool(getattr(getattr(trainer, "args", None), "bf16", False))
    return TrainerBackend(trainer.model if model is None else model, trainer.processing_class, bf16=bf16)


# The per-example numbers every training step logs about its rollouts. They are computed by the metric registry,
# exactly as `evalsuite run` and `score` compute them, so a training log's n_searches is a run's n_searches (each
# sub-query counts one) and a new registered metric can be logged by naming it here.
ROLLOUT_METRICS = ("n_turns", "n_searches")


def rollout_metrics(rollout: Rollout) -> dict[str, float]:
    """`ROLLOUT_METRICS` of one rollout, through the metric registry."""
    from evalsuite.metrics.registry import MetricInput, get_metric

    example = MetricInput(None, (), (), rollout.turns)
    return {name: float(get_metric(name).compute(example)) for name in ROLLOUT_METRICS}


class RolloutExtension:
    """What a method changes in the shared rollout function. The defaults play each prompt once and add nothing; a
    method overrides `play` (other rollouts for a batch) or `columns` (more columns per rollout), and keeps whatever
    its trainer subclass reads from the last batch on itself."""

    def play(self, engine: RolloutEngine, questions: list[str]) -> list[Rollout]:
        """The batch's rollouts, one per prompt (TRL repeats each question `num_generations` times, in groups)."""
        return engine.run([(f"r{i}", q) for i, q in enumerate(questions)])

    def columns(
        self, engine: RolloutEngine, rollouts: list[Rollout], tokenized: list[TokenizedRollout], tokenizer: Any
    ) -> dict[str, list[Any]]:
        """Columns beside the shared ones, one value per rollout, computed with the live model."""
        return {}


class SearchRollout:
    """The rollout function: plays `method` against `retriever` with the trainer's live model."""

    def __init__(
        self,
        method: Method,
        retriever: Any,
        config: RolloutConfig,
        style: str = "auto",
        extension: RolloutExtension | None = None,
    ):
        self.method, self.retriever, self.config = method, retriever, config
        self.style = style
        self.extension = extension or RolloutExtension()
        self.last: list[Rollout] = []
        # the backend of the last rollout: hf-trainer, or vllm (TRL's colocated engine)
        self.generated_by: str | None = None

    def engine(self, trainer: Any, model: Any = None) -> RolloutEngine:
        """An engine over the trainer's live model, sampling at the trainer's temperature, seeded by its step: TRL's
        colocated vLLM engine when the trainer has one (its weights synced by TRL before each rollout,
        `training.vllm_sync`), else the policy itself through transformers."""
        backend = policy_backend(trainer, model)
        temperature = float(getattr(trainer.args, "temperature", 1.0) or 1.0)
        seed = int(getattr(trainer.args, "seed", 0)) + int(getattr(trainer.state, "global_step", 0))
        return self.engine_over(backend, temperature, seed)

    def engine_over(self, backend: Any, temperature: float, seed: int) -> RolloutEngine:
        """An engine over `backend` sampling at `temperature` with `seed` (a trainer's step, or a policy scored
        outside training: `training.policy_score`)."""
        self.generated_by = backend.name
        config = RolloutConfig(**{**self.config.__dict__, "temperature": temperature, "seed": seed})
        style = self.method.resolve_style(self.style, backend.has_chat_template())
        return RolloutEngine(backend, self.method, self.retriever, config, style)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any] | None]:
        from trl.models import unwrap_model_for_generation

        questions = [prompt_question(p) for p in prompts]
        # as TRL generates: the bare model, with ZeRO-3 shards gathered once instead of at every forward
        with unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as model:
            return self.play(self.engine(trainer, model), questions, trainer.processing_class)

    def play(self, engine: RolloutEngine, questions: list[str], tokenizer: Any) -> dict[str, list[Any] | None]:
        """The batch's rollouts on `engine` as TRL's rollout columns (ids, environment mask, turns, model text, the
        rollout statistics, the extension's columns)."""
        rollouts = self.extension.play(engine, questions)
        tokenized = [
            tokenize_rollout(tokenizer, rollout, append_eos=rollout.stop_reason == "answer") for rollout in rollouts
        ]
        extra = self.extension.columns(engine, rollouts, tokenized, tokenizer)
        self.last = rollouts
        out: dict[str, list[Any]] = {
            k: []
            for k in (
                "prompt_ids",
                "completion_ids",
                "env_mask",
                "turns",
                "model_text",
                *ROLLOUT_METRICS,
                "stop_reason",
                "protocol_errors",
            )
        }
        for rollout, tokens in zip(rollouts, tokenized):
            out["prompt_ids"].append(tokens.prompt_ids)
            out["completion_ids"].append(tokens.completion_ids)
            out["env_mask"].append(tokens.env_mask)
            out["turns"].append([t.model_dump() for t in rollout.turns])
            out["model_text"].append(model_text(rollout))
            for name, value in rollout_metrics(rollout).items():
                out[name].append(value)
            out["stop_reason"].append(rollout.stop_reason)
            out["protocol_errors"].append(self.method.protocol_errors(rollout.response, rollout.turns))
        for name, values in extra.items():
            if name in out or len(values) != len(rollouts):
                raise EvalsuiteError(
                    f"the rollout extension's column {name!r} has {len(values)} values for {len(rollouts)} rollouts"
                    + (" and repeats a shared column" if name in out else "")
                )
            out[name] = values
        # TRL recomputes the logprobs from the ids (no vLLM sampling logprobs here)
        return {**out, "logprobs": None}
