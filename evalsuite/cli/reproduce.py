"""`evalsuite reproduce METHOD --config NAME -o DIR`: train the recipe, evaluate base and checkpoint on the same
questions, tabulate them beside the paper with paired tests, and pack a leaderboard submission (evalsuite.reproduce)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from evalsuite.console import echo_json, err_console, out_console
from evalsuite.errors import EvalsuiteError

if TYPE_CHECKING:
    from rich.console import Console

    from evalsuite.reproduce import Requirement, StagePlan


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
    dry_run_only: bool = typer.Option(
        False,
        "--dry-run",
        help="Check each stage's requirements (extras, model, data, retriever, disk) and print the plan: commands,"
        " outputs and a time estimate (--json: as one object); run nothing.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the stages' summary (with --dry-run: the plan) as one JSON object."
    ),
) -> None:
    """Reproduce METHOD end to end: train -> eval-base -> eval-trained -> table -> submission; finished stages with
    unchanged inputs are skipped, stopped ones resume, changed ones are refused unless --rerun."""
    from evalsuite.reproduce import dry_run, missing_requirements, plan, plan_json, run

    repro = plan(method, config, out, rerun=rerun, rerun_from=rerun_from)
    plans = dry_run(repro)
    missing = missing_requirements(plans)
    err = err_console()
    if dry_run_only:
        if as_json:
            echo_json(plan_json(repro, plans))
        else:
            print_plan(plans, out_console())
        if missing:
            _refuse(missing)
        return
    for stage in plans:
        err.print(f"plan: {stage.name}: {stage.action}{f' ({stage.why})' if stage.why else ''}", markup=False)
    if missing:  # said now, before the first long stage spends minutes and gigabytes
        _refuse(missing)
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


def print_plan(plans: list[StagePlan], console: Console) -> None:
    """The plan as text: per stage its action, what it does, the command, its output, its time and requirements."""
    from evalsuite.reproduce import ESTIMATE_SOURCE

    for stage in plans:
        why = f" ({stage.why})" if stage.why else ""
        console.print(f"plan: {stage.name}: {stage.action}{why}: {stage.does}", markup=False, highlight=False)
        if stage.command and stage.action != "skip":
            console.print(f"  command:  {stage.command}", markup=False, highlight=False)
        console.print(f"  output:   {stage.output}", markup=False, highlight=False)
        console.print(f"  time:     {_duration(stage.estimate_s)}", markup=False, highlight=False)
        for need in stage.requirements:
            mark = "ok     " if need.ok else "MISSING"
            hint = "" if need.ok or not need.hint else f" (hint: {need.hint})"
            console.print(f"  {mark}   {need.what}: {need.detail}{hint}", markup=False, highlight=False)
    known = [p.estimate_s for p in plans if p.estimate_s is not None]
    total = _duration(sum(known)) if len(known) == len(plans) else "unknown (no measured rate for this device)"
    console.print(f"total time: {total}; estimates from {ESTIMATE_SOURCE}", markup=False, highlight=False)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (no measured rate for a GPU; docs/recipes/reproduce.md has H200 estimates)"
    if seconds < 60:
        return f"about {seconds:.0f} s"
    return f"about {seconds / 60:.0f} min" if seconds < 5400 else f"about {seconds / 3600:.1f} h"


def _refuse(missing: list[tuple[str, Requirement]]) -> None:
    first_stage, first = missing[0]
    listed = "; ".join(f"{stage}: {need.what} ({need.detail})" for stage, need in missing)
    raise EvalsuiteError(
        f"{len(missing)} requirement(s) of the reproduction missing: {listed}", hint=first.hint or None
    )


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce_command)
