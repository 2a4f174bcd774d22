"""`evalsuite score`: rescore run directories and FlashRAG / Search-R1 result files."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from evalsuite.console import echo_json, escape, out_console, print_table, progress
from evalsuite.errors import EvalsuiteError

if TYPE_CHECKING:
    from rich.console import Console

    from evalsuite.runs.flashrag import Difference
    from evalsuite.runs.recorded import CheckTally, MetricCheck

# `evalsuite score --check-recorded` exit statuses (docs/metrics.md): 0 every recorded value compared was reproduced,
# 1 a recorded value differs, 2 bad input (evalsuite.errors), 3 an input recorded nothing to compare.
EXIT_DIFFERS = 1
EXIT_NOTHING_TO_CHECK = 3


@dataclass
class ScoredInput:
    name: str
    out_dir: Path
    # None for run directories: they carry no scores recorded by another pipeline to check against.
    differences: list[Difference] | None
    checked_averages: bool = False
    layout: str | None = None  # the writer whose layout was read (evalsuite.runs.writer_layouts)
    metric_checks: list[MetricCheck] = dataclasses.field(default_factory=list)
    tally: CheckTally | None = None  # None for run directories


def _unique_name(path: Path, taken: set[str]) -> str:
    if path.name == "intermediate_data.json":
        path = path.parent
    name = path.stem if path.is_file() else path.name
    candidate, counter = name, 2
    while candidate in taken:
        candidate, counter = f"{name}-{counter}", counter + 1
    taken.add(candidate)
    return candidate


def _score_result_file(
    path: Path,
    out_dir: Path,
    task: str | None,
    method: str | None,
    data_dir: Path | None,
    metrics: list[str] | None = None,
    pipeline: str | None = None,
    fields: str | None = None,
) -> ScoredInput:
    """Score a result file or FlashRAG run folder into a run directory: its differences from what it recorded, whether
    it had averages (metric_score.txt) to check, and what became of each metric it recorded."""
    from evalsuite.agent.method import get_method
    from evalsuite.files import file_sha256
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.provenance import provenance_fields
    from evalsuite.runs import Manifest, RunDirectory
    from evalsuite.runs.flashrag import (
        check_against_task_data,
        compare_averages,
        compare_with_recorded,
        infer_task,
        read_result_source,
        records_from_source,
        resolve_layout,
        retrieval_recorded,
    )
    from evalsuite.runs.recorded import check_recorded_metrics, tally_checks
    from evalsuite.scoring import score_imported
    from evalsuite.tasks.loader import resolve_data_dir
    from evalsuite.tasks.registry import default_method, get_task, resolve_task
    from evalsuite.tasks.subset import ids_hash

    source = read_result_source(path)
    # The task's own default method applies when --method is not given.
    task_name = resolve_task(task).name if task else infer_task(source.path, source.config)
    method_given = method is not None
    method = method or default_method([get_task(task_name)], "search-r1")
    layout = resolve_layout(source, pipeline, fields)
    # A layout that names its protocol (R1-Searcher's eval script) is parsed with it unless --method says otherwise.
    parser_of = None if method_given else (lambda name: get_method(name).parse)
    task_name, records, recorded = records_from_source(source, task_name, get_method(method).parse, layout, parser_of)
    directory = resolve_data_dir(data_dir)
    # golds and questions checked against the task data before scoring: a differing gold is listed and replaced
    registry = check_against_task_data(source, records, task_name, directory) if directory is not None else []
    for record, original, retrieval in zip(records, recorded, retrieval_recorded(layout, records, recorded)):
        record.metrics = score_imported(record, original.retrieved, retrieval, metrics)
    add_process_metrics(records)
    run = RunDirectory(out_dir)
    data_file = source.data_file
    manifest = Manifest(
        kind="import",
        tasks=[task_name],
        splits={task_name: (records[0].split or "") if records else ""},
        subset=f"ids:{len(records)}",
        subset_ids_hash={task_name: ids_hash([r.id for r in records])},
        method=method,
        source={
            "format": f"flashrag-{source.layout}",
            "layout": layout.name,
            "writer": layout.writer,
            "path": str(path.resolve()),
            "sha256": file_sha256(data_file),
            "n": len(records),
        },
        notes=(
            "Imported from a FlashRAG/Search-R1 result file; the "
            "trajectories were generated elsewhere and rescored here."
        ),
        **provenance_fields(),
    )
    run.write(manifest, records)
    differences = registry + compare_with_recorded(records, recorded) + compare_averages(source, records, recorded)
    return ScoredInput(
        out_dir.name,
        out_dir,
        differences,
        source.metric_file is not None,
        layout.name,
        check_recorded_metrics(source, records, recorded, differences),
        tally_checks(source, records, recorded, differences),
    )


def _rescore_run(path: Path, out_dir: Path, metrics: list[str] | None = None) -> None:
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.metrics.termination import RUN_METRICS
    from evalsuite.provenance import now_iso
    from evalsuite.runs import RunDirectory
    from evalsuite.scoring import score_record

    source = RunDirectory(path)
    manifest = source.read_manifest()
    records = source.read_predictions()
    run_metrics = RUN_METRICS if metrics is None and manifest.kind == "run" else ()
    for record in records:
        if record.status == "ok":
            record.metrics = score_record(record, metrics)
            if run_metrics:  # a run's records keep its termination and cost columns (before, rescoring dropped them)
                record.metrics.update(score_record(record, run_metrics))
    add_process_metrics(records)
    target = RunDirectory(out_dir)
    if target.path.resolve() != source.path.resolve():
        manifest = manifest.model_copy(update={"rescored_from": str(path.resolve()), "rescored_at": now_iso()})
    # the rescored records replace the old ones in place too (before, predictions.jsonl kept the old scores while
    # metrics.json and the cached columns had the new); a run that had not finished is still unfinished
    target.write(manifest, records, complete=manifest.finished_at is not None or manifest.kind == "import")


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
    from evalsuite.runs.flashrag import CONFIG_FILE, METRIC_SCORE_FILE, is_flashrag_run, missing_intermediate_data
    from evalsuite.runs.schema import MANIFEST_FILE

    chosen = None
    if metrics is not None:
        from evalsuite.metrics.registry import get_metric

        chosen = [get_metric(name.strip()).name for name in metrics.split(",") if name.strip()]
        if not chosen:
            raise EvalsuiteError(
                "--metrics names no metric", hint="pass e.g. --metrics em,f1 (docs/metrics.md lists them)"
            )
    _refuse_output_inside_an_input(output, inputs)
    taken: set[str] = set()
    scored: list[ScoredInput] = []
    with progress() as bars:
        bar = bars.add_task("score", total=len(inputs))
        for path in inputs:
            name = _unique_name(path, taken)
            out_dir = output / name
            if path.is_dir() and (path / MANIFEST_FILE).is_file():
                _rescore_run(path, out_dir, chosen)
                scored.append(ScoredInput(name, out_dir, None))
            elif is_flashrag_run(path) or (path.is_file() and path.suffix in (".json", ".jsonl")):
                scored.append(_score_result_file(path, out_dir, task, method, data_dir, chosen, pipeline, fields))
            elif path.is_dir() and any((path / name).is_file() for name in (METRIC_SCORE_FILE, CONFIG_FILE)):
                raise missing_intermediate_data(path)  # a FlashRAG run folder whose items are missing
            else:
                raise EvalsuiteError(
                    f"{path}: unknown layout: not a run directory (manifest.json), a FlashRAG "
                    "run folder (intermediate_data.json) or a result file (.json, .jsonl)",
                    hint="pass run directories, result files or FlashRAG run folders",
                )
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


def _refuse_output_inside_an_input(output: Path, inputs: list[Path]) -> None:
    """-o is the folder that receives one run directory per input: never an input itself, nor inside one (a run
    directory would be written into the run it was read from). Rescoring in place is `-o` the input's parent."""
    target = output.resolve()
    for path in inputs:
        source = path.resolve()
        if target == source or (path.is_dir() and target.is_relative_to(source)):
            raise EvalsuiteError(
                f"-o {output} is the input {path}"
                + ("" if target == source else " or inside it")
                + ": score writes one run directory per input under -o",
                hint=f"choose another -o folder (-o {path.parent} rescores the run in place)",
            )


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
