"""SubSearch's intrinsic process rewards and its three aggregations (seeds/001, Figures 1, 2(c), 5 and 6).

The seed text names the rewards and the aggregations but prints no equations; these definitions are ours, built on
its Figure 5 notation (sub-query x_{l,i} with retrieved documents D_{l,i}) and on its prompt (Table 1, 001:5-6),
and documented in docs/recipes/subsearch.md:

- answerability a ∈ [0, 1]: the fraction of search rounds whose documents D contain a gold answer (the retrieved
  information can answer the question). A round that splits a question which needs no split earns no answerability:
  its n sub-queries fetch n times the documents, so paying for their hits would pay for splitting itself.
  This is a deviation: the seed defines its rewards as "internally-derived rewards, eliminating the need for
  external supervision" (001:1), and a gold-string hit uses the gold answer.
- decomposition d ∈ [−1, 1]: the mean of one score per `##` split round and one for the chain of sequential
  `<search>` rounds (none of either → d = 0). The seed decomposes both ways. Its prompt offers `##`: "decompose it
  into at most 3 smaller sub-questions, separated by ## . For example: <search> sub-question 1 ## sub-question 2
  </search>" (001:5); but `##` appears only there, and every case study decomposes with separate `<search>` calls:
  "SubSearch can decompose the initial information need into parallel subqueries" (Table 5, 001:52: two searches,
  one per bank), "SubSearch can decompose the initial information need into sequential subqueries (we need the
  answer of one to formulate the other)" (Tables 6 and 7, 001:61 and 001:70: "who is joe buck father broadcast",
  then "who did jack buck broadcast for"), and its failure case is "failed reasoning due to missing decomposition"
  (001:71: one search asking for everything) where the model "gets stuck into generating the similar queries every
  time" (Table 8, 001:79). So sequential rounds count as sub-queries, as the paper's examples do. The prompt also
  says "Only decompose when the question has multiple independent parts (e.g., different entities, aspects, or
  comparisons). Do not decompose questions that do not need it." (001:6) and "You can search as many times as you
  want." (001:6). So
    a `##` split round scores −`over_decomposition_penalty` (1) when it has more than 3 sub-queries, and
      −`over_decomposition_penalty` when the question needs no split (the row's `needs_decomposition` is false or
      absent: a split earns credit only where the training row says the question has several parts), else the
      fraction of its sub-queries whose documents are not all retrieved by a sibling (independent parts);
    the chain of two or more search rounds, for a question that needs a split, scores the fraction of rounds whose
      documents no other round fully repeats (a repeated query, Table 8's failure, or a search that never ran earns
      nothing); for a question that needs no split it is not scored (searching again is allowed, "as many times as
      you want", and is not decomposing; neither paid nor penalized). A single round is no decomposition.
  The penalty and the gate on `needs_decomposition` are ours (the seed prints no formula). The SubSearch method
  executes only the first 3 sub-queries of a round and records how many it dropped
  (`Turn.extra["dropped_subqueries"]`); the count here is the model's own, dropped ones included, and for turns
  parsed from plain text (no engine) the `##` parts of the query.
- process score p = (w_a·a + w_d·d) / (w_a + w_d) ∈ [−1, 1]; outcome o = EM.

So for a question that needs no split, replacing an unsplit round by a split one never raises a, d or the total,
whatever either retrieved (tests/rewards/test_subsearch_decomposition_rule.py).

Aggregations (Figure 2(c)): `weighted_sum` r = w_o·o + w_a·a + w_d·d (the naive baseline of the comparison; it makes
no promise about wrong vs correct answers); `residual` r = o + (1 − o)·β·p (the process reward only fills what the
outcome leaves, β fixed); `adaptive_residual` the same with β_t = β_max·(1 − A_t), where A_t is the bias-corrected
EMA of batch accuracy (Adam's correction: m_t = α·acc_t + (1 − α)·m_{t−1}, m_0 = 0, A_t = m_t / (1 − (1 − α)^t)),
including the batch being scored (Figure 6: β falls as the policy answers correctly; a larger α weighs recent batches
more). β ∈ [0, β_max] with β_max < 1, and p ≤ 1, so a wrong answer scores at most β_max < 1 = a correct answer's
score at any β.

The β start: no start value is assumed. A_1 is the first batch's own accuracy (its answers are scored before the
totals), so β_1 = β_max·(1 − acc_1). An EMA started at 0 would claim a policy that never answers correctly and put
all weight on the process reward for the first ~1/α steps whatever the policy's real accuracy (an instruct backbone
starts far above 0: Table 4's SubSearch-instruct row).

β is one number per training step for every process: the batch accuracy is reduced (summed correct answers and
completions) across accelerate processes through `reduce_sum` before the EMA update, so every process holds the
same A_t (`evalsuite.training.distributed.sum_across_processes`, which the recipe passes; identity when not
distributed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from evalsuite.metrics.answer import exact_match, retrieval_hit
from evalsuite.metrics.process import doc_key
from evalsuite.rewards.base import MethodReward, Sample
from evalsuite.runs.schema import Turn

AGGREGATIONS = ("weighted_sum", "residual", "adaptive_residual")
MAX_SUB_QUERIES = 3
SEPARATOR = "##"
NEEDS_DECOMPOSITION = "needs_decomposition"  # the training row's column: does the question have several parts?

ReduceSum = Callable[[list[float]], list[float]]


@dataclass(frozen=True)
class SubSearchRewardConfig:
    """Weights, the aggregation (one of AGGREGATIONS), the fixed β of `residual`, the ceiling β_max of the adaptive
    β, the EMA rate α and the score of a split round the prompt forbids (−over_decomposition_penalty)."""

    aggregation: str = "adaptive_residual"
    outcome_weight: float = 1.0
    answerability_weight: float = 0.5
    decomposition_weight: float = 0.5
    beta: float = 0.5
    beta_max: float = 0.5
    ema_alpha: float = 0.1
    over_decomposition_penalty: float = 1.0

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        for name in ("beta", "beta_max"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(
                    f"{name} must be in [0, 1): at 1 a wrong answer with a perfect process score would "
                    f"earn a correct answer's reward, got {getattr(self, name)}"
                )
        if not 0.0 < self.ema_alpha <= 1.0:
            raise ValueError(f"ema_alpha must be in (0, 1], got {self.ema_alpha}")
        if self.over_decomposition_penalty < 0:
            raise ValueError(f"over_decomposition_penalty must be >= 0, got {self.over_decomposition_penalty}")


def _rounds(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.query is not None or t.sub_queries]


def requested_subqueries(turn: Turn) -> int:
    """How many sub-queries the model wrote in this round: the executed ones plus those the method dropped; for a
    turn parsed from text, the non-empty `##` parts of its query."""
    if turn.sub_queries:
        return len(turn.sub_queries) + int(turn.extra.get("dropped_subqueries", 0))
    if turn.query is None:
        return 0
    return max(1, sum(1 for part in turn.query.split(SEPARATOR) if part.strip()))


def is_split(turn: Turn) -> bool:
    """The round split the question into two or more sub-queries."""
    return requested_subqueries(turn) >= 2


def answerability(turns: list[Turn], golds: list[str], needs_decomposition: bool = True) -> float:
    """Fraction of search rounds whose documents contain a gold answer (0 without searches); a split round of a
    question that needs no split counts as a round without a hit."""
    rounds = _rounds(turns)
    if not rounds:
        return 0.0
    hits = [
        0.0
        if is_split(t) and not needs_decomposition
        else retrieval_hit([f"{p.title or ''} {p.text}" for p in t.passages], golds)
        for t in rounds
    ]
    return sum(hits) / len(rounds)


def _split_docs(turn: Turn) -> list[set[str]]:
    # The engine flattens sub-queries' hits in query order, top-k each: split them back evenly.
    n = len(turn.sub_queries)
    keys = [doc_key(p) for p in turn.passages]
    if n == 0 or len(keys) % n:
        return [set(keys)] * max(n, 1)
    k = len(keys) // n
    return [set(keys[i * k : (i + 1) * k]) for i in range(n)]


def split_score(turn: Turn, needs_decomposition: bool, penalty: float = 1.0) -> float:
    """One split round's decomposition score: −penalty beyond 3 sub-queries or when the question needs no split,
    else the fraction of executed sub-queries whose documents no sibling fully repeats (0 for a turn parsed from
    text, which has no per-sub-query documents)."""
    if requested_subqueries(turn) > MAX_SUB_QUERIES or not needs_decomposition:
        return -penalty
    if not turn.sub_queries:
        return 0.0
    docs = _split_docs(turn)
    distinct = sum(
        1 for i, d in enumerate(docs) if d and not any(j != i and d <= other for j, other in enumerate(docs))
    )
    return distinct / len(turn.sub_queries)


def chain_score(turns: list[Turn], needs_decomposition: bool) -> float | None:
    """The sequential rounds as a decomposition (the seed's case studies): None with fewer than two search rounds or
    for a question that needs no split; else the fraction of rounds whose documents no other round fully repeats."""
    rounds = _rounds(turns)
    if len(rounds) < 2 or not needs_decomposition:
        return None
    docs = [{doc_key(p) for p in t.passages} for t in rounds]
    distinct = sum(
        1 for i, d in enumerate(docs) if d and not any(j != i and d <= other for j, other in enumerate(docs))
    )
    return distinct / len(rounds)


def decomposition(turns: list[Turn], penalty: float = 1.0, needs_decomposition: bool = True) -> float:
    """The mean of the `split_score` of each round that split the question and of the `chain_score` of the search
    rounds (0 when there is neither)."""
    scores = [split_score(t, needs_decomposition, penalty) for t in _rounds(turns) if is_split(t)]
    chain = chain_score(turns, needs_decomposition)
    if chain is not None:
        scores.append(chain)
    return sum(scores) / len(scores) if scores else 0.0


def _identity(values: list[float]) -> list[float]:
    return values


class SubSearchReward(MethodReward):
    """Outcome EM with answerability and decomposition process rewards, aggregated as configured."""

    name = "subsearch"
    config_class = SubSearchRewardConfig
    components = ("em", "answerability", "decomposition", "process", "beta")

    def __init__(self, config: SubSearchRewardConfig | None = None, reduce_sum: ReduceSum | None = None):
        super().__init__()
        self.settings = config or SubSearchRewardConfig()
        # sums [correct answers, completions] over every training process, so each holds the same β
        self.reduce_sum = reduce_sum or _identity
        self.ema = 0.0  # m_t, uncorrected
        self.updates = 0  # t

    def accuracy_average(self) -> float | None:
        """A_t, the bias-corrected EMA of batch accuracy after the batches seen so far (None before the first)."""
        if not self.updates:
            return None
        return self.ema / (1.0 - (1.0 - self.settings.ema_alpha) ** self.updates)

    def current_beta(self) -> float:
        """β of the batch scored last (`residual`: the fixed β; adaptive before any batch: β_max)."""
        if self.settings.aggregation != "adaptive_residual":
            return self.settings.beta
        average = self.accuracy_average()
        return self.settings.beta_max * (1.0 - (average or 0.0))

    def _observe(self, correct: float, count: float) -> None:
        """Fold one training step's accuracy (summed over processes) into the EMA."""
        correct, count = self.reduce_sum([correct, count])
        if count <= 0:
            return
        self.ema = self.settings.ema_alpha * (correct / count) + (1.0 - self.settings.ema_alpha) * self.ema
        self.updates += 1

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        c = self.settings
        outcomes = [exact_match(s.answer, s.golds) if s.answer is not None else 0.0 for s in batch]
        if c.aggregation == "adaptive_residual":
            self._observe(float(sum(outcomes)), float(len(outcomes)))  # every process calls this once per step
        beta = self.current_beta()
        weight = c.answerability_weight + c.decomposition_weight
        out = []
        for s, o in zip(batch, outcomes):
            needed = bool(s.row.get(NEEDS_DECOMPOSITION, False))
            a = answerability(s.turns, s.golds, needed)
            d = decomposition(s.turns, c.over_decomposition_penalty, needed)
            p = (c.answerability_weight * a + c.decomposition_weight * d) / weight if weight else 0.0
            if c.aggregation == "weighted_sum":
                total = c.outcome_weight * o + c.answerability_weight * a + c.decomposition_weight * d
            else:
                total = o + (1.0 - o) * beta * p
            out.append({"em": o, "answerability": a, "decomposition": d, "process": p, "beta": beta, "total": total})
        return out

    def config(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
