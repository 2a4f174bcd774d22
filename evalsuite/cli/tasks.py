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
    from evalsuite.tasks.registry import list_tasks

    directory = resolve_data_dir(data_dir)
    table = Table(title="evalsuite tasks")
    for column in ("name", "display", "category", "domain", "eval split", "hub", "rows (eval split)", "other local splits"):
        table.add_column(column)
    for task in list_tasks():
        rows = "-"
        others = ""
        if directory is not None or task.packaged_data is not None:
            try:
                rows = str(len(load_split(task, data_dir=directory).rows))
            except EvalsuiteError:
                rows = "not found"
            if directory is not None:
                others = ", ".join(s for s in available_splits(directory, task.name) if s != task.eval_split)
        hub = f"{task.hub_path}:{task.hub_config}" if task.hub_path else "packaged"
        table.add_row(task.name, task.display_name + (" †" if task.in_domain else ""), task.category, task.domain, task.eval_split, hub, rows, others)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)
