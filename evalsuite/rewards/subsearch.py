"""SubSearch's intrinsic process rewards and its three aggregations (seeds/001, Figures 1, 2(c), 5 and 6).

The seed text names the rewards and the aggregations but prints no equations; these definitions are ours, built on
its Figure 5 notation (sub-query x_{l,i} with retrieved documents D_{l,i}) and documented in docs/recipes/subsearch.md:

- answerability a ∈ [0, 1]: the fraction of search rounds whose documents D contain a gold answer (the retrieved
  information can answer the question), so it needs no external model;
- decomposition d ∈ [−1, 1]: over the rounds that split the question into `##` sub-queries, the fraction of
  sub-queries whose documents are not all retrieved by a sibling (independent parts, Table 1's instruction) for a
  2-3 way split; a round with more than 3 sub-queries (Table 1: "at most 3 smaller sub-questions") scores
  −`over_decomposition_penalty` (1 by default), so over-decomposing earns less than not decomposing; no decomposed
  round → d = 0. The SubSearch method executes only the first 3 sub-queries of a round and records how many it
  dropped (`Turn.extra["dropped_subqueries"]`); the count here is the model's own, dropped ones included, and for
  turns parsed from plain text (no engine) the `##` parts of the query;
- process score p = (w_a·a + w_d·d) / (w_a + w_d); outcome o = EM.

Aggregations (Figure 2(c)): `weighted_sum` r = w_o·o + w_a·a + w_d·d; `residual` r = o + (1 − o)·β·p (process reward
only fills what the outcome leaves, β fixed); `adaptive_residual` the same with β_t = 1 − EMA_t(batch accuracy),
EMA_t = α·acc_t + (1 − α)·EMA_{t−1}, EMA_0 = 0 (Figure 6: β falls as the policy answers correctly; a larger α weighs
recent batches more).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match, retrieval_hit
from evalsuite.metrics.process import doc_key
from evalsuite.rewards.base import MethodReward, Sample
from evalsuite.runs.schema import Turn

AGGREGATIONS = ("weighted_sum", "residual", "adaptive_residual")
MAX_SUB_QUERIES = 3
SEPARATOR = "##"


@dataclass(frozen=True)
class SubSearchRewardConfig:
    """Weights, the aggregation (one of AGGREGATIONS), the fixed β, the EMA rate α of the adaptive β and the score
    of a round with more than 3 sub-queries (−over_decomposition_penalty)."""

    aggregation: str = "adaptive_residual"
    outcome_weight: float = 1.0
    answerability_weight: float = 0.5
    decomposition_weight: float = 0.5
    beta: float = 0.5
    ema_alpha: float = 0.1
    over_decomposition_penalty: float = 1.0

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")


def _rounds(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.query is not None or t.sub_queries]


def answerability(turns: list[Turn], golds: list[str]) -> float:
    """Fraction of search rounds whose documents contain a gold answer (0 without searches)."""
    rounds = _rounds(turns)
    if not rounds:
        return 0.0
    return sum(retrieval_hit([f"{p.title or ''} {p.text}" for p in t.passages], golds) for t in rounds) / len(rounds)


def requested_subqueries(turn: Turn) -> int:
    """How many sub-queries the model wrote in this round: the executed ones plus those the method dropped; for a
    turn parsed from text, the non-empty `##` parts of its query."""
    if turn.sub_queries:
        return len(turn.sub_queries) + int(turn.extra.get("dropped_subqueries", 0))
    if turn.query is None:
        return 0
    return max(1, sum(1 for part in turn.query.split(SEPARATOR) if part.strip()))


def _split_docs(turn: Turn) -> list[set[str]]:
    # The engine flattens sub-queries' hits in query order, top-k each: split them back evenly.
    n = len(turn.sub_queries)
    keys = [doc_key(p) for p in turn.passages]
    if n == 0 or len(keys) % n:
        return [set(keys)] * max(n, 1)
    k = len(keys) // n
    return [set(keys[i * k : (i + 1) * k]) for i in range(n)]


def decomposition(turns: list[Turn], penalty: float = 1.0) -> float:
    """Over decomposed rounds: for a 2-3 way split, the fraction of sub-queries with documents that no sibling fully
    repeats; for more than 3 sub-queries, −penalty."""
    scores = []
    for turn in _rounds(turns):
        n = requested_subqueries(turn)
        if n < 2:
            continue
        if n > MAX_SUB_QUERIES:
            scores.append(-penalty)
            continue
        if not turn.sub_queries:  # parsed from text: no per-sub-query documents to compare
            scores.append(0.0)
            continue
        n = len(turn.sub_queries)
        docs = _split_docs(turn)
        distinct = sum(1 for i, d in enumerate(docs) if d and not any(j != i and d <= other for j, other in enumerate(docs)))
        scores.append(distinct / n)
    return sum(scores) / len(scores) if scores else 0.0


class SubSearchReward(MethodReward):
    """Outcome EM with answerability and decomposition process rewards, aggregated as configured."""

    name = "subsearch"
    components = ("em", "answerability", "decomposition", "process", "beta")

    def __init__(self, config: SubSearchRewardConfig | None = None):
        super().__init__()
        self.settings = config or SubSearchRewardConfig()
        self.ema = 0.0  # EMA_0 = 0: β starts at 1, all weight on the process reward while the policy is weak

    def current_beta(self) -> float:
        """β for the next batch."""
        if self.settings.aggregation == "adaptive_residual":
            return 1.0 - self.ema
        return self.settings.beta

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        c = self.settings
        beta = self.current_beta()
        out = []
        for s in batch:
            o = exact_match(s.answer, s.golds) if s.answer is not None else 0.0
            a, d = answerability(s.turns, s.golds), decomposition(s.turns, c.over_decomposition_penalty)
            weight = c.answerability_weight + c.decomposition_weight
            p = (c.answerability_weight * a + c.decomposition_weight * d) / weight if weight else 0.0
            if c.aggregation == "weighted_sum":
                total = c.outcome_weight * o + c.answerability_weight * a + c.decomposition_weight * d
            else:
                total = o + (1.0 - o) * beta * p
            out.append({"em": o, "answerability": a, "decomposition": d, "process": p, "beta": beta, "total": total})
        if batch and c.aggregation == "adaptive_residual":
            accuracy = sum(b["em"] for b in out) / len(out)
            self.ema = c.ema_alpha * accuracy + (1.0 - c.ema_alpha) * self.ema
        return out

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
