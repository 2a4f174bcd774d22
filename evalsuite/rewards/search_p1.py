"""Search-P1's path-centric reward (seeds/002, §3 "Dual-track path scoring", "Soft outcome scoring", App. B.1).

    R(y) = λ_f · r_format + λ_p · r_path + λ_a · r_outcome,   λ_f = 0.1, λ_p = 0.3, λ_a = 0.6

- r_path = max(self-consistency track, reference-alignment track), so a weak reference plan never dilutes a better
  strategy of the model's own;
- self-consistency: the mean pairwise Jaccard similarity of this path's evidence with the other sampled paths of the
  same question (3 in the paper; TRL's group of `num_generations`), times an efficiency ratio
  min(1, fewest searches among the group's paths / this path's searches); evidence = the set of retrieved documents
  (`metrics.process.doc_key`); a path without evidence or alone in its group scores 0;
- reference alignment: the order-agnostic fraction of reference-plan steps covered by some policy query (a `Matcher`;
  an LLM evaluator in the paper), times min(1, steps / searches) so redundant actions cost;
- soft outcome: 1 for a correct answer (EM); a failed answer gets decay · r_path (decay 0.5), so a failed sample with a
  good path still teaches;
- soft format: the fraction of checks passed (answer present, every model turn reasons, no invalid action or protocol
  error) instead of a strict 0/1 (the paper's "Soft Format").
Reference plans are a dataset column (`reference_plan`: list of step strings), generated offline and cached.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match
from evalsuite.metrics.process import doc_key
from evalsuite.rewards.base import MethodReward, Sample
from evalsuite.rewards.matching import LexicalMatcher, Matcher


@dataclass(frozen=True)
class SearchP1RewardConfig:
    """λ_f, λ_p, λ_a (App. B.1 defaults) and the soft-outcome decay (0.5)."""

    format_weight: float = 0.1
    path_weight: float = 0.3
    outcome_weight: float = 0.6
    decay: float = 0.5


def evidence(sample: Sample) -> set[str]:
    """The documents a path retrieved."""
    return {doc_key(p) for t in sample.turns for p in t.passages}


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 when both are empty)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def soft_format(sample: Sample) -> float:
    """Fraction of passed format checks: answer present, every model turn reasons, no invalid action or protocol error."""
    turns = sample.model_turns
    checks = [
        sample.answer is not None,
        bool(turns) and all(t.think for t in turns),
        bool(turns) and not any(t.invalid_action for t in turns) and not sample.protocol_errors,
    ]
    return sum(checks) / len(checks)


def efficiency(needed: int, used: int) -> float:
    """min(1, needed / used): 1 when no action is redundant; 0 when nothing was searched."""
    return min(1.0, needed / used) if used else 0.0


class SearchP1Reward(MethodReward):
    """Format, dual-track path and soft outcome rewards, weighted λ_f, λ_p, λ_a."""

    name = "search-p1"
    components = ("format", "self_consistency", "reference_alignment", "path", "em", "outcome")

    def __init__(self, config: SearchP1RewardConfig | None = None, matcher: Matcher | None = None):
        super().__init__()
        self.settings = config or SearchP1RewardConfig()
        self.matcher = matcher or LexicalMatcher()

    def _group_key(self, sample: Sample, index: int) -> str:
        for column in ("id", "prompt", "question"):
            if sample.row.get(column) is not None:
                return f"{column}:{sample.row[column]}"
        return f"row:{index}"

    def self_consistency(self, batch: list[Sample]) -> list[float]:
        """Each path's mean Jaccard agreement with its group's other paths, times its efficiency ratio."""
        groups: dict[str, list[int]] = defaultdict(list)
        for index, sample in enumerate(batch):
            groups[self._group_key(sample, index)].append(index)
        evidences = [evidence(s) for s in batch]
        searches = [len(s.queries) for s in batch]
        scores = [0.0] * len(batch)
        for members in groups.values():
            if len(members) < 2:
                continue
            used = [searches[i] for i in members if searches[i] > 0 and evidences[i]]
            fewest = min(used) if used else 0
            for i in members:
                if not evidences[i]:
                    continue
                agreement = sum(jaccard(evidences[i], evidences[j]) for j in members if j != i) / (len(members) - 1)
                scores[i] = agreement * efficiency(fewest, searches[i])
        return scores

    def reference_alignment(self, sample: Sample) -> float:
        """Order-agnostic coverage of the reference plan's steps, times min(1, steps / searches)."""
        steps = list(sample.row.get("reference_plan") or [])
        queries = sample.queries
        if not steps or not queries:
            return 0.0
        match = self.matcher(str(sample.row.get("question", "")), queries, steps)
        covered = sum(1 for j in range(len(steps)) if any(row[j] for row in match))
        return covered / len(steps) * efficiency(len(steps), len(queries))

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        c = self.settings
        consistency = self.self_consistency(batch)
        out = []
        for sample, sc in zip(batch, consistency):
            ra = self.reference_alignment(sample)
            path = max(sc, ra)
            em = exact_match(sample.answer, sample.golds) if sample.answer is not None else 0.0
            outcome = 1.0 if em else c.decay * path
            fmt = soft_format(sample)
            total = c.format_weight * fmt + c.path_weight * path + c.outcome_weight * outcome
            out.append({"format": fmt, "self_consistency": sc, "reference_alignment": ra, "path": path, "em": em, "outcome": outcome, "total": total})
        return out

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings), "matcher": self.matcher.name}
