"""What became of every metric a result file recorded: reproduced by ours, differing (with the convention that explains
it), or not ours, named and not checked. A recorded metric named like one of ours but defined otherwise says so.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from evalsuite.metrics.registry import is_registered
from evalsuite.runs.conventions import METRIC_FUNCTIONS
from evalsuite.runs.flashrag import (
    RECORDED_METRICS,
    TASK_DATA_DIFFERENCES,
    Difference,
    RecordedScore,
    ResultSource,
    compared_scores,
    number,
    recorded_metric_name,
)
from evalsuite.runs.schema import ExampleRecord


@dataclass(frozen=True)
class MetricCheck:
    """One metric a source recorded and what became of it: reproduced, differs (with why), or not ours (not checked)."""

    name: str
    where: str  # "metric_score.txt", "per item", or both
    # "reproduced", "differs", "not ours", "judgment" (a judge's verdict we do not recompute) or "bookkeeping" (a count
    # the writer keeps about the run, not a score of the answers), or "not read" (a key beside the writer's own)
    status: str
    ours: str | None  # our metric it was checked against
    note: str | None = None

    def line(self) -> str:
        against = f" (ours: {self.ours})" if self.ours else ""
        note = f": {self.note}" if self.note else ""
        return f"{self.name} [{self.where}]: {self.status}{against}{note}"


# Recorded metrics that are not ours, by pattern: what each writer means by it. Checked against nothing.
FOREIGN_METRICS: list[tuple[str, str]] = [
    (
        r"retrieval_recall(_top\d+)?",
        "FlashRAG Retrieval_Recall: a gold in one of the top-k passages of the final retrieval_result",
    ),
    (
        r"retrieval_precision(_top\d+)?",
        "FlashRAG Retrieval_Precision: the share of the top-k passages that hold a gold",
    ),
    (r"rouge-(1|2|l)|zh_rouge-(1|2|l)|bleu", "FlashRAG's text-overlap metric (rouge/bleu packages)"),
    (
        r"information_scores|information_reverse_rank|refine_scores|format_scores",
        "AutoRefine's reward component (verl/trainer/main_ppo.py LOG_FUNCS): search, refinement or format, not an "
        "answer metric",
    ),
    (r"search_r1_reward", "Search-R1's training reward (answer and format), a reward rather than an answer metric"),
    (r"search_r1_format_valid|search_r1_format_reason", "Search-R1's format validity check of the whole response"),
    (r"search_r1_extracted_answer", "the answer Search-R1's extract_solution read (prompt + response)"),
    (r"retrieval_hit_rate", "a retrieval hit rate defined by its writer"),
]
# Recorded values that are bookkeeping about the run, not scores of the answers: named, never checked.
BOOKKEEPING: list[tuple[str, str]] = [
    (r"(avg_)?input_tokens", "FlashRAG CountToken: prompt length in tokens (bookkeeping, not a score)"),
    (
        r"(avg_)?(output|prompt|completion|total)_tokens|(avg_)?(retrieval|generation|total)_time|elapsed.*|latency.*",
        "token counts or timings the writer keeps about the run (bookkeeping, not a score)",
    ),
    (r"step", "the training step the writer logged the item at (bookkeeping)"),
]
# Judges' verdicts by writer: listed as a judgment we do not recompute (evalsuite.runs.writer_layouts.JUDGMENT_KEY
# catches the rest by name).
JUDGMENTS: list[tuple[str, str]] = [
    (r"gpt4o_output", "R1-Searcher's GPT-4o verdict (evaluation/metric_calc_gpt_as_judge.py, 'True'/'False')"),
    (r"llm_score", "an LLM judge's verdict (AutoRefine cmd/llm_judge.py)"),
    (r"llm_judge", "FlashRAG's LLMJudge metric (flashrag/evaluator/metrics.py: a 0-10 rating by a judge model)"),
    (r".*(judge|gpt).*", "a judge's verdict, by its name"),
]


# Recorded metrics named like one of ours but defined by their writer: compared item by item with ours, reported as
# reproduced only where every item agrees, under the writer's gate where it has one (the recorded key whose truth
# decides whether the metric was computed at all; 0 recorded otherwise).
@dataclass(frozen=True)
class SameNameMetric:
    ours: str
    definition: str
    gate: str | None = None


SAME_NAME_METRICS: dict[str, SameNameMetric] = {
    "search_r1_retrieval_hit": SameNameMetric(
        "retrieval_hit",
        "Search-R1's is_retrieval_correct over the response's <information> blocks, recorded only for "
        "responses whose format is valid (search_r1_format_valid), 0 otherwise",
        gate="search_r1_format_valid",
    ),
}


# Per-item scores a family writer records under its own names, by layout: compared item by item with the metric of ours
# that its definition is (ZeroSearch: verl/utils/reward_score/qa_em.py em_check and main_ppo.py AccManager, cited in
# the layout's writer).
LAYOUT_METRICS: dict[str, dict[str, SameNameMetric]] = {
    "zerosearch-validation": {
        "em_score": SameNameMetric(
            "cover_em",
            "ZeroSearch's em_check: a normalized gold inside the normalized answer (FlashRAG's acc, our cover_em); "
            "an answer it could not extract is normalized as 'No answer'",
        ),
        "f1_score": SameNameMetric(
            "cover_em",
            "ZeroSearch's AccManager stores float(score_em) under 'f1_score', so it holds em_score, not a token F1",
        ),
    },
}


def check_recorded_metrics(
    source: ResultSource, records: list[ExampleRecord], recorded: list[RecordedScore], differences: list[Difference]
) -> list[MetricCheck]:
    """Every metric the source recorded (metric_score.txt and per item), each reproduced, differing or not ours."""
    item_names = list(
        dict.fromkeys(name for r in recorded for name, v in r.metric_score.items() if number(v) is not None)
    )
    names = list(dict.fromkeys([*source.averages, *source.unread_metrics, *item_names]))
    judged = list(dict.fromkeys(key for r in recorded for key in r.judgments))
    checks = [
        MetricCheck(key, "per item", "judgment", None, f"{_judgment(key)}; a judgment we do not recompute")
        for key in judged
    ]
    extra = Counter(key for r in recorded for key in r.extra_keys)
    checks += [
        MetricCheck(key, "per item", "not read", None, f"a key the layout's writer does not store, on {count} items")
        for key, count in extra.items()
    ]
    for name in names:
        where = " and ".join(
            w
            for w, present in (
                ("metric_score.txt", name in source.averages or name in source.unread_metrics),
                ("per item", name in item_names),
            )
            if present
        )
        checks.append(_check_one(name, where, records, recorded, differences))
    return checks


def _judgment(key: str) -> str:
    return next(d for pattern, d in JUDGMENTS if re.fullmatch(pattern, key, re.IGNORECASE))


def _check_one(
    name: str, where: str, records: list[ExampleRecord], recorded: list[RecordedScore], differences: list[Difference]
) -> MetricCheck:
    layout = records[0].metadata.get("layout") if records else None
    layout_metrics = LAYOUT_METRICS.get(layout, {}) if isinstance(layout, str) else {}
    if name in layout_metrics:
        return _check_same_name(name, where, layout_metrics[name], records, recorded, own_name=True)
    for pattern, definition in JUDGMENTS:
        if re.fullmatch(pattern, name, re.IGNORECASE):
            return MetricCheck(name, where, "judgment", None, f"{definition}; a judgment we do not recompute")
    for pattern, definition in BOOKKEEPING:
        if re.fullmatch(pattern, name):
            return MetricCheck(name, where, "bookkeeping", None, f"{definition}; not checked")
    flashrag_name = recorded_metric_name(name)
    mine = RECORDED_METRICS.get(flashrag_name) if flashrag_name else None
    if mine is not None and flashrag_name in METRIC_FUNCTIONS:
        if not any(mine in r.metrics for r in records):
            return MetricCheck(
                name, where, "not ours", None, f"our {mine} was not scored (pass --metrics {mine} to check it)"
            )
        own = [d for d in differences if d.what in (mine, f"average {mine}")]
        if not own:
            return MetricCheck(name, where, "reproduced", mine)
        reasons = Counter(d.explanation or "no known convention explains it" for d in own)
        why = "; ".join(f"{count} × {reason}" for reason, count in reasons.most_common(3))
        return MetricCheck(name, where, "differs", mine, why)
    if name in SAME_NAME_METRICS:
        return _check_same_name(name, where, SAME_NAME_METRICS[name], records, recorded)
    for pattern, definition in FOREIGN_METRICS:
        if re.fullmatch(pattern, name):
            return MetricCheck(name, where, "not ours", None, f"{definition}; not checked")
    if is_registered(name):
        return MetricCheck(
            name,
            where,
            "not ours",
            None,
            f"shares the name of our {name} but this writer's definition is unknown here; not checked",
        )
    return MetricCheck(name, where, "not ours", None, "a metric we do not know; not checked")


def _check_same_name(
    name: str,
    where: str,
    metric: SameNameMetric,
    records: list[ExampleRecord],
    recorded: list[RecordedScore],
    own_name: bool = False,
) -> MetricCheck:
    """`own_name`: a writer's name for a metric it defines as one of ours (the listing says which and why)."""
    pairs = []
    for record, original in zip(records, recorded):
        theirs, ours = number(original.metric_score.get(name)), record.metrics.get(metric.ours)
        if theirs is None or ours is None:
            continue
        gated = metric.gate is not None and not original.metric_score.get(metric.gate)
        pairs.append((theirs, 0.0 if gated else ours, ours))
    under_gate = sum(1 for theirs, expected, _ in pairs if abs(theirs - expected) > 1e-9)
    plain = sum(1 for theirs, _, ours in pairs if abs(theirs - ours) > 1e-9)
    if pairs and not plain:
        return MetricCheck(name, where, "reproduced", metric.ours, metric.definition if own_name else None)
    if own_name:
        return MetricCheck(
            name, where, "differs", metric.ours, f"{metric.definition}: {plain} of {len(pairs)} items differ"
        )
    shares = f"shares the name of our {metric.ours} but not its definition ({metric.definition})"
    if pairs and not under_gate:
        return MetricCheck(
            name,
            where,
            "differs",
            metric.ours,
            f"{shares}: {plain} of {len(pairs)} items differ, every one explained by it",
        )
    return MetricCheck(
        name, where, "not ours", None, f"{shares}: {under_gate} of {len(pairs)} items differ even so; not checked"
    )


@dataclass(frozen=True)
class CheckTally:
    """Where recorded values met our recomputation, in three states: reproduced, differs, or nothing recorded to check.
    Predictions, per-item scores and averages are counted apart; `unchecked_items` are the items that record neither a
    prediction nor a score we recompute (a judgment alone is not checked)."""

    items: int
    predictions: tuple[int, int]  # (reproduced, differ)
    scores: tuple[int, int]
    averages: tuple[int, int]
    unchecked_items: int
    registry_differences: int = 0  # golds or questions that differ from the task data (evalsuite score --data-dir)
    # predictions scored as recorded although a trajectory is kept: no extraction rule of the writer applies to it
    unchecked_predictions: int = 0

    @property
    def compared(self) -> int:
        return sum(sum(pair) for pair in (self.predictions, self.scores, self.averages))

    @property
    def differ(self) -> int:
        return self.predictions[1] + self.scores[1] + self.averages[1]

    def lines(self) -> list[str]:
        """The three states as lines: what was reproduced, what differs, and what had nothing recorded to check."""
        kinds = (("prediction", self.predictions), ("per-item score", self.scores), ("average", self.averages))
        reproduced = [_count(pair[0], kind) for kind, pair in kinds if pair[0]]
        differ = [_count(pair[1], kind) for kind, pair in kinds if pair[1]]
        lines = []
        if reproduced:
            lines.append(f"reproduced: {', '.join(reproduced)}")
        if differ:
            lines.append(f"differs: {', '.join(differ)}")
        if self.registry_differences:
            lines.append(f"differs from the task data: {_count(self.registry_differences, 'gold or question')}")
        if self.unchecked_predictions:
            lines.append(
                f"not checked: {_count(self.unchecked_predictions, 'prediction')} scored as recorded; the trajectory "
                "is kept, but no extraction rule of its writer applies to it"
            )
        if self.unchecked_items or not self.compared:
            lines.append(
                f"nothing recorded to check: {self.unchecked_items} of {_count(self.items, 'item')} record no "
                "prediction or score we recompute"
            )
        return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def tally_checks(
    source: ResultSource, records: list[ExampleRecord], recorded: list[RecordedScore], differences: list[Difference]
) -> CheckTally:
    """The three states of every recorded value `compare_with_recorded` and `compare_averages` compared."""
    predictions = sum(original.pred is not None for original in recorded)
    scores = [len(compared_scores(record, original)) for record, original in zip(records, recorded)]
    averages = (
        sum(
            1
            for name in source.averages
            if (mine := RECORDED_METRICS.get(name)) is not None
            and name in METRIC_FUNCTIONS
            and any(mine in r.metrics for r in records)
        )
        if source.metric_file is not None and records
        else 0
    )
    unchecked = sum(original.pred is None and not count for original, count in zip(recorded, scores, strict=True))
    kinds = Counter(
        "registry"
        if d.what in TASK_DATA_DIFFERENCES
        else "prediction"
        if d.what == "prediction"
        else "average"
        if d.what.startswith("average ")
        else "score"
        for d in differences
    )
    return CheckTally(
        len(records),
        (predictions - kinds["prediction"], kinds["prediction"]),
        (sum(scores) - kinds["score"], kinds["score"]),
        (averages - kinds["average"], kinds["average"]),
        unchecked,
        kinds["registry"],
        sum(original.pred_unchecked for original in recorded),
    )
