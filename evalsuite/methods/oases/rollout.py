"""OASES's rollouts: besides each trajectory, the same policy answers from every search state s_0..s_T (the state
scores γ_t of the process reward, `methods.oases.method.StateEvaluator`). The extension keeps what its trainer
subclass (`methods.oases.cotrain`) reads from the last batch: the evaluation answers as token ids (co-trained) and,
per completion, which model turn wrote each token (`methods.oases.turn_credit`)."""

from __future__ import annotations

from typing import Any

from evalsuite.agent.engine import Rollout, RolloutEngine
from evalsuite.errors import EvalsuiteError
from evalsuite.methods.oases.cotrain import EvalSample
from evalsuite.methods.oases.method import StateEvaluator, search_states
from evalsuite.methods.oases.turn_credit import CompletionTurns
from evalsuite.training.rollout import RolloutExtension, TokenizedRollout, tokenize_text


def completion_turns(
    rollouts: list[Rollout], state_scores: list[list[float]], tokenized: list[TokenizedRollout]
) -> list[CompletionTurns]:
    """What the trainer needs to credit each turn's process reward to that turn's tokens, per rollout."""
    return [
        CompletionTurns(
            rollout.question,
            gammas,
            [bool(t.passages) for t in rollout.turns if not t.extra.get("initial_retrieval")],
            tokens.turn_ids,
        )
        for rollout, gammas, tokens in zip(rollouts, state_scores, tokenized)
    ]


class StateScores(RolloutExtension):
    """Adds the `state_scores` column (γ_0..γ_T per rollout, F1 of the state's answer against the gold)."""

    def __init__(self, golds: dict[str, list[str]], max_tokens: int = 32, temperature: float | None = None):
        self.golds = golds
        self.max_tokens = max_tokens
        self.temperature = temperature  # None: the trainer's
        self.eval_samples: list[EvalSample] = []  # the last batch's state-evaluation answers
        self.turn_credit: list[CompletionTurns] = []  # per completion, its turns' state scores and token→turn map

    def columns(
        self, engine: RolloutEngine, rollouts: list[Rollout], tokenized: list[TokenizedRollout], tokenizer: Any
    ) -> dict[str, list[Any]]:
        scores = self._state_scores(engine, rollouts, tokenizer)
        self.turn_credit = completion_turns(rollouts, scores, tokenized)
        return {"state_scores": scores}

    def _state_scores(self, engine: RolloutEngine, rollouts: list[Rollout], tokenizer: Any) -> list[list[float]]:
        """γ_0..γ_T of each rollout: the policy answers from each search state; F1 against the gold. Keeps the
        answers as `eval_samples` (token ids and γ) for the co-training loss."""
        temperature = engine.config.temperature if self.temperature is None else self.temperature
        style = "instruct" if engine.backend.has_chat_template() else "base"
        evaluator = StateEvaluator(
            engine.backend, style=style, max_tokens=self.max_tokens, temperature=temperature, seed=engine.config.seed
        )
        scores, samples = [], []
        for rollout in rollouts:
            golds = self.golds.get(rollout.question)
            if golds is None:
                raise EvalsuiteError(
                    f"no golden answers for the training question {rollout.question[:80]!r}",
                    hint="pass the dataset's golds to StateScores(golds=...)",
                )
            states = search_states(rollout.turns)
            evaluations = evaluator(rollout.question, golds, states)
            scores.append([e.score for e in evaluations])
            for prompt, evaluation in zip(evaluator.prompts(rollout.question, states), evaluations):
                ids = tokenize_text(
                    tokenizer, prompt, evaluation.text, append_eos=evaluation.finish_reason in ("stop", "eos")
                )
                samples.append(EvalSample(rollout.question, ids.prompt_ids, ids.completion_ids, evaluation.score))
        self.eval_samples = samples
        return scores
