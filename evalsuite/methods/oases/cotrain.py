"""OASES's search-evaluation co-training (seeds/003, Figure 2): the state-evaluation answers are trained too; the
trainer subclass also applies the per-turn credit of `methods.oases.turn_credit`.

The rollout has the policy answer from every search state s_0..s_T (`<eval>` prompts); those answers give the state
scores γ_t of the process reward, and each is itself a training sample with reward γ_t, so that the evaluator (the
same weights) keeps up with the search policy. The paper does this with PPO. Under GRPO we give each evaluation
answer a group-relative advantage, its γ minus the mean γ of the evaluation answers to the same question in the
generation batch, divided by their standard deviation (as TRL's GRPO scales), and add the on-policy policy-gradient
term

    L_eval = − Σ_i A_i Σ_t log π(ỹ_i,t | prompt_i) / Σ_i |ỹ_i|

weighted by `state_eval.weight` to TRL's search loss at every optimizer micro-step. With one update per generation
(TRL's default `num_iterations: 1`) the clipped ratio is 1, so this is GRPO's own gradient for these samples.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from evalsuite.errors import EvalsuiteError, require
from evalsuite.methods.oases.turn_credit import STD_EPS


@dataclass
class EvalSample:
    """One state-evaluation answer as ids, with its γ (the answer's token F1 against the gold)."""

    question: str
    prompt_ids: list[int]
    completion_ids: list[int]
    score: float


def group_advantages(samples: list[EvalSample], scale: bool = True) -> list[float]:
    """γ_i − mean γ over the same question's samples (÷ their population std + ε when `scale`); a lone sample gets 0."""
    groups: dict[str, list[float]] = {}
    for sample in samples:
        groups.setdefault(sample.question, []).append(sample.score)
    out = []
    for sample in samples:
        scores = groups[sample.question]
        advantage = sample.score - statistics.fmean(scores)
        if scale and len(scores) > 1:
            advantage /= statistics.pstdev(scores) + STD_EPS
        out.append(advantage)
    return out


def evaluation_loss(model: Any, samples: list[EvalSample], advantages: list[float], pad_id: int) -> Any:
    """The token-mean policy-gradient loss of the evaluation answers (prompt tokens carry no loss)."""
    torch = require("torch", "train", "OASES co-training")
    device = next(model.parameters()).device
    width = max(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    target_mask = torch.zeros((len(samples), width - 1))
    for row, sample in enumerate(samples):
        sequence = sample.prompt_ids + sample.completion_ids
        ids[row, : len(sequence)] = torch.tensor(sequence)
        attention[row, : len(sequence)] = 1
        # position p predicts token p+1: the completion's tokens are predicted from len(prompt)-1 on
        target_mask[row, len(sample.prompt_ids) - 1 : len(sequence) - 1] = 1
    ids, attention, target_mask = ids.to(device), attention.to(device), target_mask.to(device)
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    logps = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    weights = torch.tensor(advantages, dtype=logps.dtype, device=device).unsqueeze(1)
    return -(weights * logps * target_mask).sum() / target_mask.sum().clamp(min=1.0)


def chunks(items: list[Any], count: int) -> list[list[Any]]:
    """`items` in `count` contiguous, nearly equal parts (some may be empty)."""
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def oases_trainer(trl: Any) -> type:
    """TRL's GRPOTrainer plus OASES's two additions (a subclass, so every TRL option keeps working): per-turn
    advantages of the process rewards (`methods.oases.turn_credit`) and the evaluation-answer loss."""
    from evalsuite.methods.oases.turn_credit import token_advantages, turn_advantages

    class OasesGRPOTrainer(trl.GRPOTrainer):
        """Credits each turn's process reward to its tokens (`turn_weight` λ; 0: off) and adds `eval_weight · L_eval`
        of the current generation batch's evaluation answers to each micro-step's loss (0: off)."""

        def __init__(self, *args: Any, state_scores: Any, eval_weight: float, turn_weight: float = 0.0, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.state_scores = state_scores  # the rollout's `methods.oases.rollout.StateScores`
            self.eval_weight = eval_weight
            self.turn_weight = turn_weight
            self._eval_parts: list[list[tuple[EvalSample, float]]] = []
            self._eval_calls = 0

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            scale = self.args.scale_rewards not in (False, "none")
            mode = "train" if self.model.training else "eval"
            if self.turn_weight:
                credit = list(self.state_scores.turn_credit)
                if len(credit) != output["advantages"].shape[0]:
                    raise EvalsuiteError(
                        f"per-turn credit for {len(credit)} completions, advantages for {output['advantages'].shape[0]}"
                    )
                per_turn = turn_advantages(credit, self.turn_weight, scale=scale)
                output["advantages"] = token_advantages(
                    output["advantages"], credit, per_turn, output["completion_ids"].shape[1]
                )
                steps = [a for turns in per_turn for a in turns if a]
                self._metrics[mode]["oases/turn_advantage_abs"].append(
                    statistics.fmean(abs(a) for a in steps) if steps else 0.0
                )
            samples = list(self.state_scores.eval_samples) if self.eval_weight else []
            advantages = group_advantages(samples, scale=scale)
            # TRL splits each generation batch into steps_per_generation micro-batches; the evaluation answers too
            self._eval_parts = chunks(list(zip(samples, advantages)), self.args.steps_per_generation)
            self._eval_calls = 0
            if samples:
                self._metrics[mode]["oases/eval_samples"].append(float(len(samples)))
                self._metrics[mode]["oases/eval_score"].append(statistics.fmean(s.score for s in samples))
            return output

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if not self.eval_weight or not self._eval_parts:
                return loss
            part = self._eval_parts[self._eval_calls % len(self._eval_parts)]
            self._eval_calls += 1
            if not part:
                return loss
            samples, advantages = [s for s, _ in part], [a for _, a in part]
            eval_loss = evaluation_loss(model, samples, advantages, self.processing_class.pad_token_id)
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["oases/eval_loss"].append(eval_loss.item())
            return loss + self.eval_weight * eval_loss

    return OasesGRPOTrainer
