"""Search-P1's path-centric reward (seeds/002, §3 "Dual-track path scoring", "Soft outcome scoring", App. B.1).

    R(y) = λ_f · r_format + λ_p · r_path + λ_a · r_outcome,   λ_f = 0.1, λ_p = 0.3, λ_a = 0.6   (002:117)

The seed is a summary: it names every term but prints no formula. Its words, and the formula chosen for each:

- r_path = max(self-consistency, reference alignment): "the final path reward takes the maximum track score so a
  suboptimal reference plan does not dilute a better model strategy" (002:62).
- self-consistency: "Dual-track scoring evaluates self-consistency with the model's own plan ... The self-consistency
  track assesses plan execution" (002:61), and "Self-consistency scoring samples three independent reasoning paths and
  measures pairwise agreement with Jaccard similarity on extracted evidence spans" (002:113). Ours: the mean of
  (a) plan execution: the order-agnostic fraction of the model's own plan steps (`Turn.extra["plan"]`, parsed by the
      search-p1 method; a plan in the text when no engine turns are given) that some query of the path carries out
      (a `Matcher`), × min(1, plan steps / searches); a path without a plan executes nothing (0), and
  (b) agreement: the mean pairwise Jaccard similarity of this path's evidence with the other sampled paths of the
      same question (TRL's group of `num_generations`), × min(1, fewest searches in the group / own searches);
      evidence = the set of retrieved documents (`metrics.process.doc_key`); left out for a path alone in its group.
- reference alignment: "counts accomplished reference steps regardless of order" (002:61), "Efficiency ratios
  discourage redundant actions" (002:62): covered reference steps / steps × min(1, steps / searches).
- soft outcome: "combining partial answer correctness with reasoning quality" (002:63), "applies a decay factor of
  0.5 to partial matches when incorrect answers have high-quality reasoning paths" (002:114). Ours: 1 for an exact
  match; for a partial match (token F1 of the answer against the golds above 0, not an exact match) decay · (F1 +
  r_path) / 2, partial correctness and the path reward (reasoning quality) weighted equally; 0 for an answer that
  shares no token with a gold (F1 = 0 is no partial match, so nothing is decayed: its path still earns λ_p · r_path,
  which is how "previously zero-reward failed samples" (002:63) get a signal). The mean of F1 and r_path is
  assumed (the seed prints no formula; `rule.soft_outcome` in gpu.yaml).
- soft format: the fraction of checks passed (answer present, every model turn reasons, no invalid action or protocol
  error) instead of a strict 0/1 (the paper's "Soft Format", 002:71).
Reference plans are a dataset column (`reference_plan`: list of step strings), generated offline and cached.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

from evalsuite.methods.search_p1.method import plan_of, plan_steps
from evalsuite.metrics.answer import exact_match, f1_score
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
    """Fraction of passed format checks: answer present, every
    model turn reasons, no invalid action or protocol error."""
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


def own_plan(sample: Sample) -> list[str]:
    """The model's own plan: the steps the method recorded on its turns, else the numbered steps in its text."""
    return plan_of(sample.turns) or plan_steps(sample.model_text)


class SearchP1Reward(MethodReward):
    """Format, dual-track path and soft outcome rewards, weighted λ_f, λ_p, λ_a."""

    name = "search-p1"
    config_class = SearchP1RewardConfig
    components = (
        "format",
        "plan_execution",
        "agreement",
        "self_consistency",
        "reference_alignment",
        "path",
        "em",
        "f1",
        "outcome",
    )

    def __init__(self, config: SearchP1RewardConfig | None = None, matcher: Matcher | None = None):
        super().__init__()
        self.settings = config or SearchP1RewardConfig()
        self.matcher = matcher or LexicalMatcher()

    def _group_key(self, sample: Sample, index: int) -> str:
        for column in ("id", "prompt", "question"):
            if sample.row.get(column) is not None:
                return f"{column}:{sample.row[column]}"
        return f"row:{index}"

    def agreement(self, batch: list[Sample]) -> list[float | None]:
        """Each path's mean Jaccard agreement with its group's other paths, times its efficiency ratio (None alone)."""
        groups: dict[str, list[int]] = defaultdict(list)
        for index, sample in enumerate(batch):
            groups[self._group_key(sample, index)].append(index)
        evidences = [evidence(s) for s in batch]
        searches = [len(s.queries) for s in batch]
        scores: list[float | None] = [None] * len(batch)
        for members in groups.values():
            if len(members) < 2:
                continue
            used = [searches[i] for i in members if searches[i] > 0 and evidences[i]]
            fewest = min(used) if used else 0
            for i in members:
                if not evidences[i]:
                    scores[i] = 0.0
                    continue
                agreement = sum(jaccard(evidences[i], evidences[j]) for j in members if j != i) / (len(members) - 1)
                scores[i] = agreement * efficiency(fewest, searches[i])
        return scores

    def coverage(self, sample: Sample, steps: list[str]) -> float:
        """Order-agnostic fraction of `steps` some query of the path carries out, times min(1, steps / searches)."""
        queries = sample.queries
        if not steps or not queries:
            return 0.0
        match = self.matcher(str(sample.row.get("question", "")), queries, steps)
        covered = sum(1 for j in range(len(steps)) if any(row[j] for row in match))
        return covered / len(steps) * efficiency(len(steps), len(queries))

    def plan_execution(self, sample: Sample) -> float:
        """How much of its own plan the path carried out (0 without a plan)."""
        return self.coverage(sample, own_plan(sample))

    def reference_alignment(self, sample: Sample) -> float:
        """Order-agnostic coverage of the reference plan's steps, times min(1, steps / searches)."""
        return self.coverage(sample, list(sample.row.get("reference_plan") or []))

    def soft_outcome(self, answer: str | None, golds: list[str], path: float) -> tuple[float, float, float]:
        """(EM, F1, outcome): 1 for an exact match, decay · (F1 + path) / 2 for a partial match (F1 > 0), else 0."""
        em = exact_match(answer, golds) if answer is not None else 0.0
        f1 = f1_score(answer, golds) if answer is not None else 0.0
        if em:
            return em, f1, 1.0
        return em, f1, self.settings.decay * (f1 + path) / 2 if f1 > 0 else 0.0

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        c = self.settings
        agreements = self.agreement(batch)
        out = []
        for sample, agreement in zip(batch, agreements):
            execution = self.plan_execution(sample)
            tracks = [execution] if agreement is None else [execution, agreement]
            sc = sum(tracks) / len(tracks)
            ra = self.reference_alignment(sample)
            path = max(sc, ra)
            em, f1, outcome = self.soft_outcome(sample.answer, sample.golds, path)
            fmt = soft_format(sample)
            total = c.format_weight * fmt + c.path_weight * path + c.outcome_weight * outcome
            out.append(
                {
                    "format": fmt,
                    "plan_execution": execution,
                    "agreement": 0.0 if agreement is None else agreement,
                    "self_consistency": sc,
                    "reference_alignment": ra,
                    "path": path,
                    "em": em,
                    "f1": f1,
                    "outcome": outcome,
                    "total": total,
                }
            )
        return out

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings), "matcher": self.matcher.name}
