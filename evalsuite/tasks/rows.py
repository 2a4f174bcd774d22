"""Task rows (FlashRAG format) and their validation."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError


@dataclass
class TaskRow:
    """One question: FlashRAG's `{"id", "question", "golden_answers", "metadata"}`."""

    id: str
    question: str
    golden_answers: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)


def normalize_question(question: str) -> str:
    """Search-R1's evaluation convention: strip, and append '?' when the question does not end with one."""
    question = question.strip()
    if not question.endswith("?"):
        question += "?"
    return question


def row_from_dict(obj: Any, where: str) -> TaskRow:
    """Validate one decoded row; `where` ("file:line") is named in every error."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "id" not in obj or obj["id"] is None or str(obj["id"]).strip() == "":
        raise DataError(f"{where}: missing 'id'", hint="every row needs a unique string 'id' (FlashRAG format)")
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: missing or empty 'question' (row id {obj['id']!r})")
    if "golden_answers" not in obj:
        raise DataError(
            f"{where}: missing 'golden_answers' (row id {obj['id']!r})",
            hint='give the answers as a list of strings: "golden_answers": ["Paris"]',
        )
    golds = obj["golden_answers"]
    if not isinstance(golds, list):
        raise DataError(
            f"{where}: 'golden_answers' must be a list, got {type(golds).__name__} (row id {obj['id']!r})",
            hint=f'wrap it in a list: "golden_answers": [{json.dumps(golds)}]',
        )
    if not golds:
        raise DataError(
            f"{where}: 'golden_answers' is empty (row id {obj['id']!r})", hint="every row needs at least one answer"
        )
    answers: list[str] = []
    for gold in golds:
        if isinstance(gold, bool) or not isinstance(gold, (str, int, float)):
            raise DataError(
                f"{where}: 'golden_answers' holds a {type(gold).__name__} ({gold!r:.100}); only strings and numbers are"
                f" allowed (row id {obj['id']!r})",
                hint='write each answer as a string: "golden_answers": ["Paris"]',
            )
        if isinstance(gold, float) and not math.isfinite(gold):
            raise DataError(
                f"{where}: 'golden_answers' holds {gold!r}, which is not an answer (row id {obj['id']!r})",
                hint="write the answer as a string",
            )
        # Numbers as answers (years, counts) become strings, as FlashRAG compares strings.
        answers.append(gold if isinstance(gold, str) else _number_to_string(gold))
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DataError(f"{where}: 'metadata' must be an object (row id {obj['id']!r})")
    if _nesting(metadata) > MAX_METADATA_DEPTH:
        raise DataError(
            f"{where}: 'metadata' is nested more than {MAX_METADATA_DEPTH} levels deep (row id {obj['id']!r})",
            hint="flatten the row's metadata",
        )
    return TaskRow(id=str(obj["id"]), question=question, golden_answers=answers, metadata=metadata)


# Run records carry the metadata; deeper nesting than this is no real dataset's and breaks JSON writers' recursion.
MAX_METADATA_DEPTH = 64


def _nesting(value: Any) -> int:
    """How deeply lists and objects nest inside `value` (iteratively: the value may be deeper than Python's stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_METADATA_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _number_to_string(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def check_unique_ids(rows: list[TaskRow], source: str, lines: list[int] | None = None) -> None:
    """Raise on the first duplicated id, naming both places it occurs."""
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        where = lines[index] if lines else index + 1
        if row.id in seen:
            raise DataError(
                f"{source}:{where}: duplicate id {row.id!r} (first seen at line {seen[row.id]})",
                hint="ids must be unique within a split",
            )
        seen[row.id] = where


def read_jsonl_rows(path: Path) -> list[TaskRow]:
    """Read and validate a FlashRAG JSONL file; every error names `file:line`, and a file without rows is refused."""
    rows: list[TaskRow] = []
    lines: list[int] = []
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{where}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
                    hint="save the file as UTF-8",
                ) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"{where}: invalid JSON ({exc.msg} at column {exc.colno})",
                    hint="each line must be one complete JSON object",
                ) from None
            except RecursionError:
                raise DataError(
                    f"{where}: the JSON is nested too deeply to read", hint="flatten the row's metadata"
                ) from None
            rows.append(row_from_dict(obj, where))
            lines.append(lineno)
    if not rows:
        raise DataError(
            f"{path}: the task file has no rows",
            hint='give one JSON object per line: {"id", "question", "golden_answers"}',
        )
    check_unique_ids(rows, str(path), lines)
    return rows
