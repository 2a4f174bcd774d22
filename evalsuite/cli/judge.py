"""`evalsuite judge`: add panel judgments (completeness,
granularity, coverage, usefulness, accuracy) to a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from evalsuite.console import out_console, print_table
from rich.table import Table

from evalsuite.errors import EvalsuiteError


def _fmt(value: object) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _results_table(results: dict) -> Table:
    table = Table(title="evalsuite judge")
    for column in ("task", "metric", "score", "majority", "per judge", "Fleiss κ", "items", "unparseable"):
        table.add_column(column, justify="left" if column in ("task", "metric", "per judge") else "right")
    for task, metrics in results.items():
        for name, r in metrics.items():
            if name == "coverage":
                table.add_row(
                    task,
                    "coverage F1 (P/R)",
                    f"{_fmt(r['f1'])} ({_fmt(r['precision'])}/{_fmt(r['recall'])})",
                    "-",
                    ", ".join(f"{k}={_fmt(v)}" for k, v in r["per_judge_f1"].items()),
                    _fmt(r.get("fleiss_kappa")),
                    str(r["n_examples"]),
                    "-",
                )
                continue
            if name == "accuracy":
                judges = r.get("judges", {})
                table.add_row(
                    task,
                    "acc_judge",
                    _fmt(r["acc_judge"]),
                    "-",
                    ", ".join(f"{k}={_fmt(v)}" for k, v in judges.get("per_judge_rate", {}).items()) or "-",
                    _fmt(judges.get("fleiss_kappa")),
                    str(r["n"]),
                    f"{r['n_undecided']} undecided",
                )
                for other, agree in r["agreement"].items():
                    t = agree["table"]
                    table.add_row(
                        task,
                        f"  vs {other}: Cohen κ {_fmt(agree['kappa'])}",
                        f"yes&1={t['judge_yes_metric_1']} yes&0={t['judge_yes_metric_0']}",
                        f"no&1={t['judge_no_metric_1']} no&0={t['judge_no_metric_0']}",
                        "-",
                        "-",
                        "-",
                        "-",
                    )
                continue
            score = r["usefulness"] if name == "usefulness" else r
            table.add_row(
                task,
                name,
                _fmt(score["score"]),
                _fmt(score["majority"]),
                ", ".join(f"{k}={_fmt(v)}" for k, v in score["per_judge"].items()),
                _fmt(score["fleiss_kappa"]),
                str(score["n_items"]),
                str(score["n_unparseable"]),
            )
            if name == "usefulness":
                table.add_row(
                    task,
                    "perfect / partial rate",
                    f"{_fmt(r['perfect_rate'])} / {_fmt(r['partial_rate'])}",
                    "-",
                    "-",
                    "-",
                    f"{r['n_correct_with_search']}/{r['n_wrong_with_search']}",
                    "-",
                )
    return table


def _usage_table(usage: dict) -> Table:
    table = Table(title="judge usage (this call)")
    for column in (
        "judge",
        "calls",
        "cache hits",
        "requests",
        "retries",
        "failures",
        "prompt tok",
        "completion tok",
        "cost $",
    ):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for name, u in usage.items():
        table.add_row(
            name,
            *(
                str(int(u[k]))
                for k in (
                    "calls",
                    "cache_hits",
                    "requests",
                    "retries",
                    "failures",
                    "prompt_tokens",
                    "completion_tokens",
                )
            ),
            f"{u['cost_usd']:.4f}",
        )
    return table


def judge_command(
    run_dir: Path = typer.Argument(
        ..., help="A scored run directory (from `evalsuite run` or `evalsuite score`).", exists=True, file_okay=False
    ),
    panel: Path = typer.Option(..., "--panel", help="Panel YAML file (see examples/panels/)."),
    metrics: str = typer.Option(
        "completeness,granularity",
        "--metrics",
        help=(
            "Comma-separated: completeness, granularity, coverage, usefulness, accuracy (acc_judge: "
            "the answer judged against the golds, with Cohen's κ against EM and cover-EM)."
        ),
    ),
    cache: Optional[Path] = typer.Option(
        None, "--cache", help="SQLite judge cache (default: the panel's, else ~/.cache/evalsuite/judges.sqlite)."
    ),
    teacher_queries: Optional[Path] = typer.Option(
        None,
        "--teacher-queries",
        help="Teacher-query JSONL for coverage (default: gold decompositions from the task data).",
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Task data directory, for gold decompositions."),
    teacher_split: Optional[str] = typer.Option(
        None, "--teacher-split", help="Split whose rows carry the decompositions (e.g. dev_ctx for MuSiQue)."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", help="Judge only the first N examples."),
    max_overlap: int = typer.Option(
        1,
        "--novelty-max-overlap",
        help="SmartSearch K: a round is novel if at most K of its documents were seen before.",
    ),
) -> None:
    """Judge a run with an LLM panel: writes judgments.jsonl
    and updates metrics.json (predictions are never rewritten)."""
    from evalsuite.judges.config import load_panel
    from evalsuite.judges.evaluate import JUDGMENTS_FILE, judge_run

    console = out_console()
    names = [m.strip() for m in metrics.split(",") if m.strip()]
    result = judge_run(
        run_dir,
        load_panel(panel),
        names,
        cache_path=cache,
        teacher_file=teacher_queries,
        data_dir=data_dir,
        teacher_split=teacher_split,
        limit=limit,
        max_overlap=max_overlap,
    )
    print_table(_results_table(result.results))
    print_table(_usage_table(result.usage))
    console.print(f"{len(result.judgments)} judgments written to {run_dir / JUDGMENTS_FILE}; metrics.json updated")
    for task, task_results in result.results.items():
        undecided = task_results.get("accuracy", {}).get("n_undecided", 0)
        if undecided:  # judges that answered neither yes nor no (or tied): said once, in one line
            console.print(
                f"{task}: acc_judge has no majority verdict for {undecided} of {task_results['accuracy']['n']} "
                "answers (replies neither yes nor no, or a tie); they score 0, see judgments.jsonl"
            )
    missing = result.missing_message()
    if missing:
        raise EvalsuiteError(
            missing,
            hint="rerun the same command when the judges answer: replies already received are cached and cost nothing",
        )


def register(app: typer.Typer) -> None:
    app.command("judge")(judge_command)
