"""`evalsuite submit` and `evalsuite leaderboard verify|add|build`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from evalsuite.errors import EvalsuiteError

leaderboard_app = typer.Typer(
    help="Verify submissions, file them under leaderboard/entries/ and build the static leaderboard site.",
    no_args_is_help=True,
)


def _parse_splits(values: list[str]) -> dict[str, str]:
    splits: dict[str, str] = {}
    for value in values:
        task, sep, split = value.partition("=")
        if not sep or not task.strip() or not split.strip():
            raise EvalsuiteError(f"--split {value!r} is not TASK=SPLIT", hint="e.g. --split nq=test_sub1000")
        splits[task.strip()] = split.strip()
    return splits


def submit_command(
    runs: list[Path] = typer.Argument(
        ..., help="Run directories to pack (one per task, or multi-task runs).", exists=True, file_okay=False
    ),
    output: Path = typer.Option(..., "-o", "--output", help="Submission directory, or a .tar.gz/.tgz tarball."),
    info_file: Optional[Path] = typer.Option(
        None,
        "--info",
        help="YAML/JSON file with the metadata fields (options below override it).",
        exists=True,
        dir_okay=False,
    ),
    name: Optional[str] = typer.Option(None, "--name", help="Display name of the entry."),
    method: Optional[str] = typer.Option(None, "--method", help="Method name, e.g. Search-R1."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name."),
    model_source: Optional[str] = typer.Option(
        None, "--model-source", help="Where the model comes from (hub id, URL, file hash)."
    ),
    training_data: Optional[str] = typer.Option(None, "--training-data", help="What the model was trained on."),
    training_reward: Optional[str] = typer.Option(
        None, "--training-reward", help="The reward the model was trained with (shown on the entry's card)."
    ),
    compute: Optional[str] = typer.Option(None, "--compute", help="Training/evaluation compute."),
    paper: Optional[str] = typer.Option(None, "--paper", help="Paper link (http/https)."),
    contact: Optional[str] = typer.Option(None, "--contact", help="Contact of the submitter."),
    corpus: Optional[str] = typer.Option(None, "--corpus", help="Retrieval corpus (default: from the run manifest)."),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="Retriever (default: from the run manifest)."),
    topk: Optional[int] = typer.Option(None, "--topk", help="Passages per search (default: from the run manifest)."),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", help="Turn limit (default: from the run manifest)."),
    description: Optional[str] = typer.Option(None, "--description", help="What this entry is, in a sentence or two."),
    split: list[str] = typer.Option(
        [], "--split", help="TASK=SPLIT: the split a task's ids cover in full (e.g. nq=test_sub1000)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output."),
    include_failed: bool = typer.Option(
        False,
        "--include-failed",
        help="Submit runs that hold failed records (declared as such; each scores 0 on every metric).",
    ),
) -> None:
    """Pack run directories with metadata and checksums into a leaderboard submission."""
    from evalsuite.leaderboard.pack import pack_submission, read_info_file, submission_info
    from evalsuite.runs import RunDirectory

    data = read_info_file(info_file) if info_file else {}
    overrides = {
        "name": name,
        "method": method,
        "training_data": training_data,
        "training_reward": training_reward,
        "compute": compute,
        "paper": paper,
        "contact": contact,
        "description": description,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    info = submission_info(
        data,
        RunDirectory(runs[0]).read_manifest(),
        model={"name": model, "source": model_source},
        setting={"corpus": corpus, "retriever": retriever, "topk": topk, "max_turns": max_turns},
    )
    path = pack_submission(
        list(runs), output, info, _parse_splits(split), overwrite=overwrite, include_failed=include_failed
    )
    Console(soft_wrap=True).print(
        f"submission written to {path}; check it with `evalsuite leaderboard verify {path}`",
        highlight=False,
        markup=False,
    )


def _print_report(report, console: Console) -> None:
    status = "[green]ACCEPTED[/]" if report.accepted else "[red]REJECTED[/]"
    console.print(f"{status} {escape(str(report.submission))} ({report.n_files} files)", highlight=False)
    if report.info is not None:
        console.print(
            f"  entry: {report.info.name} · method {report.info.method} · model {report.info.model.name}"
            f" · setting {report.setting_key() if report.meta else report.info.setting.key()}",
            highlight=False,
            markup=False,
        )
    if report.paper_setting is not None:
        console.print(f"  {report.paper_setting.method}: {report.paper_note()}", highlight=False, markup=False)
    if report.accepted:
        console.print(f"  {report.proof_line()}", highlight=False, markup=False)
    from evalsuite.leaderboard.standings import Entry, leaderboard_metrics

    metrics = leaderboard_metrics([Entry("", report.submission, report)])  # a sampled run's avg@K, maj@K, pass@K too
    for name, task in report.tasks.items():
        m = task.summary.metrics
        shown = [(key, label) for key, label in metrics.items() if key in m]
        # The first (headline) metric with its interval, the others as means.
        scores = " ".join(
            f"{label} {m[key].mean:.4f}" + (f" [{m[key].ci_low:.4f}, {m[key].ci_high:.4f}]" if i == 0 else "")
            for i, (key, label) in enumerate(shown)
        )
        console.print(
            f"  {name}/{task.split}: n={task.summary.n} {scores} (recomputed against {Path(task.data_source).name})",
            highlight=False,
            markup=False,
        )
    lines = report.problem_lines()
    if lines:
        console.print(f"  {len(report.problems) + sum(report.omitted.values())} problems:", highlight=False)
        for line in lines:
            console.print(f"    {line}", highlight=False, markup=False)


def verify_command(
    submission: Path = typer.Argument(..., help="Submission directory or .tar.gz."),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="Task data directory (default: $EVALSUITE_DATA_DIR, then the hub)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check a submission and recompute every score against the registry's gold answers; exit 1 if rejected."""
    from evalsuite.leaderboard.verify import verify_submission

    report = verify_submission(submission, data_dir)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        _print_report(report, Console(soft_wrap=True))
    if not report.accepted:
        raise typer.Exit(1)


def add_command(
    submission: Path = typer.Argument(..., help="Submission directory or .tar.gz."),
    leaderboard: Path = typer.Option(
        Path("leaderboard"), "--leaderboard", help="The leaderboard folder to file it in (entries/<entry-id>/)."
    ),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="Task data directory (default: $EVALSUITE_DATA_DIR)."
    ),
    entry: Optional[str] = typer.Option(None, "--id", help="Entry id (default: a slug of the entry's name)."),
    replace: bool = typer.Option(False, "--overwrite", help="Replace an existing entry with the same id."),
) -> None:
    """Verify a submission and file it under leaderboard/entries/<entry-id>/."""
    from evalsuite.leaderboard.results import add_submission

    target, report = add_submission(submission, leaderboard, data_dir, entry, replace)
    console = Console(soft_wrap=True)
    _print_report(report, console)
    console.print(f"filed under {target}", highlight=False, markup=False)


def build_command(
    output: Path = typer.Option(..., "-o", "--output", help="Directory that receives the static site."),
    leaderboard: Optional[Path] = typer.Option(
        None,
        "--leaderboard",
        help=(
            "The leaderboard folder (entries/, site.yaml); default ./leaderboard, else the one shipped with evalsuite."
        ),
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Task data directory for re-verification (default: $EVALSUITE_DATA_DIR, then the download cache).",
    ),
    page_size: Optional[int] = typer.Option(
        None, "--page-size", help="Examples per page of the trajectory browser (default: site.yaml's page_size).", min=1
    ),
) -> None:
    """Build the static leaderboard site: every entry is re-verified
    and rescored first; paper tables come from evalsuite."""
    from evalsuite.leaderboard.site import build_site

    summary = build_site(leaderboard, output, data_dir=data_dir, page_size=page_size)
    console = Console(soft_wrap=True)
    for note in summary.notes:
        console.print(f"warning: {note}", highlight=False, markup=False)
    console.print(f"site written to {output}: {summary}", highlight=False, markup=False)


leaderboard_app.command("verify")(verify_command)
leaderboard_app.command("add")(add_command)
leaderboard_app.command("build")(build_command)


def register(app: typer.Typer) -> None:
    app.command("submit")(submit_command)
    app.add_typer(leaderboard_app, name="leaderboard")
