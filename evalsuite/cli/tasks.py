"""`evalsuite tasks`: the task registry as a table, with row counts where data is found."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from evalsuite.errors import EvalsuiteError


def tasks_command(
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Directory of <task>.<split>.jsonl files (or $EVALSUITE_DATA_DIR)."),
) -> None:
    """List the registered benchmarks."""
    from evalsuite.tasks.loader import available_splits, load_split, resolve_data_dir
    from evalsuite.tasks.packaged import packaged_splits
    from evalsuite.tasks.registry import list_tasks

    directory = resolve_data_dir(data_dir)
    table = Table(title="evalsuite tasks" + (f" (data: {directory})" if directory else ""))
    for column in ("name", "display", "category", "domain", "eval split", "source", "rows per split found"):
        table.add_column(column)
    for task in list_tasks():
        splits = available_splits(directory, task.name) if directory is not None else []
        splits += [s for s in packaged_splits(task) if s not in splits]
        counts = []
        for split in sorted(splits, key=lambda s: (s != task.eval_split, s)):
            try:
                n = str(len(load_split(task, split, data_dir=directory).rows))
            except EvalsuiteError as exc:
                n = f"error: {exc.message}"
            counts.append(f"{split}: {n}")
        if directory is not None and task.eval_split not in splits:
            counts.insert(0, f"{task.eval_split}: not found")
        source = f"{task.hub_path}:{task.hub_config}" if task.hub_path else "packaged"
        table.add_row(task.name, task.display_name + (" †" if task.in_domain else ""), task.category, task.domain, task.eval_split, source, ", ".join(counts) or "-")
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)
