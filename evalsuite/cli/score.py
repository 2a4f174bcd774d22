"""`evalsuite score`: rescore run directories and FlashRAG / Search-R1 result files."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from evalsuite.console import echo_json, escape, out_console, print_table, progress

if TYPE_CHECKING:
    from rich.console import Console

    from evalsuite.rescoring import ScoredInput
    from evalsuite.runs.recorded import CheckTally

# `evalsuite score --check-recorded` exit statuses (docs/metrics.md): 0 every recorded value compared was reproduced,
# 1 a recorded value differs, 2 bad input (evalsuite.errors), 3 an input recorded nothing to compare.
EXIT_DIFFERS = 1
EXIT_NOTHING_TO_CHECK = 3


def _summary_table(scored: list[ScoredInput]) -> Table:
    from evalsuite.runs import RunDirectory

    from evalsuite.cli.run import metric_cells, metric_headers

    table = Table(title="evalsuite score")
    for column in ("input", "task", "n", *metric_headers()):
        table.add_column(column, justify="left" if column in ("input", "task") else "right")
    for item in scored:
        metrics = RunDirectory(item.out_dir).read_metrics()
        for task, summary in metrics.tasks.items():
            cells = ["—" if cell == "-" else cell for cell in metric_cells(summary.metrics)]  # not computed, not 0
            table.add_row(item.name, task, str(summary.n), *cells)
    return table


def _metrics_json(out_dir: Path) -> dict:
    """metrics.json as JSON, every summary metric a task was not scored on written as null (not computed, never 0)."""
    from evalsuite.metrics.registry import summary_metrics
    from evalsuite.runs import RunDirectory

    dumped = RunDirectory(out_dir).read_metrics().model_dump(mode="json")
    for summary in dumped.get("tasks", {}).values():
        for spec in summary_metrics():
            summary["metrics"].setdefault(spec.name, None)
    return dumped


def _process_table(scored: list[ScoredInput]) -> Table:
    """Search behaviour: SmartSearch novelty and Search Efficiency,
    Search-P1 turns of successful vs failed trajectories."""
    from evalsuite.runs import RunDirectory

    table = Table(title="search process (rule-based)")
    for column in ("input", "task", "novel rounds", "search eff.", "turns ok/fail", "searches ok/fail", "search gap"):
        table.add_column(column, justify="left" if column in ("input", "task") else "right")

    def num(value: float | None, digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for item in scored:
        process = RunDirectory(item.out_dir).read_metrics().extra.get("process", {})
        for task, p in process.get("tasks", {}).items():
            t = p["turns"]
            relative = t["relative_gap_searches"]
            gap = (
                "-"
                if t["gap_searches"] is None
                else f"{t['gap_searches']:+.2f} ({num(None if relative is None else 100 * relative, 0)}%)"
            )
            table.add_row(
                item.name,
                task,
                num(p["novelty_rate"]),
                num(p["search_efficiency"]),
                f"{num(t['success']['mean_turns'], 2)}/{num(t['failure']['mean_turns'], 2)}",
                f"{num(t['success']['mean_searches'], 2)}/{num(t['failure']['mean_searches'], 2)}",
                gap,
            )
    return table


def score_command(
    inputs: list[Path] = typer.Argument(
        ...,
        help="Run directories, FlashRAG/Search-R1 result files (JSON list or .jsonl) and FlashRAG run folders.",
        exists=True,
    ),
    output: Path = typer.Option(..., "-o", "--output", help="Directory that receives one run directory per input."),
    task: Optional[str] = typer.Option(
        None,
        "--task",
        help=(
            "Task of the result files, by name or as a task declaration "
            "FILE.yaml (default: config.yaml's dataset_name, else the file name)."
        ),
    ),
    method: Optional[str] = typer.Option(
        None,
        "--method",
        help=(
            "Protocol the result files' responses follow (see `evalsuite "
            "methods`); default: the task's own, else search-r1."
        ),
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help=(
            "Benchmark files to check that every question belongs to the "
            "task (default: $EVALSUITE_DATA_DIR; unset: not checked)."
        ),
    ),
    check_recorded: bool = typer.Option(
        False,
        "--check-recorded",
        help=(
            "Check every recorded prediction (against its trajectory where the file holds one), per-item score and "
            "metric_score.txt average: each reproduced, differs (naming the convention that explains it) or nothing "
            "recorded to check. Exit 0 all compared reproduced, 1 something differs, 3 an input recorded nothing to "
            "compare (2: bad input)."
        ),
    ),
    show: int = typer.Option(10, "--show-differences", help="How many differences to list per input."),
    metrics: Optional[str] = typer.Option(
        None,
        "--metrics",
        help="Comma-separated registered metrics to score (default: each task's own, see docs/metrics.md).",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object: each input's run directory, metrics and differences."
    ),
    pipeline: Optional[str] = typer.Option(
        None,
        "--pipeline",
        help=(
            "Writer of the result files (a FlashRAG pipeline such as sequential, ircot, reasoning, or a family "
            "eval script; default: recognised from config.yaml's save_note, else from the records' keys)."
        ),
    ),
    fields: Optional[str] = typer.Option(
        None,
        "--fields",
        help=(
            "Read any JSON/JSONL of results by dotted paths into each record: KEY=PATH pairs joined by commas, "
            "keys prediction, response, golds, id, question (e.g. prediction=output.pred, golds=golden_answers)."
        ),
    ),
) -> None:
    """Rescore run directories and FlashRAG / Search-R1 result files; write a run directory per input."""
    from evalsuite.rescoring import chosen_metrics, refuse_output_inside_an_input, score_input, unique_name

    chosen = chosen_metrics(metrics)
    refuse_output_inside_an_input(output, inputs)
    taken: set[str] = set()
    scored: list[ScoredInput] = []
    with progress() as bars:
        bar = bars.add_task("score", total=len(inputs))
        for path in inputs:
            out_dir = output / unique_name(path, taken)
            scored.append(score_input(path, out_dir, task, method, data_dir, chosen, pipeline, fields))
            bars.advance(bar)
    if as_json:
        echo_json(
            {
                "inputs": [
                    {
                        "name": item.name,
                        "run_directory": str(item.out_dir),
                        "metrics": _metrics_json(item.out_dir),
                        "layout": item.layout,
                        "check": None if item.tally is None else _tally_json(item.tally),
                        "recorded_metrics": [dataclasses.asdict(c) for c in item.metric_checks],
                        "differences": None
                        if item.differences is None
                        else [dataclasses.asdict(d) for d in item.differences],
                    }
                    for item in scored
                ]
            }
        )
    else:
        print_table(_summary_table(scored))
        print_table(_process_table(scored))
        console = out_console(markup=True)
        console.print(f"run directories written under {escape(str(output))}")
        from evalsuite.cli.view import view_command_line

        console.print(f"see every example: {escape(view_command_line(*(item.out_dir for item in scored[:2])))}")
        _print_task_data_differences(console, scored, show)
        if check_recorded:
            _print_check(console, scored, show)
    if check_recorded and any(item.differences for item in scored):
        raise typer.Exit(EXIT_DIFFERS)
    if check_recorded and any(item.tally is None or not item.tally.compared for item in scored):
        raise typer.Exit(EXIT_NOTHING_TO_CHECK)


def _tally_json(tally: CheckTally) -> dict:
    return {
        "items": tally.items,
        "reproduced": {"predictions": tally.predictions[0], "scores": tally.scores[0], "averages": tally.averages[0]},
        "differs": {"predictions": tally.predictions[1], "scores": tally.scores[1], "averages": tally.averages[1]},
        "differs_from_task_data": tally.registry_differences,
        "nothing_recorded_to_check": tally.unchecked_items,
        "predictions_not_checked": tally.unchecked_predictions,
    }


def _print_task_data_differences(console: "Console", scored: list[ScoredInput], show: int) -> None:
    """Golds and questions that differ from the task data (--data-dir): always reported, per item."""
    from evalsuite.runs.flashrag import TASK_DATA_DIFFERENCES

    for item in scored:
        found = [d for d in item.differences or [] if d.what in TASK_DATA_DIFFERENCES]
        if not found:
            continue
        console.print(
            f"[red]![/] {escape(item.name)}: {len(found)} gold answers or questions differ from the task data; "
            "the task data's are scored:"
        )
        for difference in found[:show]:
            console.print(f"    {escape(difference.line())}", highlight=False, soft_wrap=True)


def _print_check(console: "Console", scored: list[ScoredInput], show: int) -> None:
    """Per input, the three states: what was reproduced (✓ only where something was compared), what differs (how
    many each known convention explains, and the first `show`), and what recorded nothing to check."""
    for item in scored:
        name = escape(item.name)
        if item.tally is None:
            console.print(f"[yellow]-[/] {name}: a run directory; nothing recorded by another pipeline to check")
            continue
        tally = item.tally
        if not tally.compared:
            mark = "[yellow]-[/]"
        elif item.differences:
            mark = "[red]✗[/]"
        else:
            mark = "[green]✓[/]"
        console.print(f"{mark} {name} ({escape(item.layout or '')}): {'; '.join(tally.lines())}", highlight=False)
        if item.metric_checks:
            console.print(f"  {name}: every metric and judgment it recorded:")
            for check in item.metric_checks:
                console.print(f"    {escape(check.line())}", highlight=False, soft_wrap=True)
    for item in scored:
        if not item.differences:
            continue
        explained = Counter(d.explanation or "no known convention explains it" for d in item.differences)
        console.print(
            f"[red]✗[/] {escape(item.name)}: {len(item.differences)} "
            "differences from the recorded values, by explanation:"
        )
        for why, count in explained.most_common():
            console.print(f"    {count} × {escape(why)}", highlight=False)
        console.print(f"  first {min(show, len(item.differences))}:")
        for difference in item.differences[:show]:
            console.print(f"    {escape(difference.line())}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
