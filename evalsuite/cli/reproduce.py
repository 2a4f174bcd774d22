"""`evalsuite reproduce METHOD --config NAME -o DIR`: train the recipe, evaluate base and checkpoint on the same
questions, tabulate them beside the paper with paired tests, and pack a leaderboard submission (evalsuite.reproduce)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from evalsuite.console import echo_json, err_console, out_console


def reproduce_command(
    method: str = typer.Argument(..., help="The recipe (evalsuite train --list)."),
    config: Path = typer.Option(
        ...,
        "--config",
        "-c",
        help="Recipe YAML with a reproduce: section, or a shipped config by name (cpu_learn, gpu).",
    ),
    out: Path = typer.Option(
        ...,
        "--output",
        "-o",
        help="Reproduction directory: one folder per stage (train, eval-base, eval-trained, table, submission).",
    ),
    rerun: bool = typer.Option(
        False, "--rerun", help="Re-run the stages whose inputs changed since they were written (default: refuse)."
    ),
    rerun_from: Optional[str] = typer.Option(
        None,
        "--from",
        help="Re-run this stage and every stage after it: train, eval-base, eval-trained, table or submission.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Check the config, the data and the existing stages, print what each stage would do, run nothing.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the stages' summary as one JSON object."),
) -> None:
    """Reproduce METHOD end to end: train -> eval-base -> eval-trained -> table -> submission; finished stages with
    unchanged inputs are skipped, stopped ones resume, changed ones are refused unless --rerun."""
    from evalsuite.reproduce import plan, run

    repro = plan(method, config, out, rerun=rerun, rerun_from=rerun_from)
    err = err_console()
    for stage in repro.stages.values():
        verb = {"skip": "skip", "resume": "resume", "run": "run"}[stage.action]
        err.print(f"plan: {stage.name}: {verb}{f' ({stage.why})' if stage.why else ''}", markup=False, highlight=False)
    if dry_run:
        return
    summary = run(repro, say=lambda line: err.print(line, markup=False, highlight=False))
    if as_json:
        echo_json(summary)
        return
    console = out_console()
    table = summary["table"]
    console.print(f"table: {table.get('table')}", markup=False)
    for diff in table.get("differences", []):
        console.print(
            f"  {table.get('headline')} {diff['task']}: {diff['system']} - base = "
            f"{diff['difference']:+.3f} [{diff['ci_low']:+.3f}, {diff['ci_high']:+.3f}], "
            f"p = {diff['p_value']:.4g} ({diff['test']}, n = {diff['n']})",
            markup=False,
        )
    submission = summary["submission"]
    console.print(
        f"submission: {submission.get('submission')} (leaderboard "
        f"verification: {submission.get('leaderboard', 'not recorded')})",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce_command)
