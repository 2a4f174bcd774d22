"""`evalsuite lmeval export`: lm-evaluation-harness task YAMLs for our tasks, prompts and metrics (offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from evalsuite.console import out_console

lmeval_app = typer.Typer(help="Interoperate with lm-evaluation-harness.", no_args_is_help=True)


@lmeval_app.command("export")
def export_command(
    out: Path = typer.Option(
        ..., "--output", "-o", help="Directory for the task YAMLs (pass it to lm_eval --include_path)."
    ),
    tasks: Optional[str] = typer.Option(
        None,
        "--tasks",
        "-t",
        help="Comma-separated tasks (names or task declaration FILE.yaml).",
        show_default="every registered task (`evalsuite tasks`)",
    ),
    settings: str = typer.Option(
        "direct,naive-rag", "--settings", help="direct and/or naive-rag (precomputed passages)."
    ),
    retriever: Optional[str] = typer.Option(
        None, "--retriever", "-r", help="Index directory or URL for naive-rag's passages."
    ),
    topk: int = typer.Option(3, "--topk", help="Passages per question for naive-rag."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Directory of <task>.<split>.jsonl files."),
    split: Optional[str] = typer.Option(None, "--split", help="Split (default: each task's eval split)."),
    subset: Optional[str] = typer.Option(None, "--subset", help="full (default) | first:N | sample:N:SEED."),
    limit: Optional[int] = typer.Option(
        None, "--limit", min=1, help="Only the first N rows of each task: short for --subset first:N."
    ),
    max_gen_toks: int = typer.Option(32, "--max-tokens", help="Generated tokens per answer (lm-eval's max_gen_toks)."),
) -> None:
    """Write lm-eval tasks `evalsuite_<task>_<setting>` (and groups `evalsuite_<task>`) with local data files."""
    from evalsuite.cli._options import subset_with_limit
    from evalsuite.lmeval_export import export_tasks

    loaded = None
    if retriever is not None:
        from evalsuite.retrieval import load_retriever

        loaded = load_retriever(retriever)
    written = export_tasks(
        out,
        [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None,
        [s.strip() for s in settings.split(",") if s.strip()],
        data_dir=data_dir,
        split=split,
        subset=subset_with_limit(subset, limit) or "full",
        retriever=loaded,
        topk=topk,
        max_gen_toks=max_gen_toks,
    )
    console = out_console()
    for task in written:
        console.print(f"{task.name}: {task.rows} rows → {task.yaml}")
    console.print(
        f"run: lm_eval --include_path {out} --tasks "
        f"{written[0].name if written else 'evalsuite_nq'} --model hf --model_args pretrained=MODEL"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(lmeval_app, name="lmeval")
