"""Search-R1's reward: exact match on the answer of the model's own response, with optional format/retrieval shaping.

Search-R1 (Jin et al., 2025) trains on EM alone (its eq. 4: r_φ(x, y) = EM(a_pred, a_gold)). Its later empirical study
adds a format reward λ_f and a retrieval reward λ_r (released as `qa_em_format.compute_score_em` with
`structure_format_score`, `final_format_score`, `retrieval_score`):

    answer correct:   score if the sequence is valid, else score − λ_f
    answer wrong/absent, valid sequence:   λ_f (+ λ_r if a retrieved passage holds a gold answer)
    answer wrong, invalid sequence:        final_format_score (0 when there is no answer)

Defaults are the paper's EM-only reward; `SearchR1RewardConfig.shaped()` gives the study's shaped setting. Unlike the
original code we read the answer from the response only (docs/agent.md), so no prompt example can score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match, retrieval_hit
from evalsuite.rewards.base import MethodReward, Sample, format_valid


@dataclass(frozen=True)
class SearchR1RewardConfig:
    """Weights of Search-R1's reward; all shaping off by default (EM only, as in the paper's main runs)."""

    score: float = 1.0
    structure_format_score: float = 0.0  # λ_f
    final_format_score: float = 0.0
    retrieval_score: float = 0.0  # λ_r

    @classmethod
    def shaped(cls) -> SearchR1RewardConfig:
        """The format- and retrieval-shaped setting of Search-R1's empirical study (λ_f = 0.2, final 0.1, λ_r = 0.1)."""
        return cls(structure_format_score=0.2, final_format_score=0.1, retrieval_score=0.1)


class SearchR1Reward(MethodReward):
    """EM on the response's last `<answer>`, plus the optional valid-sequence and retrieved-gold shaping."""

    name = "search-r1"
    config_class = SearchR1RewardConfig
    components = ("em", "format_valid", "retrieval_hit")

    def __init__(self, config: SearchR1RewardConfig | None = None, answer_from_turns: bool = False):
        super().__init__()
        self.settings = config or SearchR1RewardConfig()
        # rollouts of a method without <answer> tags (naive-rag: the first line): its own extraction, which the
        # engine recorded on the last model turn, is the extracted answer
        self.answer_from_turns = answer_from_turns

    def answer(self, sample: Sample) -> str | None:
        """The extracted answer: the last `<answer>` of the model's own text, or the rollout method's own."""
        if not self.answer_from_turns:
            return sample.answer
        return next((t.answer for t in reversed(sample.model_turns) if t.answer is not None), None)

    def score_one(self, sample: Sample) -> dict[str, float]:
        """One completion's components and total."""
        c = self.settings
        answer = self.answer(sample)
        em = exact_match(answer, sample.golds) if answer is not None else 0.0
        valid = format_valid(sample)
        hit = retrieval_hit(
            (p.text if not p.title else f"{p.title} {p.text}" for t in sample.turns for p in t.passages), sample.golds
        )
        if em:
            total = c.score if valid else c.score - c.structure_format_score
        elif valid:
            total = c.structure_format_score + (c.retrieval_score if hit else 0.0)
        elif answer is not None:
            total = c.final_format_score
        else:
            total = 0.0
        return {"em": em, "format_valid": float(valid), "retrieval_hit": hit, "total": total}

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        return [self.score_one(s) for s in batch]

    def config(self) -> dict:
        source = "the rollout method's own (last model turn)" if self.answer_from_turns else "last <answer> tag"
        return {"name": self.name, **asdict(self.settings), "answer": source}
