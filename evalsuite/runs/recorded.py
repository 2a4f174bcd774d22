"""What became of every metric a result file recorded: reproduced by ours, differing (with the convention that explains
it), or not ours, named and not checked. A recorded metric named like one of ours but defined otherwise says so.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from evalsuite.metrics.registry import is_registered
from evalsuite.runs.conventions import METRIC_FUNCTIONS
from evalsuite.runs.flashrag import RECORDED_METRICS, Difference, RecordedScore, ResultSource, number
from evalsuite.runs.schema import ExampleRecord


@dataclass(frozen=True)
class MetricCheck:
    """One metric a source recorded and what became of it: reproduced, differs (with why), or not ours (not checked)."""

    name: str
    where: str  # "metric_score.txt", "per item", or both
    status: str  # "reproduced", "differs" or "not ours"
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
    (r"input_tokens", "FlashRAG CountToken: prompt length in tokens"),
    (r"search_r1_reward", "Search-R1's training reward (answer and format), a reward rather than an answer metric"),
    (r"search_r1_format_valid|search_r1_format_reason", "Search-R1's format validity check of the whole response"),
    (r"search_r1_extracted_answer", "the answer Search-R1's extract_solution read (prompt + response)"),
    (r"llm_score", "an LLM judge's verdict (AutoRefine cmd/llm_judge.py)"),
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
    checks = []
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


def _check_one(
    name: str, where: str, records: list[ExampleRecord], recorded: list[RecordedScore], differences: list[Difference]
) -> MetricCheck:
    layout = records[0].metadata.get("layout") if records else None
    layout_metrics = LAYOUT_METRICS.get(layout, {}) if isinstance(layout, str) else {}
    if name in layout_metrics:
        return _check_same_name(name, where, layout_metrics[name], records, recorded, own_name=True)
    mine = RECORDED_METRICS.get(name)
    if mine is not None and name in METRIC_FUNCTIONS:
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
