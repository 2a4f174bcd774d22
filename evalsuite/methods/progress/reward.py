"""Progress's reward (seeds/000, eq. 5): r = r_ans + r_format + λ_cov · r_cov, λ_cov = 0.2.

r_ans is exact match, r_format Search-R1's format reward (the paper gives no magnitude; we use Search-R1's
study value λ_f = 0.2 for a valid sequence), r_cov the F1 of policy queries against the teacher's essential queries
(eq. 3-4, `evalsuite.metrics.coverage`: precision |I|/|Q^P|, recall |I|/|Q^T|, one-to-one matching), where the
matches I come from a `Matcher` (an LLM judge in the paper). Teacher queries are a dataset column
(`teacher_queries`), generated offline (`evalsuite teacher-queries`). Edge cases: no policy queries → r_cov = 0;
no teacher queries → r_cov = 0 and `coverage_defined` = 0 (the row carries no coverage signal).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match
from evalsuite.metrics.coverage import coverage
from evalsuite.rewards.base import MethodReward, Sample, format_valid
from evalsuite.rewards.matching import LexicalMatcher, Matcher


@dataclass(frozen=True)
class ProgressRewardConfig:
    """λ_cov of eq. 5 (0.2, §4) and the format reward's value for a valid sequence."""

    coverage_weight: float = 0.2
    format_score: float = 0.2


class ProgressReward(MethodReward):
    """r_ans + r_format + λ_cov · coverage F1 against cached teacher queries."""

    name = "progress"
    config_class = ProgressRewardConfig
    components = ("em", "format", "coverage_f1", "coverage_precision", "coverage_recall", "coverage_defined")

    def __init__(self, config: ProgressRewardConfig | None = None, matcher: Matcher | None = None):
        super().__init__()
        self.settings = config or ProgressRewardConfig()
        self.matcher = matcher or LexicalMatcher()

    def score_one(self, sample: Sample) -> dict[str, float]:
        """One completion's components and total."""
        em = exact_match(sample.answer, sample.golds) if sample.answer is not None else 0.0
        fmt = self.settings.format_score if format_valid(sample) else 0.0
        teacher = list(sample.row.get("teacher_queries") or [])
        policy = sample.queries
        cov = {"coverage_f1": 0.0, "coverage_precision": 0.0, "coverage_recall": 0.0, "coverage_defined": 0.0}
        if teacher:
            question = str(sample.row.get("question", ""))
            match = self.matcher(question, policy, teacher) if policy else []
            result = coverage(match, len(policy), len(teacher))
            cov = {
                "coverage_f1": result.f1,
                "coverage_precision": result.precision,
                "coverage_recall": result.recall,
                "coverage_defined": 1.0,
            }
        total = em + fmt + self.settings.coverage_weight * cov["coverage_f1"]
        return {"em": em, "format": fmt, **cov, "total": total}

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        return [self.score_one(s) for s in batch]

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings), "matcher": self.matcher.name}
