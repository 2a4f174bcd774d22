"""`evalsuite data download` (the hub benchmarks into a local
folder) and `evalsuite data status` (what is found where)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from evalsuite.console import echo_json, print_table, progress

data_app = typer.Typer(help="Download the benchmarks and see which task data is found where.", no_args_is_help=True)


def _hub_tasks(spec: Optional[str]):
    from evalsuite.tasks.registry import list_tasks, parse_task_list

    return parse_task_list(spec) if spec else [t for t in list_tasks() if t.hub_path is not None]


def download_command(
    tasks: Optional[str] = typer.Option(
        None, "--tasks", "-t", help="Comma-separated tasks (default: the seven hub benchmarks)."
    ),
    splits: Optional[str] = typer.Option(
        None, "--splits", help="Comma-separated splits for every task (default: each task's eval split)."
    ),
    dest: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Folder to write <task>.<split>.jsonl into (default: $EVALSUITE_DATA_DIR, else the download cache).",
    ),
    source: Optional[str] = typer.Option(
        None,
        "--from",
        help="Another hub dataset id, or a local folder of FlashRAG rows: <task>/<split>.jsonl (the hub's layout) or "
        "<task>.<split>.jsonl; a folder needs no `datasets` and no network.",
    ),
) -> None:
    """Fetch the benchmarks from RUC-NLPIR/FlashRAG_datasets (through `datasets`) or a local folder (--from DIR),
    check every row, and save them with their sha256."""
    import os

    from evalsuite.tasks.download import DATA_DIR_ENV, download_cache_dir, download_split

    chosen = _hub_tasks(tasks)
    target = dest or (Path(os.environ[DATA_DIR_ENV]) if os.environ.get(DATA_DIR_ENV) else download_cache_dir())
    wanted = [
        (task, split)
        for task in chosen
        for split in ([s.strip() for s in splits.split(",") if s.strip()] if splits else [task.eval_split])
    ]
    written = []
    with progress() as bars:
        bar = bars.add_task("download", total=len(wanted))
        for task, split in wanted:
            written.append(download_split(task, split, target, source))
            bars.advance(bar)
    for path in written:
        typer.echo(f"{path}")
    typer.echo(
        f"{len(written)} files in {target}; commands find them there"
        + ("" if target == download_cache_dir() else f" with --data-dir {target}"),
        err=True,
    )


def status_command(
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Also look in this folder (searched first)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """List each task's eval split: where it is found (--data-dir,
    $EVALSUITE_DATA_DIR, the download cache, the package)."""
    from evalsuite.tasks.download import data_dirs
    from evalsuite.tasks.loader import locate_split
    from evalsuite.tasks.registry import list_tasks

    places = data_dirs(data_dir)
    records = [locate_split(task, task.eval_split, data_dir) for task in list_tasks()]
    if as_json:
        echo_json({"searched": [{"label": p.label, "path": str(p.path)} for p in places], "splits": records})
        return
    table = Table(title="evalsuite data status")
    for column in ("task", "split", "rows", "found in", "file", "from"):
        table.add_column(column, justify="right" if column == "rows" else "left")
    for r in records:
        table.add_row(
            r["task"],
            r["split"],
            str(r["rows"] if r["rows"] is not None else "-"),
            r["found_in"],
            r["path"] or "-",
            r["origin"],
        )
    print_table(table)
    searched = (
        ", ".join(f"{p.label} {p.path}" for p in places)
        or "no data folder (set --data-dir or $EVALSUITE_DATA_DIR, or run `evalsuite data download`)"
    )
    typer.echo(f"searched: {searched}", err=True)


data_app.command("download")(download_command)
data_app.command("status")(status_command)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
