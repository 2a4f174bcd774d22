"""Training rows: task rows as TRL dataset records (prompt = the question) with the columns rewards read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError
from evalsuite.metrics.coverage import teacher_queries_from_metadata
from evalsuite.tasks import get_task, load_split
from evalsuite.tasks.subset import apply_subset
from evalsuite.training.config import TrainConfig


def read_query_file(path: str | Path, field_name: str) -> dict[str, list[str]]:
    """A JSONL of `{"id": ..., field_name: [str, ...]}` rows (teacher queries, reference plans) keyed by id."""
    out: dict[str, list[str]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: not JSON ({exc})") from None
        if not isinstance(row.get(field_name), list) or "id" not in row:
            raise DataError(f"{path}:{number}: needs an `id` and a list `{field_name}`")
        out[str(row["id"])] = [str(q) for q in row[field_name]]
    return out


def training_rows(config: TrainConfig) -> list[dict[str, Any]]:
    """Rows of the configured tasks/split/subset with `prompt`, `id`, `question`, `golden_answers`,
    `teacher_queries` and `reference_plan` (from the given files, else the row's gold decomposition, else empty)."""
    teacher = read_query_file(config.teacher_queries, "queries") if config.teacher_queries else None
    plans = read_query_file(config.reference_plans, "plan") if config.reference_plans else None
    rows: list[dict[str, Any]] = []
    for name in [t.strip() for t in config.tasks.split(",") if t.strip()]:
        loaded = load_split(get_task(name), config.split, config.data_dir)
        for row in apply_subset(loaded.rows, config.subset):
            gold_steps = teacher_queries_from_metadata(row.metadata)
            fallback = gold_steps[0] if gold_steps else []
            rows.append({
                "prompt": row.question,
                "id": f"{name}:{row.id}",
                "question": row.question,
                "golden_answers": list(row.golden_answers),
                "teacher_queries": teacher.get(row.id, []) if teacher is not None else fallback,
                "reference_plan": plans.get(row.id, []) if plans is not None else fallback,
            })
    if not rows:
        raise DataError(f"no training rows in {config.tasks} split {config.split} subset {config.subset}")
    return rows
