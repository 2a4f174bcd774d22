"""`evalsuite tasks`: the task registry as a table, with row counts where data is found."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from evalsuite.console import echo_json, print_table
from evalsuite.errors import EvalsuiteError


def task_records(data_dir: Optional[Path]) -> list[dict]:
    """Every registered task with the splits found locally (--data-dir, $EVALSUITE_DATA_DIR, the download cache,
    the package) and their row counts, or the error that loading them raised."""
    from evalsuite.tasks.download import data_dirs
    from evalsuite.tasks.loader import available_splits, load_split
    from evalsuite.tasks.packaged import packaged_splits
    from evalsuite.tasks.registry import list_tasks

    places = data_dirs(data_dir)
    records = []
    for task in list_tasks():
        splits: list[str] = []
        for place in places:
            splits += [s for s in available_splits(place.path, task.name) if s not in splits]
        splits += [s for s in packaged_splits(task) if s not in splits]
        counts: dict[str, int | str] = {}
        for split in sorted(splits, key=lambda s: (s != task.eval_split, s)):
            try:
                counts[split] = len(load_split(task, split, data_dir=data_dir).rows)
            except EvalsuiteError as exc:
                counts[split] = f"error: {exc.message}"
        records.append(
            {
                "name": task.name,
                "display": task.display_name,
                "in_domain": task.in_domain,
                "category": task.category,
                "domain": task.domain,
                "eval_split": task.eval_split,
                "source": f"{task.hub_path}:{task.hub_config}" if task.hub_path else "packaged",
                "rows": counts,
                "eval_split_found": task.eval_split in counts,
            }
        )
    return records


def tasks_command(
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Directory of <task>.<split>.jsonl files (or $EVALSUITE_DATA_DIR; then the download cache).",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object: the tasks and the rows found per split."
    ),
) -> None:
    """List the registered benchmarks."""
    records = task_records(data_dir)
    if as_json:
        echo_json({"tasks": records})
        return
    table = Table(title="evalsuite tasks")
    for column in ("name", "display", "category", "domain", "eval split", "source", "rows per split found"):
        table.add_column(column)
    for r in records:
        counts = [f"{split}: {n}" for split, n in r["rows"].items()]
        if not r["eval_split_found"]:
            counts.insert(0, f"{r['eval_split']}: not found (evalsuite data download)")
        table.add_row(
            r["name"],
            r["display"] + (" †" if r["in_domain"] else ""),
            r["category"],
            r["domain"],
            r["eval_split"],
            r["source"],
            ", ".join(counts),
        )
    print_table(table)


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)
