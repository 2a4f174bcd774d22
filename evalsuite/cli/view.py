"""`evalsuite view RUN [RUN…]`: a static page of every example of one or more runs, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from evalsuite.console import err_console, out_console


def view_command_line(*runs: Path | str) -> str:
    """The command that opens the viewer on `runs`, as `run` and `score` print it."""
    import shlex

    return "evalsuite view " + " ".join(shlex.quote(str(r)) for r in runs) + " --open"


def view_command(
    runs: list[Path] = typer.Argument(
        ..., help="Run directories (from `evalsuite run` or `evalsuite score`); two or more are shown side by side."
    ),
    out: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Folder for the page (default: one in the cache, named after the runs)."
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
    page_size: int = typer.Option(200, "--page-size", help="Questions per page; a larger run is split into pages."),
) -> None:
    """Write a static page of every example (question, golds, prediction, metrics, turns with their queries and
    passages, protocol errors) with filters; several runs are shown side by side on each question."""
    from evalsuite.errors import require
    from evalsuite.leaderboard.viewer import build_view

    # named for this command (its page uses the site's templates; [demo] and [site] both bring jinja2)
    require("jinja2", "site", "writing the page of a run's examples (evalsuite view)")
    page = build_view(list(runs), out, page_size)
    for note in page.notes:
        err_console().print(f"note: {note}")
    pages = f" on {page.pages} pages" if page.pages > 1 else ""
    out_console().print(
        f"{page.questions} questions from {len(page.runs)} run(s){pages}: {page.index.resolve().as_uri()}"
    )
    if open_browser:
        import webbrowser

        webbrowser.open(page.index.resolve().as_uri())


def register(app: typer.Typer) -> None:
    app.command("view")(view_command)
