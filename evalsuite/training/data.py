"""Training rows: task rows as TRL dataset records (prompt = the question) with the columns rewards read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
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


def per_task_files(spec: str | dict[str, str] | None, tasks: list[str], what: str) -> dict[str, str]:
    """`spec` as task → file: one file serves every task; a mapping names a file per task."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(tasks))
        if unknown:
            raise DataError(
                f"{what} names tasks {unknown} that the config does not train on", hint=f"tasks: {', '.join(tasks)}"
            )
        return dict(spec)
    return {task: spec for task in tasks}


@dataclass(frozen=True)
class QueryColumn:
    """A list per training row that a method reads (Progress's teacher queries, Search-P1's reference plans): from
    the files its config names (one file, or a mapping task -> file), else the row's gold decomposition, else empty.
    A recipe names its columns in `Recipe.row_columns`."""

    column: str  # the row's key, e.g. "teacher_queries", "reference_plan"
    setting: str  # the config field naming the files, e.g. "teacher_queries", "reference_plans"
    file_field: str  # each file line's list, e.g. "teacher_queries", "plan"


def training_rows(config: TrainConfig, columns: Sequence[QueryColumn] = ()) -> list[dict[str, Any]]:
    """Rows of the configured tasks/split/subset with `prompt`, `id`, `question`, `golden_answers` and each of
    `columns` (from its files, else the row's gold decomposition, else empty).

    Teacher files are `evalsuite teacher-queries` output (`teacher_queries` per id); plan files are `evalsuite train
    search-p1 plans` output (`plan` per id, ids as `task:id`)."""
    tasks = [t.strip() for t in config.tasks.split(",") if t.strip()]
    files = {c.column: per_task_files(getattr(config, c.setting, None), tasks, c.setting) for c in columns}
    cache: dict[tuple[str, str], dict[str, list[str]]] = {}

    def entries(path: str, field_name: str) -> dict[str, list[str]]:
        if (path, field_name) not in cache:
            cache[(path, field_name)] = read_query_file(path, field_name)
        return cache[(path, field_name)]

    rows: list[dict[str, Any]] = []
    found = {c.column: 0 for c in columns}
    for name in tasks:
        loaded = load_split(get_task(name), config.split, config.data_dir)
        for row in apply_subset(loaded.rows, config.subset):
            gold_steps = teacher_queries_from_metadata(row.metadata)
            fallback = gold_steps[0] if gold_steps else []
            record: dict[str, Any] = {
                "prompt": row.question,
                "id": f"{name}:{row.id}",
                "question": row.question,
                "golden_answers": list(row.golden_answers),
            }
            for column in columns:
                value: list[str] | None = fallback
                if name in files[column.column]:
                    table = entries(files[column.column][name], column.file_field)
                    value = table.get(f"{name}:{row.id}", table.get(row.id))
                    found[column.column] += value is not None
                record[column.column] = value or []
            rows.append(record)
    if not rows:
        raise DataError(f"no training rows in {config.tasks} split {config.split} subset {config.subset}")
    for column in columns:
        if files[column.column] and not found[column.column]:
            raise DataError(
                f"{column.setting}: {', '.join(sorted(set(files[column.column].values())))} covers none of the "
                f"{len(rows)} training rows",
                hint="the file's ids must be the task rows' ids (or task:id); was it made for this task and split?",
            )
    return rows


def require_column(config: TrainConfig, rows: list[dict[str, Any]], column: str, what: str, hint: str) -> None:
    """Refuse rows none of which has `column` (Progress without teacher queries, Search-P1 without reference plans
    would train another method)."""
    if not any(row[column] for row in rows):
        raise DataError(
            f"{config.method} needs {what} and none of the {len(rows)} "
            "training rows has any (no file given, no gold decomposition)",
            hint=hint,
        )
