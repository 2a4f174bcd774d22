"""OASES's outcome-aligned process reward (seeds/003, Figure 2 and Tables 7-9).

For the ordered search states s_0..s_T of a trajectory (s_0: the question alone; s_t: the passages of the first t
searches), the same policy answers from each state (`methods.oases.method.StateEvaluator`, run by the rollout) and
γ_t is that answer's token F1 against the gold (Table 8: γ_0 = 0.333). The process reward of step t is γ_t − γ_{t−1};
the outcome score γ_out is the final answer's F1.

`credit: turn` (the recipe's): the completion's scalar is the outcome γ_out alone, and the trainer credits each step's
γ_t − γ_{t−1} to that step's own tokens (`methods.oases.turn_credit`, weight λ_proc). `credit: sum` folds them into the
scalar, which telescopes to γ_T − γ_0 and loses the per-step signal (for plain GRPO trainers and comparisons):

    r = γ_out + λ_proc · Σ_{t=1..T} (γ_t − γ_{t−1})

The `process` component is the summed form in both modes (logged). The state scores reach the reward as the rollout
column `state_scores`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evalsuite.methods.oases.method import process_rewards
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.answer import f1_score
from evalsuite.rewards.base import MethodReward, Sample


@dataclass(frozen=True)
class OasesRewardConfig:
    """λ_proc: the weight of the process rewards against the outcome score; `credit`: `turn` (per-step, by the
    trainer) or `sum` (folded into the completion's scalar)."""

    process_weight: float = 1.0
    credit: str = "turn"

    def __post_init__(self) -> None:
        if self.credit not in ("turn", "sum"):
            raise ValueError(f"credit must be 'turn' or 'sum', got {self.credit!r}")


class OasesReward(MethodReward):
    """Outcome F1 (plus, with `credit: sum`, the summed state-score differences γ_t − γ_{t−1})."""

    name = "oases"
    config_class = OasesRewardConfig
    components = ("outcome_f1", "process", "gamma_first", "gamma_last", "n_states")

    def __init__(self, config: OasesRewardConfig | None = None):
        super().__init__()
        self.settings = config or OasesRewardConfig()

    def score_one(self, sample: Sample) -> dict[str, float]:
        """One completion's components and total."""
        gammas = sample.row.get("state_scores")
        if gammas is None:
            raise EvalsuiteError(
                "the oases reward needs a `state_scores` column (γ_0..γ_T)",
                hint="train with the oases rollout, which evaluates every search state",
            )
        gammas = [float(g) for g in gammas]
        outcome = f1_score(sample.answer, sample.golds) if sample.answer is not None else 0.0
        process = sum(process_rewards(gammas)) if gammas else 0.0
        total = outcome + (self.settings.process_weight * process if self.settings.credit == "sum" else 0.0)
        return {
            "outcome_f1": outcome,
            "process": process,
            "gamma_first": gammas[0] if gammas else 0.0,
            "gamma_last": gammas[-1] if gammas else 0.0,
            "n_states": float(len(gammas)),
            "total": total,
        }

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        return [self.score_one(s) for s in batch]

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
