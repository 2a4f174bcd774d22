"""Load task rows from a local data directory (--data-dir, $EVALSUITE_DATA_DIR, the download cache), from the
package, or from the Hugging Face hub."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsuite.errors import DataError, EvalsuiteError, first_line, require
from evalsuite.files import file_sha256
from evalsuite.network import hub_unreachable
from evalsuite.tasks.download import (
    DataDir,
    check_downloaded,
    data_dirs,
    offline_hint,
    quiet_hub_clients,
    read_manifest,
)
from evalsuite.tasks.registry import Task, get_task
from evalsuite.tasks.rows import TaskRow, check_unique_ids, normalize_question, read_jsonl_rows, row_from_dict


@dataclass
class LoadedSplit:
    """The rows of one task split and where they came from (for the run manifest)."""

    task: Task
    split: str
    rows: list[TaskRow]
    source: str
    source_hash: str | None


def resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    """The first folder searched for task files: --data-dir, else $EVALSUITE_DATA_DIR, else the download cache."""
    places = data_dirs(data_dir)
    return places[0].path if places else None


def find_split_file(task: Task, split: str, data_dir: str | Path | None = None) -> tuple[Path, DataDir] | None:
    """The first local file of a split in --data-dir, $EVALSUITE_DATA_DIR and the download cache, in that order.

    A file that a download recorded is checked against its record (task, sha256), so a damaged, edited or swapped
    download is refused with the command that redoes it; files put there by hand are read as any local file.
    """
    for place in data_dirs(data_dir):
        path = local_split_file(place.path, task.name, split)
        if path is None:
            continue
        if path.name in read_manifest(place.path):
            check_downloaded(path, task.name)
        return path, place
    return None


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
    splits = {
        p.name[len(task) + 1 :].rsplit(".", 1)[0]
        for p in data_dir.glob(f"{task}.*")
        if p.suffix in (".jsonl", ".parquet")
    }
    if (data_dir / task).is_dir():
        splits |= {p.stem for p in (data_dir / task).iterdir() if p.suffix in (".jsonl", ".parquet")}
    return sorted(splits)


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
        return f"offline? {offline_hint(f'{task.name}.<split>.jsonl')}; online, `evalsuite data download` caches them"
    found = available_splits(directory, task.name)
    return (
        f"no {task.name}.<split>.jsonl for this split in {directory}; splits found there: {', '.join(found) or 'none'}"
    )


def load_from_hub(task: Task, split: str, directory: Path | None = None) -> list[TaskRow]:
    """Load a split from the FlashRAG hub dataset, with an offline error that says how to use local files."""
    if task.hub_path is None:
        raise EvalsuiteError(
            f"task {task.name!r} has no split {split!r} and no hub location", hint=_local_hint(task, directory)
        )
    try:
        datasets = require("datasets", "hf", f"loading {task.name} from the Hugging Face hub")
    except EvalsuiteError as exc:
        raise EvalsuiteError(
            f"{exc.message} (no local file for {task.name} split {split!r})", hint=_local_hint(task, directory)
        ) from None
    if (why := hub_unreachable()) is not None:  # one quick check, not the hub client's retries
        raise EvalsuiteError(
            f"no local {task.name} {split} file, and the Hugging Face hub cannot be reached ({why})",
            hint=_local_hint(task, directory),
        )
    quiet_hub_clients()
    try:
        dataset = datasets.load_dataset(task.hub_path, task.hub_config or task.name, split=split)
    except Exception as exc:  # the hub client raises many types (ConnectionError, OfflineModeIsEnabled, ...)
        raise EvalsuiteError(
            f"could not load {task.hub_path} ({task.hub_config or task.name}, "
            f"split {split}) from the hub: {first_line(exc)}",
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
    found = find_split_file(task, split, data_dir)
    path = found[0] if found else None
    if path is None and task.packaged_data is not None:
        from evalsuite.tasks.packaged import packaged_split_file

        path = packaged_split_file(task, split)
    if path is not None:
        rows = read_parquet_rows(path) if path.suffix == ".parquet" else read_jsonl_rows(path)
        source, source_hash = str(path), file_sha256(path)
    else:
        rows = load_from_hub(task, split, resolve_data_dir(data_dir))
        source, source_hash = f"hf://{task.hub_path}/{task.hub_config}/{split}", None
    if normalize_questions:
        for row in rows:
            row.question = normalize_question(row.question)
    return LoadedSplit(task=task, split=split, rows=rows, source=source, source_hash=source_hash)


def locate_split(task: Task, split: str, data_dir: str | Path | None = None) -> dict:
    """Where a split would be read from, without loading it: the folder (by how it was named), the file, its row
    count and its origin (a download's source, a local file, the package); `found_in` is 'not found' or 'error'."""
    status = {
        "task": task.name,
        "split": split,
        "found_in": "not found",
        "path": None,
        "rows": None,
        "origin": f"hub {task.hub_path} (evalsuite data download --tasks {task.name})" if task.hub_path else "-",
    }
    try:
        found = find_split_file(task, split, data_dir)
    except EvalsuiteError as exc:
        return {**status, "found_in": "error", "origin": exc.message}
    if found is not None:
        path, place = found
        recorded = read_manifest(place.path).get(path.name)
        rows = recorded["rows"] if recorded else (_count_rows(path))
        origin = recorded["source"] if recorded else "local file"
        return {**status, "found_in": f"{place.label} {place.path}", "path": str(path), "rows": rows, "origin": origin}
    if task.packaged_data is not None:
        from evalsuite.tasks.packaged import packaged_splits

        rows = packaged_splits(task).get(split)
        if rows is not None:
            return {
                **status,
                "found_in": "package",
                "rows": rows,
                "origin": f"packaged with evalsuite ({task.packaged_data})",
            }
    return status


def _count_rows(path: Path) -> int:
    if path.suffix == ".parquet":
        return require("pyarrow.parquet", "hf", "reading parquet task files").ParquetFile(path).metadata.num_rows
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
