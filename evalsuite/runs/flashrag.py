"""Import FlashRAG / Search-R1 result files (a JSON list of `{id, question, golden_answers, output}`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.agent.trajectory import parse_trajectory
from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.runs.schema import ExampleRecord
from evalsuite.tasks.registry import get_task, list_tasks

# FlashRAG's recorded metric names → ours.
RECORDED_METRICS = {"em": "em", "acc": "cover_em", "f1": "f1"}


@dataclass
class RecordedScore:
    """What the original pipeline recorded for one question."""

    id: str
    pred: str | None
    metric_score: dict[str, float]


def infer_task(path: Path) -> str:
    """The registered task whose name prefixes the file name (longest match), e.g. `bamboogle_2026_…json`."""
    stem = path.name.lower()
    matches = [t.name for t in list_tasks() if stem.startswith(t.name.lower() + "_") or stem.startswith(t.name.lower() + ".")]
    if not matches:
        raise EvalsuiteError(f"cannot infer the task of {path} from its name", hint="pass --task NAME (see `evalsuite tasks`)")
    return max(matches, key=len)


def load_result_file(path: Path) -> list[dict[str, Any]]:
    """Read a FlashRAG result file and check its shape, naming the item and field that is wrong."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON list of results, got {type(items).__name__}")
    for index, item in enumerate(items):
        where = f"{path}: item {index}"
        if not isinstance(item, dict):
            raise DataError(f"{where}: expected an object")
        for key in ("id", "question", "golden_answers"):
            if key not in item:
                raise DataError(f"{where}: missing '{key}'")
        if not isinstance(item["golden_answers"], list):
            raise DataError(f"{where} (id {item['id']!r}): 'golden_answers' must be a list")
        output = item.get("output")
        if not isinstance(output, dict) or not isinstance(output.get("final_response", output.get("pred")), str):
            raise DataError(
                f"{where} (id {item['id']!r}): missing 'output.final_response'",
                hint="this reader takes FlashRAG/Search-R1 intermediate_data.json files",
            )
    return items


def records_from_result_file(path: Path, task: str | None = None) -> tuple[str, list[ExampleRecord], list[RecordedScore]]:
    """Turn each result item into an ExampleRecord (unscored) plus what the file recorded."""
    task_name = get_task(task).name if task else infer_task(path)
    split = get_task(task_name).eval_split
    records: list[ExampleRecord] = []
    recorded: list[RecordedScore] = []
    seen: set[str] = set()
    for index, item in enumerate(load_result_file(path)):
        example_id = str(item["id"])
        if example_id in seen:
            raise DataError(f"{path}: item {index}: duplicate id {example_id!r}")
        seen.add(example_id)
        output = item["output"]
        response = output.get("final_response") or ""
        parsed = parse_trajectory(response)
        records.append(
            ExampleRecord(
                id=example_id,
                task=task_name,
                split=split,
                question=str(item["question"]),
                golden_answers=[str(g) for g in item["golden_answers"]],
                prediction=parsed.answer,
                trajectory=response,
                turns=parsed.turns,
                protocol_errors=parsed.errors,
                stop_reason=output.get("stop_reason"),
                metadata={"prompt": output.get("query")} if output.get("query") else {},
            )
        )
        recorded.append(
            RecordedScore(id=example_id, pred=output.get("pred"), metric_score=dict(output.get("metric_score") or {}))
        )
    return task_name, records, recorded


def compare_with_recorded(records: list[ExampleRecord], recorded: list[RecordedScore], tolerance: float = 1e-9) -> list[str]:
    """Differences between our predictions/scores and the recorded ones, one line each."""
    differences: list[str] = []
    for record, original in zip(records, recorded):
        ours = record.prediction if record.prediction is not None else ""
        if original.pred is not None and ours != original.pred:
            differences.append(f"{record.id}: prediction {ours!r} != recorded {original.pred!r}")
        for theirs, mine in RECORDED_METRICS.items():
            if theirs in original.metric_score:
                value = float(original.metric_score[theirs])
                if abs(record.metrics[mine] - value) > tolerance:
                    differences.append(f"{record.id}: {mine} {record.metrics[mine]:.4f} != recorded {theirs} {value:.4f}")
    return differences
