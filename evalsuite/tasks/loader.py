"""Load task rows from a local data directory, from the package, or from the Hugging Face hub."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from evalsuite.errors import DataError, EvalsuiteError, require
from evalsuite.files import file_sha256
from evalsuite.tasks.registry import Task, get_task
from evalsuite.tasks.rows import TaskRow, check_unique_ids, normalize_question, row_from_dict

DATA_DIR_ENV = "EVALSUITE_DATA_DIR"


@dataclass
class LoadedSplit:
    """The rows of one task split and where they came from (for the run manifest)."""

    task: Task
    split: str
    rows: list[TaskRow]
    source: str
    source_hash: str | None


def resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    """The explicit --data-dir, else $EVALSUITE_DATA_DIR, else None (use the package or the hub)."""
    if data_dir is not None:
        path = Path(data_dir)
    elif os.environ.get(DATA_DIR_ENV):
        path = Path(os.environ[DATA_DIR_ENV])
    else:
        return None
    if not path.is_dir():
        raise EvalsuiteError(f"data directory {path} does not exist", hint=f"check --data-dir or ${DATA_DIR_ENV}")
    return path


def local_split_file(data_dir: Path, task: str, split: str) -> Path | None:
    """The first of `<task>.<split>.jsonl`, `<task>/<split>.jsonl` and their parquet twins that exists."""
    for candidate in (
        data_dir / f"{task}.{split}.jsonl",
        data_dir / task / f"{split}.jsonl",
        data_dir / f"{task}.{split}.parquet",
        data_dir / task / f"{split}.parquet",
    ):
        if candidate.is_file():
            return candidate
    return None


def available_splits(data_dir: Path, task: str) -> list[str]:
    """Split names found for a task in a data directory."""
    splits = {p.name[len(task) + 1 :].rsplit(".", 1)[0] for p in data_dir.glob(f"{task}.*") if p.suffix in (".jsonl", ".parquet")}
    if (data_dir / task).is_dir():
        splits |= {p.stem for p in (data_dir / task).iterdir() if p.suffix in (".jsonl", ".parquet")}
    return sorted(splits)


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
                raise DataError(f"{where}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})", hint="save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})", hint="each line must be one complete JSON object") from None
            except RecursionError:
                raise DataError(f"{where}: the JSON is nested too deeply to read", hint="flatten the row's metadata") from None
            rows.append(row_from_dict(obj, where))
            lines.append(lineno)
    if not rows:
        raise DataError(f"{path}: the task file has no rows", hint="give one JSON object per line: {\"id\", \"question\", \"golden_answers\"}")
    check_unique_ids(rows, str(path), lines)
    return rows


def read_parquet_rows(path: Path) -> list[TaskRow]:
    """Read and validate a FlashRAG parquet file (needs pyarrow, which `datasets` brings)."""
    pq = require("pyarrow.parquet", "hf", "reading parquet task files")
    table = pq.read_table(path)
    rows = [row_from_dict(obj, f"{path}:row {i + 1}") for i, obj in enumerate(table.to_pylist())]
    if not rows:
        raise DataError(f"{path}: the task file has no rows")
    check_unique_ids(rows, str(path))
    return rows


def _local_hint(task: Task, directory: Path | None) -> str:
    if directory is None:
        return f"offline? put <task>.<split>.jsonl files in a directory and pass --data-dir DIR or set ${DATA_DIR_ENV}"
    found = available_splits(directory, task.name)
    return f"no {task.name}.<split>.jsonl for this split in {directory}; splits found there: {', '.join(found) or 'none'}"


def load_from_hub(task: Task, split: str, directory: Path | None = None) -> list[TaskRow]:
    """Load a split from the FlashRAG hub dataset, with an offline error that says how to use local files."""
    if task.hub_path is None:
        raise EvalsuiteError(f"task {task.name!r} has no split {split!r} and no hub location", hint=_local_hint(task, directory))
    try:
        datasets = require("datasets", "hf", f"loading {task.name} from the Hugging Face hub")
    except EvalsuiteError as exc:
        raise EvalsuiteError(f"{exc.message} (no local file for {task.name} split {split!r})", hint=_local_hint(task, directory)) from None
    try:
        dataset = datasets.load_dataset(task.hub_path, task.hub_config or task.name, split=split)
    except Exception as exc:  # the hub client raises many types (ConnectionError, OfflineModeIsEnabled, ...)
        raise EvalsuiteError(
            f"could not load {task.hub_path} ({task.hub_config or task.name}, split {split}) from the hub: {exc}",
            hint=_local_hint(task, directory),
        ) from None
    where = f"{task.hub_path}/{task.hub_config}:{split}"
    rows = [row_from_dict(dict(obj), f"{where}:row {i + 1}") for i, obj in enumerate(dataset)]
    check_unique_ids(rows, where)
    return rows


def load_split(
    task: str | Task,
    split: str | None = None,
    data_dir: str | Path | None = None,
    normalize_questions: bool = True,
) -> LoadedSplit:
    """Load one split of a task: local directory first, then the package's own data, then the hub."""
    task = get_task(task) if isinstance(task, str) else task
    split = split or task.eval_split
    directory = resolve_data_dir(data_dir)
    path: Path | None = None
    if directory is not None:
        path = local_split_file(directory, task.name, split)
    if path is None and task.packaged_data is not None:
        from evalsuite.tasks.packaged import packaged_split_file

        path = packaged_split_file(task, split)
    if path is not None:
        rows = read_parquet_rows(path) if path.suffix == ".parquet" else read_jsonl_rows(path)
        source, source_hash = str(path), file_sha256(path)
    else:
        rows = load_from_hub(task, split, directory)
        source, source_hash = f"hf://{task.hub_path}/{task.hub_config}/{split}", None
    if normalize_questions:
        for row in rows:
            row.question = normalize_question(row.question)
    return LoadedSplit(task=task, split=split, rows=rows, source=source, source_hash=source_hash)
