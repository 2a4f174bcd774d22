"""`evalsuite teacher-queries`: essential search queries per question, from gold decompositions or a teacher model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

import typer
from evalsuite.console import out_console

from evalsuite.errors import EvalsuiteError


def teacher_queries_command(
    task: str = typer.Option(..., "--task", help="Task name, e.g. musique."),
    split: Optional[str] = typer.Option(None, "--split", help="Split (default: the task's eval split)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Directory of <task>.<split>.jsonl files."),
    judge: Optional[Path] = typer.Option(
        None, "--panel", help="Panel YAML whose judge acts as the teacher (omit with --from-data)."
    ),
    judge_name: Optional[str] = typer.Option(
        None, "--judge-name", help="Which judge of the panel (default: the first)."
    ),
    from_data: bool = typer.Option(
        False, "--from-data", help="Use the rows' gold decompositions (MuSiQue, AD-QA) instead of a model."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N rows."),
    cache: Optional[Path] = typer.Option(
        None, "--cache", help="SQLite cache (default: the panel's, else ~/.cache/evalsuite/judges.sqlite)."
    ),
    out: Optional[Path] = typer.Option(
        None,
        "-o",
        "--output",
        help="Output JSONL (default: beside the task data, <task>.<split>.teacher.<source>.jsonl).",
    ),
) -> None:
    """Write teacher queries for a task split as JSONL {id,
    question, teacher_queries, source}; model replies are cached."""
    from evalsuite.judges import prompts
    from evalsuite.judges.config import load_panel
    from evalsuite.judges.evaluate import default_cache_path
    from evalsuite.judges.panel import Panel
    from evalsuite.judges.teacher import write_teacher_file
    from evalsuite.judges.verdict import parse_query_list
    from evalsuite.metrics.coverage import teacher_queries_from_metadata
    from evalsuite.tasks import load_split
    from evalsuite.tasks.loader import resolve_data_dir

    if from_data == (judge is not None):
        raise EvalsuiteError("give exactly one of --from-data and --panel PANEL.yaml")
    loaded = load_split(task, split, data_dir)
    rows = loaded.rows[:limit] if limit is not None else loaded.rows
    output: list[dict] = []
    if from_data:
        source = "data"
        for row in rows:
            found = teacher_queries_from_metadata(row.metadata)
            output.append(
                {
                    "id": row.id,
                    "question": row.question,
                    "teacher_queries": found[0] if found else [],
                    "source": found[1] if found else None,
                    "error": None if found else "no gold decomposition in metadata",
                }
            )
    else:
        assert judge is not None  # checked above: exactly one of --from-data and --panel
        panel_config = load_panel(judge)
        chosen = next((j for j in panel_config.judges if judge_name in (None, j.name)), None)
        if chosen is None:
            raise EvalsuiteError(
                f"{judge}: no judge named {judge_name!r}", hint=f"choose from {[j.name for j in panel_config.judges]}"
            )
        source = chosen.model.replace("/", "_")
        panel = Panel(panel_config, cache or panel_config.cache or default_cache_path())
        try:
            texts = asyncio.run(
                panel.ask_texts(prompts.TEACHER_QUERIES, [{"question": r.question} for r in rows], judge=chosen.name)
            )
        finally:
            panel.close()
        for row, text in zip(rows, texts):
            queries, error = parse_query_list(text) if text is not None else ([], "no reply after all retries")
            output.append(
                {
                    "id": row.id,
                    "question": row.question,
                    "teacher_queries": queries,
                    "source": f"teacher:{chosen.model}",
                    "template_hash": prompts.TEACHER_QUERIES.hash,
                    "error": error,
                }
            )
    if out is None:
        directory = resolve_data_dir(data_dir)
        if directory is None:
            raise EvalsuiteError("no --output given and no data directory to write beside", hint="pass -o FILE")
        out = directory / f"{task}.{loaded.split}.teacher.{source}.jsonl"
    write_teacher_file(out, output)
    failed = sum(1 for row in output if row["error"])
    out_console().print(f"{len(output)} rows, {failed} without teacher queries, written to {out}")


def register(app: typer.Typer) -> None:
    app.command("teacher-queries")(teacher_queries_command)
