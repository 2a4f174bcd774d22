"""SmartSearch's composite reward (seeds/004, "Dual-Level Credit
Assessment" and Stage 3 "Query Aware Policy Optimization").

Each query q gets s_q = novelty · usefulness ∈ {0, 1}: novelty by rule (its documents overlap earlier rounds' in at most
K documents, `metrics.process.novelty_flags`), usefulness from the evaluator model (`turn.extra["usefulness"]`, set by
`SmartSearch(judge=...)` during the rollout). "Outcome reward ± scaled process rewards + format reward" is, with the
paper's scale left to us (α = 0.2):

    r = o + α · (1/N) Σ_q (2 s_q − 1) + r_format

so each high-quality query adds and each low-quality one subtracts α/N. No queries → no process term. A query without
a usefulness verdict (no judge configured) counts as useful, and `usefulness_judged` records the share judged.

The outcome o is EM by default (`outcome_metric: f1`: token F1). The seed names no metric for its "outcome reward"
(004:164); it reports EM and F1 (004:198) and says plain GRPO "converges to lower F1" (004:226), while its stages 1
and 2 rank by "correct final answers" and "final correctness" (004:152, 004:158), a yes/no that EM is. Both choices
are assumed (configs/smartsearch/gpu.yaml says why).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match, f1_score
from evalsuite.metrics.process import NOVELTY_MAX_OVERLAP, novelty_flags, search_rounds
from evalsuite.rewards.base import MethodReward, Sample, format_valid


@dataclass(frozen=True)
class SmartSearchRewardConfig:
    """The process scale α, the format reward for a valid sequence, the novelty threshold K and the outcome metric
    (`em` or `f1`)."""

    process_scale: float = 0.2
    format_score: float = 0.1
    max_overlap: int = NOVELTY_MAX_OVERLAP
    outcome_metric: str = "em"

    def __post_init__(self) -> None:
        if self.outcome_metric not in OUTCOME_METRICS:
            raise ValueError(f"outcome_metric must be one of {', '.join(OUTCOME_METRICS)}, got {self.outcome_metric!r}")


OUTCOME_METRICS = ("em", "f1")


class SmartSearchReward(MethodReward):
    """EM ± scaled per-query novelty×usefulness + format."""

    name = "smartsearch"
    config_class = SmartSearchRewardConfig
    components = (
        "em",
        "f1",
        "outcome",
        "format",
        "process",
        "novelty",
        "usefulness",
        "query_score",
        "usefulness_judged",
    )

    def __init__(self, config: SmartSearchRewardConfig | None = None):
        super().__init__()
        self.settings = config or SmartSearchRewardConfig()

    def query_scores(self, sample: Sample) -> tuple[list[int], list[int], list[int | None]]:
        """Per search round: novelty, usefulness (None when unjudged) and s_q."""
        rounds = [t for t in sample.turns if t.query is not None or t.sub_queries]
        novelty = novelty_flags(search_rounds(rounds), self.settings.max_overlap)
        useful = [t.extra.get("usefulness") for t in rounds]
        scores = [int(n and (u is None or bool(u))) for n, u in zip(novelty, useful)]
        return [int(n) for n in novelty], scores, useful

    def score_one(self, sample: Sample) -> dict[str, float]:
        """One completion's components and total."""
        novelty, scores, useful = self.query_scores(sample)
        n = len(scores)
        process = self.settings.process_scale * sum(2 * s - 1 for s in scores) / n if n else 0.0
        em = exact_match(sample.answer, sample.golds) if sample.answer is not None else 0.0
        f1 = f1_score(sample.answer, sample.golds) if sample.answer is not None else 0.0
        outcome = f1 if self.settings.outcome_metric == "f1" else em
        fmt = self.settings.format_score if format_valid(sample) else 0.0
        judged = [u for u in useful if u is not None]
        return {
            "em": em,
            "f1": f1,
            "outcome": outcome,
            "format": fmt,
            "process": process,
            "novelty": sum(novelty) / n if n else 0.0,
            "usefulness": sum(bool(u) for u in judged) / len(judged) if judged else 0.0,
            "query_score": sum(scores) / n if n else 0.0,
            "usefulness_judged": len(judged) / n if n else 0.0,
            "total": outcome + process + fmt,
        }

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        return [self.score_one(s) for s in batch]

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
