"""The layout of OASES's Table 1 (`evalsuite table --layout oases-table1`): F1 and EM per benchmark and their
averages."""

from __future__ import annotations

from evalsuite.tables.layouts import ColumnPlan, Layout, LayoutColumn
from evalsuite.tasks.registry import task_label

OASES_TASKS = ("nq", "hotpotqa", "2wikimultihopqa", "bamboogle", "musique")


def oases_plan(_: list[str]) -> ColumnPlan:
    plan: ColumnPlan = [
        (task_label(t), [LayoutColumn(f"{t}.f1", "F1", (t,), "f1"), LayoutColumn(f"{t}.em", "EM", (t,), "em")])
        for t in OASES_TASKS
    ]
    plan.append(
        (
            "Avg.",
            [
                LayoutColumn("avg.f1", "F1", OASES_TASKS, "f1", True),
                LayoutColumn("avg.em", "EM", OASES_TASKS, "em", True),
            ],
        )
    )
    return plan


LAYOUT = Layout("oases-table1", "OASES Table 1: F1 and EM per benchmark and their averages", oases_plan)
