"""`evalsuite table`: paper-style tables from transcribed paper numbers or from run directories, with significance."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from evalsuite.console import echo_json, out_console, print_table
from evalsuite.errors import EvalsuiteError


def table_command(
    runs: Optional[list[Path]] = typer.Argument(
        None, help="Run directories (from `evalsuite run` or `evalsuite score`)."
    ),
    reported: Optional[str] = typer.Option(
        None, "--reported", help="A transcribed paper table, e.g. progress:table1 (see --list-reported)."
    ),
    list_reported: bool = typer.Option(False, "--list-reported", help="List the transcribed paper tables and exit."),
    fmt: str = typer.Option(
        "terminal",
        "--format",
        "-f",
        help="terminal (Markdown when stdout is not a terminal), markdown, latex, csv or html.",
    ),
    layout: str = typer.Option("compact", "--layout", help="progress-table1, oases-table1 or compact."),
    baseline: Optional[str] = typer.Option(
        None, "--baseline", help="Run name (directory name) or manifest method of the baseline; default the first run."
    ),
    metric: str = typer.Option("em", "--metric", help="Per-example metric: em, cover_em, f1, retrieval_hit, ..."),
    ci: bool = typer.Option(
        False,
        "--ci",
        help=(
            "Show each mean's 95% interval as [low, high] (Wilson for "
            "0/1 metrics, bootstrap otherwise; as in metrics.json)."
        ),
    ),
    differences: bool = typer.Option(
        True,
        "--differences/--no-differences",
        help="Also print the table of paired differences (Δ, CI, test, p, Holm p).",
    ),
    test: str = typer.Option(
        "auto",
        "--test",
        help="auto (McNemar for 0/1 metrics, else randomization), mcnemar, randomization or bootstrap.",
    ),
    resamples: int = typer.Option(10_000, "--resamples", min=100, help="Bootstrap resamples."),
    permutations: int = typer.Option(
        10_000, "--permutations", min=100, help="Permutations of the approximate randomization test."
    ),
    seed: int = typer.Option(12345, "--seed", help="Seed of every resampling."),
    holm_across: str = typer.Option(
        "benchmarks",
        "--holm-across",
        help="Holm's family: benchmarks (of each run), systems (on each benchmark) or all.",
    ),
    mid_p: bool = typer.Option(
        False,
        "--mid-p",
        help=(
            "Mid-p McNemar and randomization tests (ties count half): "
            "not conservative with 0/1 scores on few questions."
        ),
    ),
    emphasis: str = typer.Option("auto", "--emphasis", help="Reported tables: auto, computed, paper or none."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the table(s) to this file instead of printing."
    ),
    stats_json: Optional[Path] = typer.Option(
        None, "--stats-json", help="Write every mean, interval and p-value as JSON."
    ),
    plot_bars: Optional[Path] = typer.Option(None, "--plot-bars", help="Bar chart with CI whiskers (.png or .svg)."),
    plot_forest: Optional[Path] = typer.Option(
        None, "--plot-forest", help="Forest plot of differences from the baseline (.png or .svg)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object: the table(s) (or, with --list-reported, the keys)."
    ),
) -> None:
    """Print a paper-style table from a paper's transcribed numbers (--reported) or from run directories."""
    from evalsuite.tables.render import RENDERERS, render, rich_table

    if fmt not in RENDERERS:
        raise EvalsuiteError(f"unknown format {fmt!r}", hint=f"choose one of {', '.join(RENDERERS)}")
    if list_reported:
        _print_reported_list(as_json)
        return
    if reported and runs:
        raise EvalsuiteError("give either --reported or run directories, not both")
    if not reported and not runs:
        raise EvalsuiteError(
            "nothing to tabulate",
            hint="pass run directories, or --reported progress:table1 (--list-reported lists them)",
        )
    if reported:
        tables = [_reported_table(reported, emphasis)]
    else:
        tables = _run_tables(
            runs or [],
            layout,
            baseline,
            metric,
            ci,
            differences,
            test,
            resamples,
            permutations,
            seed,
            stats_json,
            plot_bars,
            plot_forest,
            holm_across,
            mid_p,
        )
    if as_json:
        echo_json({"tables": [dataclasses.asdict(t) for t in tables]})
    elif output is not None:
        _write(output, "\n".join(render(t, fmt) for t in tables))
        typer.echo(f"wrote {output}", err=True)
    elif fmt == "terminal" and sys.stdout.isatty():
        console = out_console(markup=True)  # rich_table escapes every cell's text
        for table in tables:
            console.print(rich_table(table))
    else:
        # Piped or redirected, the terminal format is Markdown: full width, no cell cut.
        typer.echo("\n".join(render(t, "markdown" if fmt == "terminal" else fmt) for t in tables), nl=False)


def _reported_table(key: str, emphasis: str):
    from evalsuite.reported import load_reported
    from evalsuite.tables.reported_table import table_from_reported

    if emphasis not in ("auto", "computed", "paper", "none"):
        raise EvalsuiteError(f"unknown emphasis {emphasis!r}", hint="choose auto, computed, paper or none")
    return table_from_reported(load_reported(key), emphasis)  # type: ignore[arg-type]


def _run_tables(
    runs,
    layout,
    baseline,
    metric,
    ci,
    differences,
    test,
    resamples,
    permutations,
    seed,
    stats_json,
    plot_bars,
    plot_forest,
    holm_across="benchmarks",
    mid_p=False,
):
    from evalsuite.tables.layouts import build_run_table, differences_table, get_layout
    from evalsuite.tables.sources import load_runs, resolve_baseline

    if test not in ("auto", "mcnemar", "randomization", "bootstrap"):
        raise EvalsuiteError(f"unknown test {test!r}", hint="choose auto, mcnemar, randomization or bootstrap")
    if holm_across not in ("benchmarks", "systems", "all"):
        raise EvalsuiteError(f"unknown --holm-across {holm_across!r}", hint="choose benchmarks, systems or all")
    data = load_runs(runs)
    base = resolve_baseline(data, baseline)
    built = build_run_table(
        data,
        get_layout(layout),
        metric,
        base,
        with_ci=ci,
        test=test,
        n_resamples=resamples,
        n_permutations=permutations,
        seed=seed,
        correction=holm_across,
        mid_p=mid_p,
    )
    order = [r.name for r in data]
    main = built.comparisons.get(metric) or next(iter(built.comparisons.values()))
    tables = [built.table]
    if differences and len(data) > 1:
        tables.append(differences_table(main, order))
    if stats_json is not None:
        _write(stats_json, json.dumps({m: c.to_dict() for m, c in built.comparisons.items()}, indent=2) + "\n")
    if plot_bars is not None:
        from evalsuite.tables.plots import plot_bars as bars

        bars(main, order, plot_bars)
    if plot_forest is not None:
        from evalsuite.tables.plots import plot_forest as forest

        forest(main, plot_forest)
    return tables


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalsuiteError(
            f"cannot write {path}: {exc.strerror or exc}", hint="choose a writable file path"
        ) from None


def reported_summary(caption: str) -> str:
    """A table's caption up to the end of its first sentence: what the table shows."""
    first = caption.strip().split(". ")[0].strip()
    return first if first.endswith(".") else first + "."


def _print_reported_list(as_json: bool) -> None:
    """Each transcribed table: its key (for --reported), the paper and table number, and what it shows."""
    from rich.table import Table

    from evalsuite.reported import list_reported, load_reported

    tables = [load_reported(key) for key in list_reported()]
    if as_json:
        echo_json(
            {
                "reported": [t.key for t in tables],
                "tables": [{"key": t.key, "title": t.citation, "caption": t.caption} for t in tables],
            }
        )
        return
    listing = Table(title="Transcribed paper tables (evalsuite table --reported KEY)")
    listing.add_column("key", no_wrap=True)
    listing.add_column("paper, table", overflow="fold")
    listing.add_column("what it shows", overflow="fold")
    for t in tables:
        listing.add_row(t.key, t.citation, reported_summary(t.caption))
    print_table(listing)


def register(app: typer.Typer) -> None:
    app.command("table")(table_command)
