"""`evalsuite score`: rescore run directories and FlashRAG / Search-R1 result files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from evalsuite.console import echo_json, escape, out_console, print_table, progress
from evalsuite.errors import EvalsuiteError


@dataclass
class ScoredInput:
    name: str
    out_dir: Path
    # None for run directories: they carry no scores recorded by another pipeline to check against.
    differences: list[str] | None


def _unique_name(path: Path, taken: set[str]) -> str:
    name = path.stem if path.is_file() else path.name
    candidate, counter = name, 2
    while candidate in taken:
        candidate, counter = f"{name}-{counter}", counter + 1
    taken.add(candidate)
    return candidate


def _score_result_file(path: Path, out_dir: Path, task: str | None) -> list[str]:
    from evalsuite.runs import Manifest, RunDirectory, summarize
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.runs.flashrag import compare_with_recorded, records_from_result_file
    from evalsuite.runs.provenance import base_manifest_fields
    from evalsuite.scoring import score_record
    from evalsuite.files import file_sha256
    from evalsuite.tasks.subset import ids_hash

    task_name, records, recorded = records_from_result_file(path, task)
    for record in records:
        record.metrics = score_record(record)
    process = add_process_metrics(records)
    run = RunDirectory(out_dir)
    manifest = Manifest(
        kind="import",
        tasks=[task_name],
        splits={task_name: records[0].split if records else ""},
        subset=f"ids:{len(records)}",
        subset_ids_hash={task_name: ids_hash([r.id for r in records])},
        source={"format": "flashrag-intermediate", "path": str(path.resolve()), "sha256": file_sha256(path), "n": len(records)},
        notes="Imported from a FlashRAG/Search-R1 result file; the trajectories were generated elsewhere and rescored here.",
        **base_manifest_fields(),
    )
    run.write_manifest(manifest)
    with run.writer(fresh=True) as writer:
        writer.extend(records)
    run.write_metrics(_with_process(summarize(records), process))
    return compare_with_recorded(records, recorded)


def _rescore_run(path: Path, out_dir: Path) -> None:
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.runs import RunDirectory, summarize
    from evalsuite.runs.provenance import now_iso
    from evalsuite.scoring import score_record

    source = RunDirectory(path)
    manifest = source.read_manifest()
    records = source.read_predictions()
    for record in records:
        if record.status == "ok":
            record.metrics = score_record(record)
    process = add_process_metrics(records)
    target = RunDirectory(out_dir)
    if target.path.resolve() != source.path.resolve():
        manifest_extra = manifest.model_copy(update={"rescored_from": str(path.resolve()), "rescored_at": now_iso()})
        target.write_manifest(manifest_extra)
        with target.writer(fresh=True) as writer:
            writer.extend(records)
    target.write_metrics(_with_process(summarize(records), process))


def _with_process(metrics, process: dict):
    """metrics.json with the rule-based process metrics (novelty, Search Efficiency, turn statistics) in `extra`."""
    metrics.extra["process"] = process
    return metrics


def _summary_table(scored: list[ScoredInput]) -> Table:
    from evalsuite.runs import RunDirectory

    table = Table(title="evalsuite score")
    for column in ("input", "task", "n", "EM", "cover-EM", "F1", "retrieval hit", "searches/q", "answer-tag rate"):
        table.add_column(column, justify="left" if column in ("input", "task") else "right")
    for item in scored:
        metrics = RunDirectory(item.out_dir).read_metrics()
        for task, summary in metrics.tasks.items():
            m = summary.metrics

            def cell(name: str, digits: int = 3) -> str:
                if name not in m:
                    return "-"
                s = m[name]
                return f"{s.mean:.{digits}f}"

            em = m.get("em")
            em_cell = f"{em.mean:.3f} [{em.ci_low:.3f}, {em.ci_high:.3f}]" if em else "-"
            table.add_row(item.name, task, str(summary.n), em_cell, cell("cover_em"), cell("f1"), cell("retrieval_hit"), cell("n_searches", 2), cell("has_answer"))
    return table


def _process_table(scored: list[ScoredInput]) -> Table:
    """Search behaviour: SmartSearch novelty and Search Efficiency, Search-P1 turns of successful vs failed trajectories."""
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
            gap = "-" if t["gap_searches"] is None else f"{t['gap_searches']:+.2f} ({num(None if relative is None else 100 * relative, 0)}%)"
            table.add_row(
                item.name, task, num(p["novelty_rate"]), num(p["search_efficiency"]),
                f"{num(t['success']['mean_turns'], 2)}/{num(t['failure']['mean_turns'], 2)}",
                f"{num(t['success']['mean_searches'], 2)}/{num(t['failure']['mean_searches'], 2)}", gap,
            )
    return table


def score_command(
    inputs: list[Path] = typer.Argument(..., help="Run directories and/or FlashRAG result files (*.json).", exists=True),
    output: Path = typer.Option(..., "-o", "--output", help="Directory that receives one run directory per input."),
    task: Optional[str] = typer.Option(None, "--task", help="Task of the result files (default: inferred from each file name)."),
    check_recorded: bool = typer.Option(False, "--check-recorded", help="Fail if any prediction or em/acc/f1 differs from the one recorded in the file."),
    show: int = typer.Option(10, "--show-differences", help="How many differences to list per input."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: each input's run directory, metrics and differences."),
) -> None:
    """Rescore run directories and FlashRAG / Search-R1 result files; write a run directory per input."""
    taken: set[str] = set()
    scored: list[ScoredInput] = []
    with progress() as bars:
        bar = bars.add_task("score", total=len(inputs))
        for path in inputs:
            name = _unique_name(path, taken)
            out_dir = output / name
            if path.is_dir():
                differences = _rescore_run(path, out_dir)
            elif path.suffix == ".json":
                differences = _score_result_file(path, out_dir, task)
            else:
                raise EvalsuiteError(f"{path}: not a run directory or a FlashRAG result file (.json)")
            scored.append(ScoredInput(name, out_dir, differences))
            bars.advance(bar)
    failed = [item for item in scored if item.differences] if check_recorded else []
    if as_json:
        from evalsuite.runs import RunDirectory

        echo_json({"inputs": [{"name": item.name, "run_directory": str(item.out_dir),
                               "metrics": RunDirectory(item.out_dir).read_metrics().model_dump(mode="json"),
                               "differences": item.differences} for item in scored]})
    else:
        _print_scored(scored, output, check_recorded, show)
    if failed:
        raise typer.Exit(1)


def _print_scored(scored: list[ScoredInput], output: Path, check_recorded: bool, show: int) -> None:
    print_table(_summary_table(scored))
    print_table(_process_table(scored))
    console = out_console(markup=True)
    console.print(f"run directories written under {escape(str(output))}")
    if not check_recorded:
        return
    for item in scored:
        if item.differences is None:
            console.print(f"[yellow]-[/] {escape(item.name)}: a run directory; no recorded scores from another pipeline to check")
        elif not item.differences:
            console.print(f"[green]✓[/] {escape(item.name)}: every recorded prediction and em/acc/f1 reproduced")
    for item in scored:
        if item.differences:
            console.print(f"[red]✗[/] {escape(item.name)}: {len(item.differences)} differences from the recorded scores; first {min(show, len(item.differences))}:")
            for line in item.differences[:show]:
                console.print(f"    {escape(line)}")


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)
