"""The layout of Progress's Table 1 (`evalsuite table --layout progress-table1`): General QA and Multi-hop QA
columns, the multi-hop average and the combined average."""

from __future__ import annotations

from evalsuite.tables.layouts import ColumnPlan, Layout, LayoutColumn
from evalsuite.tasks.registry import task_label

GENERAL = ("nq", "triviaqa", "popqa")
MULTI_HOP = ("hotpotqa", "2wikimultihopqa", "musique")


def progress_plan(_: list[str]) -> ColumnPlan:
    single = lambda t: LayoutColumn(t, task_label(t, True), (t,))  # noqa: E731
    return [
        ("General QA", [single(t) for t in GENERAL]),
        ("Multi-hop QA", [single(t) for t in MULTI_HOP]),
        ("Multi-hop QA", [LayoutColumn("avg_multihop", "Average", MULTI_HOP, average=True)]),
        ("Combined QA", [LayoutColumn("avg", "Average", GENERAL + MULTI_HOP, average=True)]),
    ]


LAYOUT = Layout(
    "progress-table1",
    "Progress Table 1: General QA / Multi-hop QA, multi-hop and combined averages",
    progress_plan,
    True,
)
