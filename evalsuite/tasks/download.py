"""The hub benchmarks on local disk: `evalsuite data download` writes `<task>.<split>.jsonl` files, each recorded
in the folder's manifest (rows, sha256, source), and `evalsuite data status` says which task data is found where.

Task data is looked for in --data-dir, then $EVALSUITE_DATA_DIR, then the download cache (`<cache>/data`).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from evalsuite.errors import DataError, EvalsuiteError, first_line, require
from evalsuite.files import cache_root, file_sha256, replace_atomically
from evalsuite.network import hub_unreachable
from evalsuite.tasks.registry import Task
from evalsuite.tasks.rows import check_unique_ids, read_jsonl_rows, row_from_dict

DATA_DIR_ENV = "EVALSUITE_DATA_DIR"
MANIFEST = "evalsuite-data.json"


@dataclass(frozen=True)
class DataDir:
    """One place task files are looked for, and how the user named it."""

    label: str
    path: Path


@dataclass
class DownloadedFile:
    """A split written by `download_split`, as its manifest entry records it."""

    task: str
    split: str
    rows: int
    sha256: str
    source: str
    downloaded_at: str


def download_cache_dir() -> Path:
    """Where `evalsuite data download` writes by default: <cache>/data (see evalsuite.files.cache_root)."""
    return cache_root() / "data"


def data_dirs(data_dir: str | Path | None = None) -> list[DataDir]:
    """The folders searched for task files, in order: --data-dir, $EVALSUITE_DATA_DIR, the download cache.

    A folder the user named explicitly must exist; the download cache is only listed once something is in it.
    """
    found: list[DataDir] = []
    for label, value, hint in (
        ("--data-dir", data_dir, "check --data-dir"),
        (f"${DATA_DIR_ENV}", os.environ.get(DATA_DIR_ENV), f"check ${DATA_DIR_ENV}"),
    ):
        if value:
            path = Path(value)
            if not path.is_dir():
                raise EvalsuiteError(f"data directory {path} does not exist", hint=hint)
            found.append(DataDir(label, path))
    cache = download_cache_dir()
    if cache.is_dir():
        found.append(DataDir("download cache", cache))
    return found


def read_manifest(directory: Path) -> dict[str, dict]:
    """The folder's download records, by file name ({} when nothing was downloaded into it)."""
    path = directory / MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(
            f"{path}: unreadable download record ({exc})", hint="delete it and run `evalsuite data download` again"
        ) from None


def check_downloaded(path: Path, task: str) -> None:
    """Refuse a recorded download that is no longer exactly what was downloaded for this task."""
    entry = read_manifest(path.parent)[path.name]
    again = f"run `evalsuite data download --tasks {task} --data-dir {path.parent}` again"
    if entry.get("task") != task:
        raise DataError(f"{path}: holds rows of task {entry.get('task')!r}, not {task!r}", hint=again)
    if file_sha256(path) != entry.get("sha256"):
        raise DataError(
            f"{path}: content differs from the download ({entry.get('rows')} rows from {entry.get('source')})",
            hint=again,
        )


def _write_atomically(path: Path, text: str) -> None:
    # Write then rename: a killed download never leaves a half-written file under the final name.
    replace_atomically(path, text.encode("utf-8"))


HUB_DATASET = "RUC-NLPIR/FlashRAG_datasets"


def offline_hint(files: str) -> str:
    """How to go on without the hub, named in every offline error: a local mirror, or local task files."""
    return (
        f"with a local folder laid out like {HUB_DATASET}: `evalsuite data download --from DIR`; or put {files} in a "
        f"folder and pass --data-dir DIR to the command that reads them (or set ${DATA_DIR_ENV})"
    )


def quiet_hub_clients() -> None:
    """Keep the hub clients' retry warnings off the screen: a failure is reported once, as one error line."""
    import logging

    for name in ("huggingface_hub", "datasets", "fsspec"):
        logging.getLogger(name).setLevel(logging.ERROR)


def download_split(task: Task, split: str, dest: Path, source: str | None = None) -> Path:
    """Fetch one split (from the task's hub dataset through `datasets`, or from `source`: another hub id, or a local
    folder laid out like it, read without `datasets`), check every row as a local file is checked, write
    `<task>.<split>.jsonl` into `dest` and record its rows, sha256 and source in the folder's manifest."""
    repo = source or task.hub_path
    if repo is None:
        raise EvalsuiteError(f"task {task.name!r} ships inside evalsuite and has nothing to download")
    if Path(repo).is_dir():
        found = mirror_split_file(Path(repo), task, split)
        rows = len(read_jsonl_rows(found))
        data = found.read_bytes()  # the checked file itself, byte for byte: its hash is the mirror's
        origin = f"local mirror {found.with_suffix('')}"
    else:
        if repo.startswith(("/", "./", "../", "~")):
            raise EvalsuiteError(
                f"--from {repo}: no such folder", hint=f"give a folder holding {task.name}/{split}.jsonl, or a hub id"
            )
        config = task.hub_config or task.name
        raw = _hub_rows(task, split, repo, config)
        rows = len(raw)
        data = "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in raw).encode("utf-8")
        origin = f"hf://{repo}/{config}/{split}"
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"{task.name}.{split}.jsonl"
    replace_atomically(target, data)  # write then rename: a killed download never leaves half a file
    record = DownloadedFile(
        task.name, split, rows, file_sha256(target), origin, datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    files = read_manifest(dest)
    files[target.name] = asdict(record)
    _write_atomically(dest / MANIFEST, json.dumps({"files": files}, indent=2, sort_keys=True) + "\n")
    return target


def mirror_split_file(root: Path, task: Task, split: str) -> Path:
    """A split's file in a local folder laid out like the hub dataset: `<task>/<split>.jsonl` (the hub's own
    layout, one folder per config) or `<task>.<split>.jsonl`, under the task's hub config name or its own name."""
    names = list(dict.fromkeys(name for name in (task.hub_config, task.name) if name))
    candidates = [root / name / f"{split}.jsonl" for name in names] + [root / f"{name}.{split}.jsonl" for name in names]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    present = sorted(str(p.relative_to(root)) for p in root.glob("**/*.jsonl"))
    holds = (
        f"it holds {', '.join(present[:6])}{', …' if len(present) > 6 else ''}"
        if present
        else "it holds no .jsonl file"
    )
    raise DataError(
        f"{root}: no {split} split of {task.name}: expected {candidates[0]} (or {candidates[len(names)]})",
        hint=f"{holds}; put FlashRAG rows (one JSON object per line) at {candidates[0]}",
    )


def _hub_rows(task: Task, split: str, repo: str, config: str) -> list[dict]:
    """One split of a hub dataset through `datasets`, every row checked as a local file's rows are."""
    if (why := hub_unreachable()) is not None:
        raise EvalsuiteError(
            f"the Hugging Face hub cannot be reached ({why}): {repo} not downloaded",
            hint=offline_hint(f"{task.name}.{split}.jsonl"),
        )
    datasets = require("datasets", "hf", "downloading benchmarks from the hub")
    quiet_hub_clients()
    if not sys.stderr.isatty():
        datasets.disable_progress_bars()  # its bars would fill logs; ours are on stderr only for a terminal
    try:
        # force_redownload: `data download` means fetch now, never an older copy from the `datasets` cache
        dataset = datasets.load_dataset(repo, config, split=split, download_mode="force_redownload")
    except Exception as exc:  # the hub client raises many types (ConnectionError, OfflineModeIsEnabled, ...)
        raise EvalsuiteError(
            f"could not load {repo} ({config}, split {split}): {first_line(exc)}",
            hint=offline_hint(f"{task.name}.{split}.jsonl"),
        ) from None
    where = f"{repo}/{config}:{split}"
    raw = [dict(obj) for obj in dataset]
    check_unique_ids([row_from_dict(obj, f"{where}:row {i + 1}") for i, obj in enumerate(raw)], where)
    return raw
